"""Rough edges a new user meets (issue 29, item 12): the favicon, `source add` refusing what the crawler
would refuse (in its words, under its settings) and its hint said once, and `source add --from-archive`
giving imported captures to a source so they are read, audited and cited."""

from __future__ import annotations

import json

from sqlalchemy import select

from app.models import Entry, Snapshot, Source
from tests.test_import import warcio_record

BOARD = b"""# Decode speed

| Model | Hardware | Engine | Output tok/s |
| --- | --- | --- | --- |
| Qwen3-32B | 1x H100 | vLLM 0.9.1 | 812.5 |
| Llama-3.1-8B | 1x RTX 4090 | llama.cpp b5000 | 141.2 |
"""


def test_favicon_is_served_not_404(client):
    r = client.get("/favicon.ico")
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/vnd.microsoft.icon"
    assert r.content[:4] == b"\x00\x00\x01\x00" and int.from_bytes(r.content[4:6], "little") >= 1  # an ICO
    page = client.get("/queue")
    assert '<link rel="icon" href="/favicon.ico"' in page.text


def test_source_add_refuses_internal_addresses_as_the_crawler_does(cli, db, settings):
    strict = settings.model_copy(update={"allow_private_addresses": False})
    for url, what in [("http://127.0.0.1:8765/board", "127.0.0.1 is a loopback address"),
                      ("http://[::1]/board", "::1 is a loopback address"),
                      ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
                      ("http://10.1.2.3/board", "10.1.2.3 is a private address"),
                      ("http://localhost:8000/board", "localhost is a loopback address")]:
        r = cli("source", "add", "x", url, settings_override=strict)
        assert r.exit_code == 1, (url, r.output)
        assert f"error: {url}: refused: {what}. Caveat only fetches public addresses; set " \
               "CAVEAT_ALLOW_PRIVATE_ADDRESSES=1 to allow internal ones, or list this host:port in " \
               "CAVEAT_ALLOW_PRIVATE_HOSTS." in r.output, r.output
    with db.session() as s:
        assert s.scalar(select(Source)) is None  # nothing added
    # the two settings the crawler honours let it through, exactly as they let the crawler through
    listed = strict.model_copy(update={"allow_private_hosts": "127.0.0.1:8765"})
    assert cli("source", "add", "listed", "http://127.0.0.1:8765/board", settings_override=listed).exit_code == 0
    assert cli("source", "add", "other-port", "http://127.0.0.1:8766/board", settings_override=listed).exit_code == 1
    assert cli("source", "add", "allowed", "http://10.1.2.3/board").exit_code == 0  # allow_private_addresses
    assert cli("source", "add", "public", "https://example.org/board", settings_override=strict).exit_code == 0


def test_api_source_add_refuses_internal_addresses_too(settings, db):
    from fastapi.testclient import TestClient

    from app.accounts import auth
    from app.main import create_app

    with db.session() as s:
        auth.create_user(s, "admin", "correct horse battery")
        token = auth.create_token(s, "admin", "t", scopes="admin")
    app = create_app(settings.model_copy(update={"allow_private_addresses": False}))
    with TestClient(app, base_url="http://caveat.test") as c:
        r = c.post("/api/sources", json={"name": "x", "url": "http://127.0.0.1:9/b"},
                   headers={"Authorization": f"Bearer {token}"})
    app.state.db.dispose()
    assert r.status_code == 400 and "127.0.0.1 is a loopback address" in r.json()["error"], r.text


def test_source_add_without_a_host_says_its_hint_once(cli):
    r = cli("source", "add", "x", "http://")
    assert r.exit_code == 1
    assert r.output.lower().count("give the full address") == 1, r.output


def test_source_add_from_archive_reads_imported_captures(tmp_path, cli, client, app):
    url = "http://boards.test/speed.md"
    path = tmp_path / "board.warc.gz"
    path.write_bytes(warcio_record(url, BOARD, date="2026-05-01T10:00:00Z", ctype="text/markdown")
                     + warcio_record("http://boards.test/other", b"<p>x</p>", date="2026-05-01T10:00:01Z"))
    assert cli("import-warc", str(path)).exit_code == 0
    with app.state.db.Session() as s:
        snap = s.scalar(select(Snapshot).where(Snapshot.url == url))
        assert snap.source_id is None
        cid = snap.citation_id

    r = cli("source", "add", "board", url, "--kind", "markdown", "--from-archive")
    assert r.exit_code == 0, r.output
    assert f"adopted 1 archived snapshot(s): {cid}" in r.output and "new" in r.output
    with app.state.db.Session() as s:
        src = s.scalar(select(Source).where(Source.name == "board"))
        assert s.get(Snapshot, snap.id).source_id == src.id
        other = s.scalar(select(Snapshot).where(Snapshot.url == "http://boards.test/other"))
        assert other.source_id is None  # another URL is not adopted
        entries = list(s.scalars(select(Entry).where(Entry.source_id == src.id)))
    assert len(entries) == 2
    body = client.get(f"/entries/{entries[0].id}.json").json()
    assert body["ok"] is True and body["entry"]["snapshot"] == cid
    cite = client.get(f"/c/{cid}.json").json()
    assert cite["ok"] is True
    # the entry's citation opens the imported capture with its figure quoted and audited
    assert body["entry"]["flags"] and body["entry"]["citation"].startswith(f"http://caveat.test/c/{cid}?q=")
    quoted = client.get(body["entry"]["citation"].removeprefix("http://caveat.test"),
                        headers={"Accept": "application/json"}).json()
    assert quoted["ok"] is True and quoted["matched"] == str(body["entry"]["headline_tps"]), quoted
    # a second source for the same URL adopts nothing: the snapshot is owned
    r = cli("source", "add", "board2", url, "--from-archive", "--json")
    body = json.loads(r.stdout)
    assert r.exit_code == 0 and body["adopted"] == [] and body["owned_elsewhere"] == [cid]
    # the adoption is in the WARC: a reindex of a lost database gives the snapshot back to the source
    db_file = app.state.settings.data_dir / "caveat.db"
    app.state.db.dispose()
    db_file.unlink()
    assert cli("reindex").exit_code == 0
    with app.state.db.Session() as s:
        src = s.scalar(select(Source).where(Source.name == "board"))
        assert s.scalar(select(Snapshot.source_id).where(Snapshot.citation_id == cid)) == src.id
        assert len(list(s.scalars(select(Entry).where(Entry.source_id == src.id)))) == 2  # read again


def test_from_archive_on_both_databases(tmp_path, backend_settings):
    """The same adoption through the CLI on SQLite and PostgreSQL: entries read from the imported capture."""
    from click.testing import CliRunner

    from app.cli import main
    from app.cli.context import CliContext

    url = "http://boards.test/pg.md"
    path = tmp_path / "pg.warc.gz"
    path.write_bytes(warcio_record(url, BOARD, date="2026-05-02T10:00:00Z", ctype="text/markdown"))
    runner = CliRunner()

    def run(*args):
        return runner.invoke(main, list(args), obj=CliContext(backend_settings), catch_exceptions=False)

    assert run("import-warc", str(path)).exit_code == 0
    r = run("source", "add", "pg-board", url, "--kind", "markdown", "--from-archive", "--json")
    body = json.loads(r.stdout)
    assert r.exit_code == 0 and len(body["adopted"]) == 1 and body["report"]["new"] == 2, r.stdout
    assert list(body)[0] == "ok" and body["source"]["name"] == "pg-board"
