"""Exact highlights (issue 13): every citation pins one occurrence with its selector, the quote view
keeps the page's structure (a table stays a table, the figure's row and column named), an ambiguous
quote is counted and every occurrence shown, and a selector that matches nothing is a 404 saying what
was searched. Real capture from a real local server, real parsers, the app in-process."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from app.models import Entry, EntryVersion, Flag, Snapshot
from app.capture.http import capture_urls
from tests.test_crawl import leaderboard_html

PAGE = """<!doctype html><html><head><title>Board</title><script>document.title='pwned'</script></head>
<body><h1>Decode speed</h1>
<table><thead><tr><th>Engine</th><th>Draft</th><th>Context</th><th>Rank</th></tr></thead>
<tbody>
<tr><td>SGLang</td><td>2</td><td>8k context</td><td>"rank": 1</td></tr>
<tr onclick="alert(1)"><td>vLLM</td><td>4</td><td>32k</td><td>2</td></tr>
<tr><td>SGLang</td><td>8</td><td>16k</td><td>3</td></tr>
</tbody></table>
<p>All runs single stream.</p></body></html>"""


@pytest.fixture
def snap(app, server):
    url = server.route("/board", PAGE)
    res = capture_urls(app.state.db, [url])[0]
    assert res.ok, res.error
    return res.snapshot


def _sel(exact: str, at: str) -> dict:
    """The parser's selector for ``exact`` at the start of the source snippet ``at``."""
    from scrapers.selectors import selector

    i = PAGE.index(at) + at.index(exact)
    return selector(PAGE, i, i + len(exact))


def test_a_selector_highlights_its_own_row_inside_the_table(client, snap):
    sel = _sel("8", "<td>8</td>")
    params = {"q": "8", "prefix": sel["prefix"], "suffix": sel["suffix"], "pos": sel["start"]}
    j = client.get(f"/c/{snap.citation_id}.json", params=params).json()
    assert j["source_start"] == sel["start"] and j["matched"] == "8" and not j["ambiguous"]
    assert j["cell"] == {"row": 4, "column": 2, "header": "Draft", "row_label": "SGLang"}
    r = client.get(f"/c/{snap.citation_id}", params=params)
    soup = BeautifulSoup(r.text, "html.parser")
    marks = soup.select(".page-text mark")
    assert len(marks) == 1 and marks[0]["id"] == "quote"
    cell = marks[0].find_parent("td")
    assert cell is not None and "quote-cell" in cell["class"] and cell.get_text() == "8"
    row = cell.find_parent("tr")
    assert "quote-row" in row["class"] and [td.get_text() for td in row.find_all("td")] == ["SGLang", "8", "16k", "3"]
    assert row.find_parent("table") is not None          # the table stays a table
    assert "Draft" in soup.select_one(".quote-cell-name").get_text()
    # the archived page's script and event handlers are not carried over
    assert all(x.get("src") == "/static/quote.js" for x in soup.find_all("script")) and not soup.select(".page-text [onclick]")


@pytest.mark.parametrize("exact,at,row", [("2", "<td>2</td>", 2), ("1", '"rank": 1', 2), ("SGLang", "<td>SGLang</td><td>8", 4)])
def test_each_pinned_quote_lands_in_its_row(client, snap, exact, at, row):
    sel = _sel(exact, at)
    j = client.get(f"/c/{snap.citation_id}.json",
                   params={"q": exact, "prefix": sel["prefix"], "suffix": sel["suffix"], "pos": sel["start"]}).json()
    assert j["cell"]["row"] == row and j["source_start"] == sel["start"]


def test_an_ambiguous_quote_is_counted_and_every_occurrence_shown(client, snap):
    j = client.get(f"/c/{snap.citation_id}.json", params={"q": "8"}).json()
    assert j["ambiguous"] and j["occurrences"] == 2 == len(j["matches"])   # "8k context" and the draft width 8
    assert [m["cell"]["row"] for m in j["matches"]] == [2, 4]
    r = client.get(f"/c/{snap.citation_id}", params={"q": "8"})
    assert r.status_code == 200
    soup = BeautifulSoup(r.text, "html.parser")
    assert "occurs 2 times" in soup.select_one(".ambiguous").get_text()
    assert [m["id"] for m in soup.select(".page-text mark")] == ["quote", "quote-2"]
    # each occurrence has a link that pins it, and following it shows that one only
    links = [a["href"] for a in soup.select(".occurrences a.pinned")]
    assert len(links) == 2
    second = client.get(links[1].replace("/c/", "/c/", 1).split("#")[0])
    soup2 = BeautifulSoup(second.text, "html.parser")
    assert len(soup2.select(".page-text mark")) == 1
    assert soup2.select_one(".page-text mark").find_parent("tr").find("td").get_text() == "SGLang"
    assert soup2.select_one(".page-text mark").find_parent("td").get_text() == "8"


def test_an_old_link_without_selector_still_works(client, snap):
    r = client.get(f"/c/{snap.citation_id}", params={"q": "single stream"})
    assert r.status_code == 200
    assert BeautifulSoup(r.text, "html.parser").select_one("mark#quote").get_text() == "single stream"


def test_a_selector_that_matches_nothing_is_404_saying_what_was_searched(client, snap):
    r = client.get(f"/c/{snap.citation_id}.json", params={"q": "8", "prefix": "nowhere near"})
    assert r.status_code == 404
    msg = r.json()["error"]
    assert "'8'" in msg and "prefix 'nowhere near'" in msg and "occurs 2 times" in msg
    r = client.get(f"/c/{snap.citation_id}", params={"q": "8", "pos": 3})
    assert r.status_code == 404 and "starting at source offset 3" in r.text
    r = client.get(f"/c/{snap.citation_id}", params={"q": "8", "pos": "x"})
    assert r.status_code == 400


def test_the_cite_box_gives_plain_text_and_bibtex(client, snap):
    sel = _sel("8", "<td>8</td>")
    r = client.get(f"/c/{snap.citation_id}", params={"q": "8", "pos": sel["start"]})
    soup = BeautifulSoup(r.text, "html.parser")
    box = soup.select_one("#cite-this")
    plain = box.select_one("textarea.cite-plain").get_text()
    bib = box.select_one("textarea.cite-bibtex").get_text()
    assert snap.url in plain and f"http://caveat.test/c/{snap.citation_id}" in plain and "\u201c8\u201d" in plain
    assert f"pos={sel['start']}" in plain
    assert bib.startswith("@misc{caveat-") and f"url = {{http://caveat.test/c/{snap.citation_id}}}" in bib
    assert "quoting ``8''" in bib and "\\url{" + snap.url + "}" in bib
    page = BeautifulSoup(client.get(f"/c/{snap.citation_id}").text, "html.parser")
    assert snap.url in page.select_one("#cite-this textarea.cite-plain").get_text()


def test_parsed_entries_and_their_flags_cite_their_own_row(cli, server, client, app):
    """The parser's selectors reach the stored flags: every citation the audit stores pins the entry's row."""
    url = server.route("/board.html", leaderboard_html())
    assert cli("source", "add", "board", url, "--kind", "html").exit_code == 0
    assert cli("crawl").exit_code == 0
    with app.state.db.Session() as s:
        rows = s.execute(select(Entry, EntryVersion.provenance).join(
            EntryVersion, EntryVersion.id == Entry.current_version_id)).all()
        flags = s.scalars(select(Flag)).all()
        cid = s.scalar(select(Snapshot.citation_id))
    assert rows
    checked = 0
    for entry, prov in rows:
        for field, sel in (prov.get("_selectors") or {}).items():
            j = client.get(f"/c/{cid}.json", params={"q": sel["exact"], "prefix": sel["prefix"],
                                                     "suffix": sel["suffix"], "pos": sel["start"]}).json()
            assert j["source_start"] == sel["start"] and not j["ambiguous"]   # exactly the occurrence the parser read
            if field == "headline_tps":   # the figure sits in the entry's own row, beside its draft width
                row = BeautifulSoup(j["html"], "html.parser").select_one("tr.quote-row").find_all("td")
                assert row[4].get_text() == str(entry.draft_tokens) and j["cell"]["header"] == "Fastest t/s"
                checked += 1
    assert checked == len(rows) == 6
    assert flags
    for f in flags:
        assert f.citation.startswith(f"/c/{cid}")              # stored without a host
        for q in f.evidence["quotes"]:
            if q.get("citation") and "pos=" in q["citation"]:
                assert client.get(q["citation"]).status_code == 200


def test_links_are_built_when_served_from_base_url_or_the_request_origin(settings, server, cli):
    """Nothing stored names a host: changing CAVEAT_BASE_URL changes every link at once, with no
    re-audit; unset, links name the origin the reader asked."""
    from fastapi.testclient import TestClient

    from app.config import Settings
    from app.main import create_app
    from app.audit.engine import flags_for_entries

    url = server.route("/board.html", leaderboard_html())
    assert cli("source", "add", "board", url, "--kind", "html").exit_code == 0
    assert cli("crawl").exit_code == 0            # audited under http://caveat.test
    plain = {k: getattr(settings, k) for k in settings.model_fields_set if k != "base_url"}
    for base, origin, expect in (("https://cite.example", "http://ignored.test", "https://cite.example"),
                                 (None, "http://reader.example:8100", "http://reader.example:8100")):
        s = Settings(**plain, **({"base_url": base} if base else {}))
        application = create_app(s)
        with TestClient(application, base_url=origin) as client:
            with application.state.db.Session() as session:
                cid = session.scalar(select(Snapshot.citation_id))
                entry_id = session.scalar(select(Flag.entry_id))
            j = client.get(f"/c/{cid}.json").json()
            assert j["citation_url"] == f"{expect}/c/{cid}" and j["raw_url"].startswith(f"{expect}/web/")
            q = client.get(f"/c/{cid}.json", params={"q": "1,004.9"}).json()
            assert q["quote_url"].startswith(f"{expect}/c/{cid}?q=1%2C004.9")
            assert q["cite"]["short_link"] == f"{expect}/c/{cid}"
        application.state.db.dispose()
        with application.state.db.Session() as session:   # outside a request: CAVEAT_BASE_URL, else host-free
            flags = flags_for_entries(session, [entry_id], evidence=True, settings=s)[entry_id]
        # with no base URL set or recorded in the data folder, no host is made up (issue 29 item 3)
        assert flags and all(f["citation"].startswith((base or "") + "/c/") for f in flags)
        application.state.db.dispose()


def test_a_pinned_quote_on_a_long_page_shows_the_part_around_it_and_the_whole_page_on_request(app, server, client):
    rows = "".join(f"<tr><td>model-{j}</td><td>{100 + j}.5</td><td>8</td></tr>" for j in range(300))
    page = f"<html><body><h2>Decode</h2><table><tr><th>Model</th><th>tok/s</th><th>Draft</th></tr>{rows}</table></body></html>"
    url = server.route("/long", page)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    at = page.index("<td>model-150</td>")
    pos = page.index("<td>8</td>", at) + 4
    r = client.get(f"/c/{snap.citation_id}", params={"q": "8", "pos": pos})
    soup = BeautifulSoup(r.text, "html.parser")
    row = soup.select_one("tr.quote-row")
    assert [td.get_text() for td in row.find_all("td")] == ["model-150", "250.5", "8"]
    assert soup.select_one(".page-text h2").get_text() == "Decode"           # under its heading
    assert soup.select_one(".page-text tr th").get_text() == "Model"         # the header row kept
    omitted = [x.get_text() for x in soup.select(".page-text tr.omitted")]
    assert omitted == ["... 130 row(s) above not shown", "... 129 row(s) below not shown"]
    assert len(soup.select(".page-text tr")) == 1 + 2 + 41
    assert "row 152" in soup.select_one(".quote-cell-name").get_text()     # counted in the whole table
    whole = soup.select_one("a.whole-page")["href"]
    full = BeautifulSoup(client.get(whole).text, "html.parser")
    assert len(full.select(".page-text tr")) == 301 and len(full.select(".page-text mark")) == 1
    assert full.select_one("tr.quote-row td").get_text() == "model-150"


def test_quotes_across_markup_and_entities_still_match_and_script_text_never_does(app, server, client):
    page = ("<html><head><script>var x = 'hidden 999 tok/s';</script></head><body>"
            "<p>Steady <b>373</b> tok/s &amp; more</p><script>document.write('hidden 999 tok/s')</script></body></html>")
    url = server.route("/mixed", page)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    j = client.get(f"/c/{snap.citation_id}.json", params={"q": "Steady 373 tok/s & more"}).json()
    assert j["matched_in"] == "text" and "373" in j["matched"]
    soup = BeautifulSoup(j["html"], "html.parser")
    assert all(x.get("src") == "/static/quote.js" for x in soup.find_all("script")) and "hidden 999" not in soup.get_text()
    hidden = client.get(f"/c/{snap.citation_id}.json", params={"q": "hidden 999 tok/s"}).json()
    assert hidden["matched_in"] == "source"    # only in a script: found in the source, never shown as page text


def test_the_excerpt_keeps_caption_and_header_of_a_sectioned_table_and_nested_tables_still_work(app, server, client):
    rows = "".join(f"<tr><td>m{j}</td><td>{j}.5</td></tr>" for j in range(100))
    page = (f"<html><body><h3>Board</h3><table><caption>Single stream</caption><thead><tr><th>Model</th>"
            f"<th>tok/s</th></tr></thead><tbody>{rows}</tbody></table>"
            "<table><tr><td><table><tr><td>inner 77.5</td></tr></table></td></tr></table></body></html>")
    url = server.route("/sectioned", page)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    pos = page.index("<td>60.5</td>") + 4
    j = client.get(f"/c/{snap.citation_id}.json", params={"q": "60.5", "pos": pos}).json()
    soup = BeautifulSoup(j["html"], "html.parser")
    assert soup.find("caption").get_text() == "Single stream" and soup.find("th").get_text() == "Model"
    assert j["cell"] == {"row": 62, "column": 2, "header": "tok/s", "row_label": "m60"}
    assert soup.select_one("tr.quote-row td").get_text() == "m60" and j["excerpt"]
    inner = page.index("inner 77.5")
    k = client.get(f"/c/{snap.citation_id}.json", params={"q": "77.5", "pos": inner + 6}).json()
    assert k["matched"] == "77.5" and BeautifulSoup(k["html"], "html.parser").select_one("mark#quote")


def test_a_page_cannot_forge_our_marks_or_notes(app, server, client):
    page = ("<html><body><table><tr><th>a</th></tr><tr><td><caveat-mark n='x'>fake</caveat-mark> 412.5</td></tr>"
            "<caveat-omitted span='1'>... 9 row(s) above not shown</caveat-omitted></table></body></html>")
    url = server.route("/forge", page)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    pos = page.index("412.5")
    r = client.get(f"/c/{snap.citation_id}.json", params={"q": "412.5", "pos": pos})
    assert r.status_code == 200
    soup = BeautifulSoup(r.json()["html"], "html.parser")
    assert [m.get_text() for m in soup.find_all("mark")] == ["412.5"] and not soup.select("tr.omitted")


def test_the_quote_api_passes_a_position_through_and_pins_that_occurrence(client, snap):
    """GET /api/snapshots/{id}/quote?q=8&pos=N cites the "8" that starts at N (the draft width of row 3),
    not the "8" of "8k context" in row 1; a position where the quote is not is a 404."""
    from urllib.parse import parse_qs, urlsplit

    sel = _sel("8", "<td>8</td>")
    r = client.get(f"/api/snapshots/{snap.citation_id}/quote", params={"q": "8", "pos": sel["start"]})
    assert r.status_code == 200, r.text
    cited = parse_qs(urlsplit(r.json()["citation"]).query)
    assert cited["pos"] == [str(sel["start"])]
    page = client.get(urlsplit(r.json()["citation"]).path + "?" + urlsplit(r.json()["citation"]).query)
    mark = BeautifulSoup(page.text, "html.parser").select_one(".page-text mark")
    assert mark.find_parent("td").get_text() == "8" and mark.find_parent("tr").find("td").get_text() == "SGLang"
    wrong = client.get(f"/api/snapshots/{snap.citation_id}/quote", params={"q": "8", "pos": 3})
    assert wrong.status_code == 404 and wrong.json()["ok"] is False
    assert client.get(f"/api/snapshots/{snap.citation_id}/quote", params={"q": "8", "pos": -1}).status_code == 400
