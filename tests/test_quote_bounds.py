"""Issue 24, item 6: the quote view is linear and bounded. A word in every row of a large table is
counted in full, but at most ``quoteview.MAX_SHOWN`` occurrences are highlighted and the rest are
announced ("and N more"); counting stops at a time budget and says so. The timings are in
bench/quoteview.py (BENCHMARKS.md), not here."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from archive import quoteview
from tests.replay_fixtures import add_snapshot

ROWS = 600


def board(rows: int) -> str:
    body = "".join(f"<tr><td>model-{i}</td><td>{i} tok/s WORD</td></tr>" for i in range(rows))
    return f"<html><body><h1>Board</h1><table><tr><th>Model</th><th>Speed</th></tr>{body}</table></body></html>"


@pytest.fixture
def snaps(app):
    with app.state.db.session() as s:
        html = add_snapshot(s, app.state.settings, "https://board.example/", "20260101100000100", board(ROWS))
        plain = add_snapshot(s, app.state.settings, "https://board.example/t.txt", "20260101100000200",
                             "".join(f"row {i}: WORD\n" for i in range(ROWS)), content_type="text/plain")
        s.commit()
        return html.citation_id, plain.citation_id


@pytest.mark.parametrize("which", [0, 1], ids=["html", "plain"])
def test_a_word_in_every_row_is_counted_but_only_a_bounded_number_highlighted(client, snaps, which):
    cid = snaps[which]
    j = client.get(f"/c/{cid}.json", params={"q": "WORD"}).json()
    assert j["ambiguous"] and j["occurrences"] == ROWS and not j["partial"]
    assert len(j["matches"]) == j["shown"] == quoteview.MAX_SHOWN
    assert j["more"] == ROWS - quoteview.MAX_SHOWN
    assert len(re.findall(r"<mark\b", j["html"])) == quoteview.MAX_SHOWN
    r = client.get(f"/c/{cid}", params={"q": "WORD"})
    assert r.status_code == 200
    soup = BeautifulSoup(r.text, "html.parser")
    assert len(soup.select(".page-text mark")) == quoteview.MAX_SHOWN
    assert len(soup.select(".occurrences li")) == quoteview.MAX_SHOWN
    more = soup.select_one(".more-occurrences").get_text(" ", strip=True)
    assert f"and {ROWS - quoteview.MAX_SHOWN:,} more" in more
    assert f"occurs {ROWS} times" in soup.select_one(".ambiguous").get_text(" ", strip=True)


def test_one_selected_occurrence_among_many_is_still_shown_alone(client, snaps):
    cid = snaps[0]
    j = client.get(f"/c/{cid}.json", params={"q": "WORD", "prefix": "417 tok/s"}).json()
    assert not j["ambiguous"] and j["shown"] == 1 and j["more"] == 0 and j["cell"]["row"] == 419


@pytest.mark.parametrize("kind", ["html", "plain"])
def test_counting_stops_at_the_time_budget_and_says_so(kind):
    source = board(2000) if kind == "html" else "WORD\n" * 2000
    doc, kept, total = quoteview.locate(source, kind, "WORD", budget=0)
    assert doc.partial and 0 < len(kept) < 2000
    doc, kept, total = quoteview.locate(source, kind, "WORD")
    assert not doc.partial and len(kept) == 2000 == total


def test_highlighting_many_marks_keeps_each_mark_in_its_row():
    doc, kept, _ = quoteview.locate(board(300), "html", "WORD")
    html = doc.render(kept)
    assert html.count('class="quote-row"') == 300 and html.count("<mark") == 300
    assert doc.cell(300)["row"] == 301 and doc.cell(1)["row_label"] == "model-0"
    plain = quoteview.build("WORD " * 300, "plain")
    kept, _ = plain.find("WORD")
    assert plain.render(kept).count("<mark") == 300


@pytest.mark.parametrize("which", [0, 1], ids=["html", "plain"])
def test_many_occurrences_show_the_page_only_up_to_the_last_highlight(client, snaps, which):
    cid = snaps[which]
    last_shown, beyond, last_row = ((f"model-{quoteview.MAX_SHOWN - 1}<", "model-60<", f"model-{ROWS - 1}<") if which == 0
                                    else (f"row {quoteview.MAX_SHOWN - 1}:", "row 60:", f"row {ROWS - 1}:"))
    j = client.get(f"/c/{cid}.json", params={"q": "WORD"}).json()
    assert j["cut"] and last_shown in j["html"] and beyond not in j["html"]
    whole = client.get(f"/c/{cid}.json", params={"q": "WORD", "view": "page"}).json()
    assert not whole["cut"] and last_row in whole["html"]
    assert whole["html"].count("<mark") == quoteview.MAX_SHOWN
    r = client.get(f"/c/{cid}", params={"q": "WORD"})
    assert "show the whole page" in BeautifulSoup(r.text, "html.parser").select_one(".cut-note").get_text()
