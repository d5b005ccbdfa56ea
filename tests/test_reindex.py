"""The archive never loses a byte: a lost, replaced or restored database comes back from the WARC files.

Each test captures and crawls real pages from a server on 127.0.0.1, then loses the index in one of
the ways users do, and checks that every record survives in its WARC, comes back into the index with
the same citation id, and that entries and quotable answers are re-derived the same.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import Database
from app.models import Recipe, Snapshot, Source
from app.capture.http import capture_urls
from app.watch.schedule import crawl
from app.rebuild.reindex import reindex_all
from app.storage.indexing import unindexed_files
from app.storage.snapshots import find_by_citation, load_record
from app.claims.sources import add_source
from tests.capture_helpers import ref_tool, run, warc_files
from tests.conftest import _truncate_pg

DEMO = Path(__file__).resolve().parent.parent / "app" / "demo_data"


def _serve_demo(server) -> list[tuple[str, str, str]]:
    spec = json.loads((DEMO / "sources.json").read_text())["sources"]
    out = []
    for s in spec:
        url = server.route(s["path"], (DEMO / s["file"]).read_bytes(), content_type=s["content_type"])
        out.append((s["name"], url, s["kind"]))
    return out


def _index(db: Database) -> dict[str, tuple]:
    with db.Session() as s:
        return {r.citation_id: (r.warc_file, r.offset, r.length, r.record_id, r.sha256, r.url, r.record_type)
                for r in s.scalars(select(Snapshot))}


def _quotable(db: Database) -> dict[str, dict]:
    with db.Session() as s:
        # computed_at says when the rebuilt database computed each answer: the rest must be the same
        return {r.recipe_id: {k: v for k, v in r.quotable.items() if k != "computed_at"}
                for r in s.scalars(select(Recipe)) if r.quotable is not None}


def _lose_database(db: Database) -> Database:
    """Replace the database by a fresh, empty one at the same URL (as `caveat init` would make it)."""
    settings = db.settings
    db.dispose()
    if settings.db_url.startswith("sqlite"):
        Path(settings.db_url.removeprefix("sqlite:///")).unlink()
        for extra in ("-wal", "-shm"):
            Path(settings.db_url.removeprefix("sqlite:///") + extra).unlink(missing_ok=True)
    else:
        _truncate_pg(settings.db_url)
    fresh = Database(settings)
    fresh.upgrade()
    return fresh


def _crawl_demo(db: Database, server) -> None:
    with db.session() as s:
        for name, url, kind in _serve_demo(server):
            add_source(s, name, url, kind)
    reports = crawl(db, db.settings)
    assert all(not r.failed for r in reports), [(r.name, r.error) for r in reports]


def test_lost_database_then_capture_keeps_every_record_and_reindex_restores_everything(backend_db, server):
    db = backend_db
    _crawl_demo(db, server)
    pages = [server.route(f"/p{i}", f"<p>page {i} {'x' * 500}</p>") for i in range(30)]
    assert all(r.ok for r in capture_urls(db, pages))
    before, answers = _index(db), _quotable(db)
    assert len(before) >= 34 and len(answers) >= 3
    sizes = {p.name: p.stat().st_size for p in warc_files(db.settings)}

    db = _lose_database(db)
    assert [p.name for p in unindexed_files(db)] == sorted(sizes)
    notices: list[str] = []
    after_url = server.route("/after", "<p>after the loss</p>")
    assert capture_urls(db, [after_url], notice=notices.append)[0].ok
    # Nothing was cut: every file is at least as long as before, and the records were indexed instead.
    for name, size in sizes.items():
        assert (db.settings.warc_dir / name).stat().st_size >= size
    assert any("without index rows" in n for n in notices), notices
    assert not any("truncated" in n or "cut" in n for n in notices), notices
    now = _index(db)
    assert set(before) <= set(now)
    for cid, where in before.items():
        assert now[cid] == where

    report = reindex_all(db)
    assert report.sources == [] or set(report.sources) <= {"demo-leaderboard", "demo-api", "demo-llama-bench",
                                                           "demo-post"}
    with db.Session() as s:
        assert {x.name for x in s.scalars(select(Source))} == {"demo-leaderboard", "demo-api",
                                                              "demo-llama-bench", "demo-post"}
        for cid in before:  # every citation id resolves to the same record, with the payload intact
            snap = find_by_citation(s, cid)
            assert (snap.warc_file, snap.offset, snap.record_id) == before[cid][:2] + (before[cid][3],)
            stored = load_record(db.settings, snap, session=s)
            assert stored.fixity == "ok", stored.fixity_detail
    assert _quotable(db) == answers

    # Idempotent: a second run indexes nothing new and changes no answer.
    again = reindex_all(db)
    assert again.indexed == 0
    assert _quotable(db) == answers
    assert len(_index(db)) == len(now)
    db.dispose()


def test_restored_backup_keeps_the_records_captured_after_it(settings, server):
    db = Database(settings)
    first = [server.route(f"/a{i}", f"<p>a{i}</p>") for i in range(5)]
    assert all(r.ok for r in capture_urls(db, first))
    db.dispose()
    backup = settings.data_dir / "backup.db"
    shutil.copy(settings.data_dir / "caveat.db", backup)
    db = Database(settings)
    later = [server.route(f"/b{i}", f"<p>b{i}</p>") for i in range(7)]
    assert all(r.ok for r in capture_urls(db, later))
    later_ids = {cid for cid, v in _index(db).items() if "/b" in v[5]}
    db.dispose()
    shutil.copy(backup, settings.data_dir / "caveat.db")  # restore last week's backup
    db = Database(settings)
    assert capture_urls(db, [server.route("/c", "<p>c</p>")])[0].ok
    assert later_ids <= set(_index(db)), "records captured after the backup were lost"
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(settings))])
    assert check.returncode == 0, check.stdout
    db.dispose()


def test_torn_tail_is_moved_aside_and_cut_but_whole_records_are_indexed(db, server):
    assert capture_urls(db, [server.route("/one", "<p>one</p>")])[0].ok
    path = warc_files(db.settings)[-1]
    whole = path.stat().st_size
    # A whole record written by an interrupted capture (fsynced, rows never committed), then half a record.
    from archive.warcwriter import WarcWriter

    with WarcWriter(path) as w:
        written = w.write_response("http://example.test/fsynced", "20261201000000123", b"HTTP/1.1 200 OK\r\n"
                                   b"Content-Type: text/html\r\n\r\n", b"<p>kept</p>", 11,
                                   __import__("hashlib").sha256(b"<p>kept</p>").digest())
    partial = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + __import__("os").urandom(5000))[:700]
    with open(path, "ab") as f:
        f.write(partial)
    notices: list[str] = []
    assert capture_urls(db, [server.route("/two", "<p>two</p>")], notice=notices.append)[0].ok
    torn = list(path.parent.glob(path.name + ".*.torn"))
    assert len(torn) == 1 and torn[0].read_bytes() == partial
    assert any("indexed 1 record" in n for n in notices), notices
    assert any("torn tail repaired" in n and "700 bytes" in n for n in notices), notices
    with db.Session() as s:
        snap = s.scalar(select(Snapshot).where(Snapshot.record_id == written.record_id))
        assert snap is not None and snap.offset == whole
        assert load_record(db.settings, snap, session=s).body == b"<p>kept</p>"
    assert run(["gzip", "-t", str(path)]).returncode == 0


def test_damage_followed_by_whole_records_is_never_cut(db, server):
    assert capture_urls(db, [server.route("/one", "<p>one</p>")])[0].ok
    path = warc_files(db.settings)[-1]
    good = path.read_bytes()
    from archive.warcwriter import WarcWriter

    junk = b"\x1f\x8b\x08\x00garbage-that-is-not-deflate" * 4
    with open(path, "ab") as f:
        f.write(junk)
    with WarcWriter(path) as w:
        rec = w.write_response("http://example.test/after-damage", "20261201000000999",
                               b"HTTP/1.1 200 OK\r\n\r\n", b"after", 5, __import__("hashlib").sha256(b"after").digest())
    size = path.stat().st_size
    notices: list[str] = []
    assert capture_urls(db, [server.route("/two", "<p>two</p>")], notice=notices.append)[0].ok
    assert path.stat().st_size == size, "a file with whole records after its damage was cut"
    assert path.read_bytes()[:len(good)] == good
    assert any("damaged" in n and "nothing was cut" in n for n in notices), notices
    assert len(warc_files(db.settings)) == 2  # new records went to a new file
    report = reindex_all(db, reparse=False)
    with db.Session() as s:
        assert s.scalar(select(Snapshot.id).where(Snapshot.record_id == rec.record_id)) is not None
    assert any("damaged tail" in p for p in report.problems)


def test_warc_written_by_another_tool_dropped_in_the_folder_is_indexed(db):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for i in range(3):
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(f"http://other.test/{i}", "response",
                                                      payload=io.BytesIO(b"<p>other %d</p>" % i),
                                                      http_headers=http))
    (db.settings.warc_dir / "other-tool.warc.gz").write_bytes(buf.getvalue())
    plain = io.BytesIO()
    w2 = WARCWriter(plain, gzip=False)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
    w2.write_record(w2.create_warc_record("http://other.test/plain", "response", payload=io.BytesIO(b"plain"),
                                          http_headers=http))
    (db.settings.warc_dir / "plain.warc").write_bytes(plain.getvalue())
    report = reindex_all(db, reparse=False)
    assert report.indexed == 4
    with db.Session() as s:
        snaps = s.scalars(select(Snapshot).order_by(Snapshot.url)).all()
        assert [x.url for x in snaps] == ["http://other.test/0", "http://other.test/1", "http://other.test/2",
                                          "http://other.test/plain"]
        bodies = [load_record(db.settings, x, session=s) for x in snaps]
    assert [b.body for b in bodies] == [b"<p>other 0</p>", b"<p>other 1</p>", b"<p>other 2</p>", b"plain"]
    assert all(b.fixity == "ok" for b in bodies), [b.fixity_detail for b in bodies]


@pytest.mark.parametrize("answer", ["--reindex"])
def test_init_offers_reindex_and_the_error_message_says_so(settings, server, cli, answer):
    db = Database(settings)
    assert capture_urls(db, [server.route("/x", "<p>x</p>")])[0].ok
    cid = next(iter(_index(db)))
    db = _lose_database(db)
    db.dispose()
    Path(settings.db_url.removeprefix("sqlite:///")).unlink()
    res = cli("verify")
    assert res.exit_code != 0 and "caveat init --reindex" in res.output
    res = cli("init", answer)
    assert res.exit_code == 0, res.output
    assert "hold records this database does not index" in res.output
    assert "reindexed 1 record(s)" in res.output
    assert cid in _index(Database(settings))


def test_db_copy_between_sqlite_and_postgresql_keeps_citations_and_answers(settings, server, tmp_path):
    """SQLite -> PostgreSQL -> SQLite: every citation id names the same record, every answer is the same."""
    import os

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from app.storage.dbcopy import copy_database

    pg = os.environ.get("CAVEAT_TEST_POSTGRES_URL")
    db = Database(settings)
    _crawl_demo(db, server)
    before, answers = _index(db), _quotable(db)
    targets = []
    if pg:
        base = make_url(pg)
        name = f"caveat_copy_{os.getpid()}"
        admin = create_engine(base, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            c.execute(text(f'CREATE DATABASE "{name}"'))
        targets.append(base.set(database=name).render_as_string(hide_password=False))
    targets.append(f"sqlite:///{tmp_path / 'copy.db'}")
    current = db
    try:
        for url in targets:
            expected = _index(current)
            report = copy_database(current, url)
            assert report.tables["snapshots"] == len(expected)
            copied = Database(settings.model_copy(update={"database_url": url}))
            assert _index(copied) == expected
            assert _quotable(copied) == answers
            with pytest.raises(Exception, match="already holds rows"):
                copy_database(current, url)
            # a capture on the copy continues the id sequences and leaves the copied records alone
            assert capture_urls(copied, [server.route(f"/more-{len(url)}", "<p>more</p>")])[0].ok
            assert set(before) <= set(_index(copied))
            current = copied
    finally:
        if pg:
            current.dispose()
            with admin.connect() as c:
                c.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n "
                               "AND pid <> pg_backend_pid()"), {"n": name})
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            admin.dispose()


def test_opening_the_store_after_a_crawl_does_not_load_the_index(db, server, monkeypatch):
    """A crawl leaves its metadata record after the last indexed byte; the next capture reads that tail
    and finds nothing to index, without loading every index row (the catch-up's Reindexer)."""
    import app.storage.indexing as reindex_service

    _crawl_demo(db, server)
    built = []
    real_init = reindex_service.Reindexer.__init__
    monkeypatch.setattr(reindex_service.Reindexer, "__init__",
                        lambda self, *a, **k: (built.append(1), real_init(self, *a, **k))[1])
    notices: list[str] = []
    assert capture_urls(db, [server.route("/next", "<p>next</p>")], notice=notices.append)[0].ok
    assert built == [] and notices == []
