"""`caveat verify`: every indexed record re-read, digests recomputed; damage reported, exit 1."""

from __future__ import annotations

import zlib

from sqlalchemy import select

from app.models import Snapshot
from app.capture.http import capture_urls
from app.storage.snapshots import load_record
from archive.recovery import truncate_tail
from tests.capture_helpers import db_with

PAGE = "<html><body>" + "<p>tg128 131.42 t/s</p>\n" * 50 + "</body></html>"


def _capture(db, server, n=3):
    urls = [server.route(f"/v{i}", PAGE + str(i)) for i in range(n)]
    return [r.snapshot for r in capture_urls(db, urls)]


def _member(path, snap) -> bytes:
    with open(path, "rb") as f:
        f.seek(snap.offset)
        return f.read(snap.length)


def _splice(path, offset, data) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def _regzip_like_caveat(record: bytes) -> bytes:
    """Re-gzip a record at level 0 in the same three deflate segments the writer uses
    (WARC + HTTP headers, payload, final CRLF CRLF), so stored blocks give the same length."""
    warc_end = record.index(b"\r\n\r\n") + 4
    http_end = record.index(b"\r\n\r\n", warc_end) + 4
    parts = [record[:http_end], record[http_end:-4], record[-4:]]
    out = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    for n, part in enumerate(parts):
        c = zlib.compressobj(0, zlib.DEFLATED, -15)
        out += c.compress(part) + (c.flush() if n == 2 else c.flush(zlib.Z_SYNC_FLUSH))
    return out + zlib.crc32(record).to_bytes(4, "little") + len(record).to_bytes(4, "little")


def test_clean_archive_verifies(cli, db, server):
    _capture(db, server)
    result = cli("verify")
    assert result.exit_code == 0, result.output
    assert "ok: 3 record(s) checked" in result.output
    with db.Session() as s:
        assert set(s.scalars(select(Snapshot.fixity))) == {"ok"}


def test_flipped_byte_in_file_is_reported(cli, db, server):
    snaps = _capture(db, server)
    path = db.settings.warc_dir / snaps[1].warc_file
    data = bytearray(_member(path, snaps[1]))
    data[len(data) // 2] ^= 0x01
    _splice(path, snaps[1].offset, bytes(data))
    result = cli("verify")
    assert result.exit_code == 1
    assert f"corrupt   {snaps[1].citation_id}" in result.output
    assert "FAILED: 1 of 3 record(s) have problems (1 corrupt)" in result.output
    with db.Session() as s:
        bad = s.get(Snapshot, snaps[1].id)
        assert bad.fixity == "failed" and "corrupt" in bad.fixity_detail
    stored = load_record(db.settings, snaps[1])
    assert stored.fixity == "failed" and stored.body == b""  # never returned as if fine


def test_changed_payload_with_valid_gzip_is_a_digest_mismatch(cli, settings, server):
    """A careful tamperer re-gzips the member (valid CRC): only the WARC digests can tell."""
    db = db_with(settings, warc_gzip_level=0)  # stored blocks: re-compressing keeps the length
    snaps = _capture(db, server)
    path = settings.warc_dir / snaps[0].warc_file
    raw = zlib.decompress(_member(path, snaps[0]), 31)
    forged = raw.replace(b"131.42", b"931.42", 1)
    member = _regzip_like_caveat(forged)
    assert len(member) == snaps[0].length
    _splice(path, snaps[0].offset, member)
    result = cli("verify")
    assert result.exit_code == 1
    assert f"mismatch  {snaps[0].citation_id}" in result.output and "digest mismatch" in result.output
    stored = load_record(settings, snaps[0])
    assert stored.fixity == "failed" and "payload" in stored.fixity_detail


def test_truncated_and_missing_files_are_reported(cli, db, server):
    snaps = _capture(db, server)
    path = db.settings.warc_dir / snaps[-1].warc_file
    truncate_tail(path, snaps[-1].offset + 10)
    result = cli("verify")
    assert result.exit_code == 1
    assert f"truncated {snaps[-1].citation_id}" in result.output
    path.unlink()
    result = cli("verify")
    assert result.exit_code == 1 and "(3 missing)" in result.output
    assert f"missing files: {snaps[0].warc_file}" in result.output


def test_verify_catches_a_corrupted_sqlite_page(settings, server, cli):
    from app.db import Database
    from app.capture.http import capture_urls

    db = Database(settings)
    assert all(r.ok for r in capture_urls(db, [server.route(f"/v{i}", f"<p>{i}" + "y" * 3000) for i in range(40)]))
    db.dispose()
    import sqlite3

    path = settings.db_url.removeprefix("sqlite:///")
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'ix_snapshots_url'").fetchone()[0]
    con.close()
    data = bytearray(open(path, "rb").read())
    start = (root - 1) * page
    data[start + 100:start + page - 100] = bytes([0x5A]) * (page - 200)  # scribble over one index page
    open(path, "wb").write(bytes(data))
    res = cli("verify")
    assert res.exit_code == 1
    assert "FAILED: the database" in res.output and "damaged" in res.output
    assert "database  " in res.output  # the integrity check's own words are shown


def test_verify_reports_unindexed_records_and_repair_indexes_them(settings, server, cli):
    from sqlalchemy import delete

    from app.db import Database
    from app.models import Snapshot
    from app.capture.http import capture_urls

    db = Database(settings)
    res = capture_urls(db, [server.route(f"/u{i}", f"<p>{i}</p>") for i in range(3)])
    lost = res[1].snapshot.citation_id
    with db.session() as s:
        s.execute(delete(Snapshot).where(Snapshot.citation_id == lost))
    db.dispose()
    out = cli("verify")
    assert out.exit_code == 1
    assert f"unindexed {lost}" in out.output and "1 unindexed" in out.output
    fixed = cli("verify", "--repair")
    assert fixed.exit_code == 0, fixed.output
    assert "ok: 3 record(s) checked" in fixed.output
