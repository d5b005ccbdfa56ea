"""The reviewer's correction pages (issue 27): the entry page's correction form (every field with its
provenance and history, a hidden version: stale -> 409 with the current state, CSRF), reject; the
archived page view with every figure marked and the add form at a figure's position; "every figure
checked" (a correction event in the WARC files, restored by reindex); the citation of a corrected figure
saying what was corrected, by whom, when and why, beside the reader's reading."""

from __future__ import annotations

import json

from bs4 import BeautifulSoup
from sqlalchemy import select

from app.models import Correction, Entry, EntryVersion, Snapshot
from app.rebuild.reindex import reindex_all
from tests.test_corrections import BOARD, _entry, _live, _setup
from tests.test_csrf import _login
from tests.test_reindex import _lose_database


def _csrf(html: str) -> str:
    return BeautifulSoup(html, "html.parser").find("input", attrs={"name": "csrf_token"})["value"]


def _form_values(soup, form_id: str) -> dict:
    form = soup.find("form", id=form_id)
    out = {}
    for el in form.find_all(["input", "textarea", "select"]):
        if el.name == "select":
            opt = el.find("option", selected=True)
            out[el["name"]] = opt["value"] if opt else ""
        else:
            out[el["name"]] = el.get("value", "") if el.name == "input" else el.text
    return out


def _cid(db) -> str:
    with db.Session() as s:
        return s.scalar(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None)))


def test_entry_page_fix_stale_reject_and_history(cli, server, client, app):
    _setup(cli, server)
    db = app.state.db
    llama = _entry(db, "Llama-3-8B")
    page = client.get(f"/entries/{llama.id}")
    assert page.status_code == 200
    assert BeautifulSoup(page.text, "html.parser").find("form", id="correct-form") is None   # signed out: no form
    assert "Sign in</a> to correct" in page.text
    _login(client, app)
    soup = BeautifulSoup(client.get(f"/entries/{llama.id}").text, "html.parser")
    form = soup.find("form", id="correct-form")
    names = [el["name"] for el in form.find_all(["input", "select"]) if el.get("type") != "hidden"]
    assert names == ["model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase", "scope",
                     "concurrency", "test", "draft_tokens", "spec_method", "steady_low", "steady_high", "prompt"]
    row = form.find("tr", attrs={"data-field": "model"})
    assert row.find(class_="provenance-badge")["data-source"] == "parser"
    values = _form_values(soup, "correct-form")
    assert values["model"] == "Llama-3-8B" and values["version"]
    stale_values = dict(values)
    # without the CSRF token: refused, nothing stored
    r = client.post(f"/entries/{llama.id}/correct", data={**values, "csrf_token": "", "model": "X", "why": "x",
                                                          "action": "fix"})
    assert r.status_code == 403
    with db.Session() as s:
        assert s.scalars(select(Correction)).all() == []
    # a fix: only the changed field is corrected
    r = client.post(f"/entries/{llama.id}/correct", data={**values, "model": "Llama-3.1-8B", "why": "the title says 3.1",
                                                          "action": "fix"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(f"/entries/{llama.id}?corrected=")
    with db.Session() as s:
        rows = s.scalars(select(Correction)).all()
        assert [(c.kind, c.fields, c.actor) for c in rows] == [("fix", {"model": "Llama-3.1-8B"}, "rev")]
    page = client.get(r.headers["location"])
    soup = BeautifulSoup(page.text, "html.parser")
    row = soup.find("form", id="correct-form").find("tr", attrs={"data-field": "model"})
    assert row.find(class_="provenance-badge")["data-source"] == "reviewer" and "was Llama-3-8B" in row.text
    assert "the title says 3.1" in row.find("details", class_="field-history").text
    assert soup.find("form", id="correct-form").find("tr", attrs={"data-field": "hardware"}) \
        .find(class_="provenance-badge")["data-source"] == "parser"
    hist = soup.find("ol", class_="correction-history").text
    assert "rev" in hist and "the title says 3.1" in hist
    # the JSON twin has the same form rows
    twin = client.get(f"/entries/{llama.id}.json").json()
    form_rows = {f["name"]: f for f in twin["correction_form"]}
    assert form_rows["model"]["source"] == "reviewer" and form_rows["model"]["value"] == "Llama-3.1-8B"
    assert form_rows["model"]["history"][0]["by"] == "rev" and form_rows["engine"]["source"] == "parser"
    # a second reviewer's stale form: 409 with the current state, nothing stored
    r = client.post(f"/entries/{llama.id}/correct", data={**stale_values, "model": "Other", "why": "late",
                                                          "action": "fix"})
    assert r.status_code == 409
    soup = BeautifulSoup(r.text, "html.parser")
    problem = soup.find(id="correction-problem")
    assert problem is not None and "someone corrected this entry" in problem.text
    assert "Llama-3.1-8B" in problem.find("table", class_="conflict").text and "Other" in problem.text
    assert _form_values(soup, "correct-form")["model"] == "Llama-3.1-8B"
    with db.Session() as s:
        assert len(s.scalars(select(Correction)).all()) == 1
    # a wrong type: 400 shown on the page, nothing stored
    current = _form_values(BeautifulSoup(client.get(f"/entries/{llama.id}").text, "html.parser"), "correct-form")
    r = client.post(f"/entries/{llama.id}/correct", data={**current, "gpu_count": "two", "why": "x", "action": "fix"})
    assert r.status_code == 400 and "gpu_count" in BeautifulSoup(r.text, "html.parser").find(id="correction-problem").text
    # reject (not a claim), with a reason
    qwen = _entry(db, "Qwen3-32B")
    soup = BeautifulSoup(client.get(f"/entries/{qwen.id}").text, "html.parser")
    rv = _form_values(soup, "reject-form")
    assert rv["action"] == "reject"
    r = client.post(f"/entries/{qwen.id}/correct", data={**rv, "why": "a vendor ad"}, follow_redirects=False)
    assert r.status_code == 303
    page = client.get(f"/entries/{qwen.id}")
    assert "Rejected as not a claim by" in page.text and "a vendor ad" in page.text
    assert ("Qwen3-32B", 88.0) not in _live(db)


NOTES = BOARD + """
## Notes

Our tok/s logs: 61.0 before the upgrade, 95.5 after it.
"""


def test_archived_page_view_marks_figures_and_adds_one(cli, server, client, app):
    url = server.route("/board.md", NOTES, content_type="text/markdown")
    assert cli("source", "add", "board", url, "--kind", "markdown").exit_code == 0
    assert cli("crawl").exit_code == 0
    db = app.state.db
    cid = _cid(db)
    page = client.get(f"/c/{cid}/review")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    soup = BeautifulSoup(page.text, "html.parser")
    marks = soup.select("#archived-page mark.fig")
    by_text = {}
    for m in marks:
        by_text.setdefault(m.text, []).append(m)
    assert [m["class"][1] for m in by_text["120.5"]] == ["fig-read"]
    assert [m["class"][1] for m in by_text["140.2"]] == ["fig-plain", "fig-plain"]   # no tok/s words near
    assert [m["class"][1] for m in by_text["95.5"]] == ["fig-unread"]                 # seen, not read
    assert by_text["95.5"][0].get("tabindex") == "0" and by_text["140.2"][0].get("tabindex") is None
    # every script on the page is the app's own file; the page's data is a JSON block, never run
    scripts = soup.find_all("script")
    assert all(s.get("src", "").startswith("/static/") or s.get("type") == "application/json" for s in scripts)
    data = client.get(f"/c/{cid}/review.json").json()
    assert data.get("counts"), data
    assert data["counts"]["unread"] == 2 and data["counts"]["read"] == 2
    figs = [f for f in data["figures"] if f["exact"] == "140.2"]
    assert NOTES[figs[0]["start"]:figs[0]["end"]] == "140.2"   # the position in the decoded text
    unread = next(f for f in data["figures"] if f["exact"] == "95.5")
    assert unread["guess"]["_from"] and unread["guess"]["model"] == "Qwen3-32B"   # the nearest entry's reading
    # signed in: the add form, a mark-checked form
    _login(client, app)
    soup = BeautifulSoup(client.get(f"/c/{cid}/review").text, "html.parser")
    assert soup.find("form", id="add-form") is not None and soup.find("form", id="checked-form") is not None
    token = _csrf(str(soup))
    # a position that is not a number: 400, nothing stored
    word = NOTES.index("Footnote")
    r = client.post(f"/c/{cid}/entries", data={"csrf_token": token, "start": word, "end": word + 8, "why": "x"})
    assert r.status_code == 400 and "not a number" in r.text
    # without CSRF: refused
    r = client.post(f"/c/{cid}/entries", data={"start": figs[0]["start"], "end": figs[0]["end"], "why": "x"})
    assert r.status_code == 403
    with db.Session() as s:
        assert s.scalars(select(Correction)).all() == []
    r = client.post(f"/c/{cid}/entries", data={"csrf_token": token, "start": figs[0]["start"], "end": figs[0]["end"],
                                               "model": "Mistral-7B", "hardware": "A100", "why": "the footnote"},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    assert ("Mistral-7B", 140.2) in _live(db)
    with db.Session() as s:
        c = s.scalar(select(Correction).where(Correction.kind == "add"))
        assert c.selector["start"] == figs[0]["start"] and c.selector["exact"] == "140.2"
    data = client.get(f"/c/{cid}/review.json").json()
    assert [f["status"] for f in data["figures"] if f["exact"] == "140.2"] == ["read", "plain"]


def test_checked_is_kept_in_the_warc_and_shown(cli, server, client, app):
    _setup(cli, server)
    db = app.state.db
    cid = _cid(db)
    _login(client, app)
    token = _csrf(client.get(f"/c/{cid}/review").text)
    r = client.post(f"/c/{cid}/checked", data={"why": "read every row"})
    assert r.status_code == 403
    r = client.post(f"/c/{cid}/checked", data={"csrf_token": token, "why": ""})
    assert r.status_code == 400
    r = client.post(f"/c/{cid}/checked", data={"csrf_token": token, "why": "read every row and the footnote"},
                    follow_redirects=False)
    assert r.status_code == 303
    soup = BeautifulSoup(client.get(f"/c/{cid}/review").text, "html.parser")
    assert "Every figure checked" in soup.find(id="checked-title").text
    assert "read every row and the footnote" in soup.find(id="checked").text
    citation = BeautifulSoup(client.get(f"/c/{cid}").text, "html.parser")
    assert "Every figure checked" in citation.find(id="checked-title").text
    assert client.get(f"/c/{cid}/review.json").json()["checked"][0]["by"] == "rev"
    before = _live(db)
    db.dispose()
    fresh = _lose_database(db)
    reindex_all(fresh)
    with fresh.Session() as s:
        rows = s.scalars(select(Correction).where(Correction.kind == "checked")).all()
        assert [(c.citation_id, c.actor, c.reason) for c in rows] == [(cid, "rev", "read every row and the footnote")]
    assert _live(fresh) == before   # a checked mark changes no entry


def test_citation_of_a_corrected_figure_says_so(cli, server, client, app):
    _setup(cli, server)
    db = app.state.db
    llama = _entry(db, "Llama-3-8B")
    _login(client, app)
    soup = BeautifulSoup(client.get(f"/entries/{llama.id}").text, "html.parser")
    values = _form_values(soup, "correct-form")
    r = client.post(f"/entries/{llama.id}/correct", data={**values, "model": "Llama-3.1-8B", "gpu_count": "2",
                                                          "why": "the page title says 3.1 on two cards",
                                                          "action": "fix"}, follow_redirects=False)
    assert r.status_code == 303
    entry = client.get(f"/api/entries/{llama.id}").json()
    cite = entry["citation"]
    path = cite[cite.index("/c/"):]
    page = client.get(path)
    assert page.status_code == 200
    section = BeautifulSoup(page.text, "html.parser").find(id="corrected-reading")
    assert section is not None and "rev" in section.text and "the page title says 3.1 on two cards" in section.text
    row = section.find("tr", attrs={"data-field": "model"})
    assert row.find(class_="original").text == "Llama-3-8B" and row.find(class_="corrected").text == "Llama-3.1-8B"
    assert section.find("tr", attrs={"data-field": "gpu_count"}).find(class_="corrected").text == "2"
    twin = client.get(path.replace(f"/c/{entry['snapshot']}", f"/c/{entry['snapshot']}.json")).json()
    assert twin["corrections"][0]["by"] == "rev" and twin["corrections"][0]["at"]
    # an uncorrected figure's citation says nothing of the kind
    qwen = client.get(f"/api/entries/{_entry(db, 'Qwen3-32B').id}").json()
    other = client.get(qwen["citation"][qwen["citation"].index("/c/"):])
    assert BeautifulSoup(other.text, "html.parser").find(id="corrected-reading") is None
    assert json.dumps(twin)  # the twin is plain JSON


def test_figure_marks_on_hostile_html_are_inert_and_pinned_to_the_source():
    from archive import quoteview

    source = ('<html><head><script>alert(1)</script></head><body onload="steal()">'
              '<table><tr><th>Model</th><th>tok/s</th></tr><tr><td>Llama-3-8B</td><td>120.5</td></tr>'
              '<tr><td colspan="2"><img src=x onerror="steal()">48.3 tok/s <a href="javascript:x()">link</a></td></tr>'
              '</table></body></html>')
    doc = quoteview.build(source, "html")
    marks = []
    for exact in ("120.5", "48.3"):
        occ = doc.occurrences(exact)[0]
        marks.append(occ)
    html = doc.render_figures(marks, ["read", "unread"], [m.source_start for m in marks])
    soup = BeautifulSoup(html, "html.parser")
    figs = soup.find_all("mark", class_="fig")
    assert [f.text for f in figs] == ["120.5", "48.3"]
    for f in figs:
        assert source[int(f["data-start"]):int(f["data-end"])] == f.text   # the decoded source's offsets
    assert figs[1].get("tabindex") == "0" and figs[0].get("tabindex") is None
    assert soup.find("td", colspan="2") is not None                        # the structure stays
    assert not soup.find_all(["script", "img", "a"]) and "onload" not in html and "onerror" not in html
    assert "javascript:" not in html and "alert(1)" not in html


def test_a_cell_under_a_tok_s_column_that_no_entry_reads_is_marked_unread():
    from app.pages.review import _layout

    rows = "".join(f"<tr><td>Model-{i}</td><td>{i}</td><td>{100 + i}.5</td></tr>" for i in range(40))
    source = f"<table><tr><th>Model</th><th>GPUs</th><th>Decode tok/s</th></tr>{rows}</table>"
    doc, figs = _layout(source, "html")
    near = {source[s0:s1]: flag for _t0, _t1, s0, s1, flag in figs}
    assert near["139.5"] is True             # the last row, far from the header's words: its column says tok/s
    assert near["39"] is False               # the GPUs column does not
    assert len(figs) == 80                   # two per row: "Model-7" is a name, not a figure


def test_a_later_capture_marks_the_figures_its_unchanged_entries_read(cli, server, client, app):
    """An entry unchanged by a new capture keeps the version of the capture that first read it; the newer
    capture's archived page view still marks its figure as read (found by its quote selector)."""
    url = server.route("/board.md", BOARD, content_type="text/markdown")
    assert cli("source", "add", "board", url, "--kind", "markdown").exit_code == 0
    assert cli("crawl").exit_code == 0
    server.route("/board.md", "\n" + BOARD + "\n", content_type="text/markdown")   # new bytes, the same claims
    assert cli("crawl").exit_code == 0
    db = app.state.db
    with db.Session() as s:
        cids = list(s.scalars(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None))
                              .order_by(Snapshot.timestamp, Snapshot.id)))
    assert len(cids) == 2
    with db.Session() as s:   # the entries' current versions were read from the first capture
        read_from = set(s.scalars(select(Snapshot.citation_id).join(EntryVersion, EntryVersion.snapshot_id == Snapshot.id)
                                  .join(Entry, Entry.current_version_id == EntryVersion.id)))
    assert read_from == {cids[0]}
    for cid in cids:
        data = client.get(f"/c/{cid}/review.json").json()
        read = sorted(f["exact"] for f in data["figures"] if f["status"] == "read")
        assert read == ["120.5", "88.0"], (cid, read)


def test_selector_at_names_one_occurrence_even_among_repeated_rows():
    import pytest

    from app.claims.corrections import matches, selector_at
    from app.errors import BadRequest

    row = "| Llama-3-8B | RTX 4090 | vLLM | 120.5 |\n"
    text = "# Runs\n\n" + row * 6 + "\nThe end.\n"
    at = text.index("120.5", text.index("120.5") + 1 + len(row) * 2)   # the fourth row's figure
    sel = selector_at(text, at, at + 5)
    assert sel["exact"] == "120.5" and sel["start"] == at and sel["end"] == at + 5
    assert matches(text, sel["exact"], sel["prefix"], sel["suffix"]) == [at]   # the quote alone names it
    with pytest.raises(BadRequest, match="not a number"):
        selector_at(text, text.index("vLLM"), text.index("vLLM") + 4)
    with pytest.raises(BadRequest, match="not in the archived text"):
        selector_at(text, len(text) - 2, len(text) + 10)
