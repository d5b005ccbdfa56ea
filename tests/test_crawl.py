"""End to end: `caveat crawl` and `caveat reparse` against real pages on a local HTTP server.

Real capture into WARC, real parsers, real database; then the JSON API over what was stored.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from app.db import Database
from app.models import Crawl, Entry, EntryVersion, Snapshot, Source

LADDER = [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]
NOTE = "acceptance 64/1.00 on locked attractor; steady state 373-391 tok/s"


def leaderboard_json(headline: float = 1004.9, notes: str | None = NOTE) -> str:
    rows = []
    for draft, tps in LADDER:
        row = {
            "hfId": "zai-org/GLM-5.3-Flash", "hardware": {"gpuName": "RTX PRO 6000 Blackwell", "gpuCount": 2},
            "engineName": "SGLang", "engineVersion": "0.5.4", "quantization": "NVFP4",
            "tokSOut": headline if draft == 64 else tps,
            "engineFlags": {"tensorParallel": 2, "concurrency": 1, "specDraftTokens": draft},
            "submitter": "alice",
        }
        if draft == 64 and notes is not None:
            row["notes"] = notes
        rows.append(row)
    return json.dumps(rows)


def leaderboard_html(headline: str = "1,004.9", notes: str = NOTE) -> str:
    cells = []
    for draft, tps in LADDER:
        shown = headline if draft == 64 else f"{tps:,}"
        note = notes if draft == 64 else ""
        cells.append(f"<tr><td>GLM-5.3-Flash</td><td>2x RTX PRO 6000 Blackwell</td><td>SGLang 0.5.4</td>"
                     f"<td>NVFP4</td><td>{draft}</td><td>{shown}</td><td>{note}</td></tr>")
    return ("<html><body><h2>Single-stream decode</h2><table><tr><th>Model</th><th>Hardware</th><th>Engine</th>"
            "<th>Quant</th><th>Draft tokens</th><th>Fastest t/s</th><th>Notes</th></tr>"
            + "".join(cells) + "</table></body></html>")


def _entries(settings, source: str) -> list[Entry]:
    db = Database(settings)
    with db.session() as s:
        src = s.scalar(select(Source).where(Source.name == source))
        out = s.scalars(select(Entry).where(Entry.source_id == src.id, Entry.gone.is_(False))
                        .order_by(Entry.id)).all()
    db.dispose()
    return out


@pytest.fixture
def backend_cli(backend_settings):
    from click.testing import CliRunner

    from app.cli import main
    from app.cli.context import CliContext

    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), obj=CliContext(backend_settings), catch_exceptions=False)


@pytest.fixture
def backend_client(backend_settings):
    from fastapi.testclient import TestClient

    from app.main import create_app

    application = create_app(backend_settings)
    with TestClient(application, base_url="http://caveat.test") as c:
        yield c
    application.state.db.dispose()


def test_crawl_stores_entries_then_recrawl_records_the_changes(backend_cli, server, backend_settings, backend_client):
    cli, settings, client = backend_cli, backend_settings, backend_client
    url = server.route("/api/leaderboard", leaderboard_json(), content_type="application/json")
    assert cli("source", "add", "lm", url, "--kind", "json").exit_code == 0
    r = cli("crawl")
    assert r.exit_code == 0, r.output
    assert "[1/1] lm: capturing" in r.output and "[1/1] lm: ok" in r.output  # plain progress lines off a TTY
    line = next(x for x in r.output.splitlines() if x.startswith("lm "))
    assert line.split()[1:6] == ["ok", "6", "0", "0", "0"]
    entries = _entries(settings, "lm")
    assert sorted(e.draft_tokens for e in entries) == [8, 12, 20, 20, 28, 64]
    assert len({e.recipe_id for e in entries}) == 1
    top = next(e for e in entries if e.draft_tokens == 64)
    assert top.headline_tps == 1004.9 and top.notes == NOTE and top.gpu_count == 2

    # The page changes: the headline is edited and the notes are deleted.
    server.route("/api/leaderboard", leaderboard_json(headline=990.5, notes=None), content_type="application/json")
    r = cli("crawl", "lm")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("lm "))
    assert line.split()[1:6] == ["ok", "0", "1", "5", "0"]

    detail = client.get(f"/api/entries/{top.id}").json()
    assert [h["version"] for h in detail["history"]] == [1, 2]
    changed = detail["history"][1]["changed_fields"]
    assert changed["headline_tps"] == [1004.9, 990.5]
    assert changed["notes"][0] == NOTE and changed["notes"][1] is None
    assert detail["history"][0]["snapshot"] != detail["history"][1]["snapshot"]
    assert detail["headline_tps"] == 990.5 and detail["notes"] is None
    assert detail["citation"].startswith(f"http://caveat.test/c/{detail['snapshot']}")
    assert detail["provenance"]["headline_tps"]["quote"]

    ladder = client.get(f"/api/recipes/{top.recipe_id}").json()["ladder"]
    assert [r["draft_tokens"] for r in ladder] == [8, 12, 20, 20, 28, 64]

    # Reparse with the same parsers reads both snapshots and adds no version.
    db = Database(settings)
    with db.session() as s:
        before = s.scalar(select(func.count(EntryVersion.id)))
    r = cli("reparse", "--source", "lm")
    assert r.exit_code == 0, r.output
    with db.session() as s:
        assert s.scalar(select(func.count(EntryVersion.id))) == before
        kinds = [c.kind for c in s.scalars(select(Crawl).order_by(Crawl.id))]
        assert kinds == ["crawl", "crawl", "reparse"]
    db.dispose()


def test_html_leaderboard_and_guessed_kind(cli, server, settings):
    url = server.route("/board", leaderboard_html())
    cli("source", "add", "board", url)  # no --kind
    r = cli("crawl", "board")
    assert r.exit_code == 0, r.output
    assert "board: guessed kind html" in r.output
    assert "html (guessed)" in cli("source", "list").output
    entries = _entries(settings, "board")
    assert len(entries) == 6
    top = max(entries, key=lambda e: e.headline_tps or 0)
    assert top.headline_tps == 1004.9 and top.draft_tokens == 64 and "locked attractor" in (top.notes or "")


def test_one_failing_source_does_not_stop_the_others(cli, server, settings):
    good = server.route("/good", leaderboard_json(), content_type="application/json")
    missing = server.url("/missing")  # 404
    cli("source", "add", "a-missing", missing, "--kind", "json")
    cli("source", "add", "b-refused", "http://127.0.0.1:9/nothing-listens-here", "--kind", "json")
    cli("source", "add", "c-good", good, "--kind", "json")
    r = cli("crawl")
    assert r.exit_code == 1
    assert "2 of 3 sources failed: a-missing, b-refused" in r.output
    assert "HTTP 404" in r.output
    assert len(_entries(settings, "c-good")) == 6
    db = Database(settings)
    with db.session() as s:
        srcs = {x.name: x for x in s.scalars(select(Source))}
        assert srcs["a-missing"].last_status == "failed" and "404" in srcs["a-missing"].last_error
        assert srcs["b-refused"].last_status == "failed" and srcs["b-refused"].last_error
        assert srcs["c-good"].last_status == "ok"
        # the 404 response itself is archived
        assert s.scalar(select(func.count(Snapshot.id)).where(Snapshot.source_id == srcs["a-missing"].id)) >= 1
        statuses = {c.source_id: c.status for c in s.scalars(select(Crawl))}
        assert sorted(statuses.values()) == ["failed", "failed", "ok"]
    db.dispose()


def test_page_where_nothing_parses_says_so_and_keeps_snapshot_then_reparse_fixes_kind(cli, server, settings):
    url = server.route("/api/lb", leaderboard_json(), content_type="application/json")
    cli("source", "add", "lm", url, "--kind", "markdown")  # wrong kind: a JSON body has no pipe table
    r = cli("crawl", "lm")
    assert r.exit_code == 1
    assert "nothing parsed as markdown" in r.output and "is kept" in r.output
    db = Database(settings)
    with db.session() as s:
        src = s.scalar(select(Source).where(Source.name == "lm"))
        assert src.last_status == "empty"
        assert s.scalar(select(func.count(Snapshot.id)).where(Snapshot.source_id == src.id)) == 1
    # fix the kind and re-read the archive; nothing is fetched
    requests_before = len(server.requests)
    cli("source", "remove", "lm")
    cli("source", "add", "lm", url, "--kind", "json")
    r = cli("reparse", "--source", "lm")
    assert r.exit_code == 0, r.output
    assert len(server.requests) == requests_before
    assert len(_entries(settings, "lm")) == 6
    db.dispose()


def test_unparseable_values_become_warnings_in_the_summary(cli, server, settings):
    rows = json.loads(leaderboard_json())
    rows[0]["tokSOut"] = "fast!"
    url = server.route("/api/lb", json.dumps(rows), content_type="application/json")
    cli("source", "add", "lm", url, "--kind", "json")
    r = cli("crawl", "lm")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("lm "))
    assert line.split()[1] == "warnings" and int(line.split()[6]) >= 1
    assert "lm: warning: entry 1" in r.output
    entries = _entries(settings, "lm")
    assert len(entries) == 6  # the entry is kept
    db = Database(settings)
    with db.session() as s:
        first = s.get(EntryVersion, entries[0].current_version_id)
        assert first.warnings
        assert s.scalar(select(Source.last_warnings).where(Source.name == "lm"))
    db.dispose()
