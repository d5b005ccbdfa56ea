"""History across re-crawls of a real leaderboard page (tests/data/corpus/html/ladder.html, the seed's
GLM-5.3-Flash entry and its draft-width ladder), served by a local HTTP server."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from app.db import Database
from app.models import EntryVersion

PAGE = (Path(__file__).parent / "data" / "corpus" / "html" / "ladder.html").read_text()
NOTE_START = "acceptance 64/1.00 on locked attractor"


def _edited(page: str) -> str:
    """The headline edited and the headline row's notes deleted."""
    page = page.replace("<td>1,004.9</td>", "<td>1,010.2</td>", 1)
    start = page.index("<td>" + NOTE_START)
    end = page.index("</td>", start)
    return page[:start] + "<td>" + page[end:]


def test_recrawl_shows_the_edited_headline_and_the_deleted_notes(cli, server, settings, client):
    assert "<td>1,004.9</td>" in PAGE and NOTE_START in PAGE
    url = server.route("/board", PAGE)
    cli("source", "add", "board", url, "--kind", "html")
    r = cli("crawl", "board")
    assert r.exit_code == 0, r.output

    glm = client.get("/api/entries", params={"model": "GLM-5.3-Flash"}).json()
    assert glm["total"] == 6
    top = max(glm["entries"], key=lambda e: e["headline_tps"])
    assert top["headline_tps"] == 1004.9 and top["draft_tokens"] == 64
    assert top["steady_state"] == {"low": 373.0, "high": 391.0}
    assert NOTE_START in top["notes"]
    ladder = client.get(f"/api/recipes/{top['recipe_id']}").json()["ladder"]
    assert [(r["draft_tokens"], r["headline_tps"]) for r in ladder] == [
        (8, 300.7), (12, 443.1), (20, 514.3), (20, 482.4), (28, 808.5), (64, 1004.9)]

    server.route("/board", _edited(PAGE))
    r = cli("crawl", "board")
    assert r.exit_code == 0, r.output
    cols = next(x for x in r.output.splitlines() if x.startswith("board ")).split()
    assert cols[1:6] == ["ok", "0", "1", "6", "0"]  # 1 changed, the other 6 rows unchanged, none gone

    detail = client.get(f"/api/entries/{top['id']}").json()
    assert detail["recipe_id"] == top["recipe_id"]  # same recipe after the edit
    assert len(detail["history"]) == 2
    first, second = detail["history"]
    changed = second["changed_fields"]
    assert changed["headline_tps"] == [1004.9, 1010.2]
    assert NOTE_START in changed["notes"][0] and changed["notes"][1] is None
    assert changed["steady_low"] == [373.0, None]  # the steady state lived in the deleted notes
    assert first["snapshot"] != second["snapshot"]
    assert first["headline_tps"] == 1004.9  # the old version is still there
    assert detail["provenance"]["headline_tps"]["quote"] == "1,010.2"
    assert detail["citation"].startswith(f"http://caveat.test/c/{second['snapshot']}?q=1%2C010.2")

    # reparse reads both archived snapshots again: same parsers, same history
    db = Database(settings)
    with db.session() as s:
        before = s.scalar(select(func.count(EntryVersion.id)))
    r = cli("reparse")
    assert r.exit_code == 0, r.output
    with db.session() as s:
        assert s.scalar(select(func.count(EntryVersion.id))) == before
    db.dispose()
    assert client.get(f"/api/recipes/{top['recipe_id']}").json()["ladder"][-1]["headline_tps"] == 1010.2
