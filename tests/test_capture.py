"""Capture against a real HTTP server on 127.0.0.1: bytes as transferred, hops, limits, revisits."""

from __future__ import annotations

import gzip
import hashlib
import re
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.errors import NotFound
from app.models import Snapshot
from app.capture.http import capture_urls
from app.storage.snapshots import find_by_citation, load_record
from archive.reader import read_record
from archive.recovery import scan_members
from tests.capture_helpers import db_with, warc_files

PAGE = "<html><body><table><tr><td>llama 7B</td><td>131.42 t/s</td></tr></table></body></html>\n" * 40


def count_rows(db) -> int:
    with db.Session() as s:
        return s.scalar(select(func.count()).select_from(Snapshot))


def test_capture_stores_plain_page_and_reads_it_back(backend_db, server):
    url = server.route("/board", PAGE)
    [r] = capture_urls(backend_db, [url])
    assert r.error is None and r.status == 200 and r.size == len(PAGE.encode())
    snap = r.snapshot
    assert re.fullmatch(r"\d{17}", snap.timestamp)
    assert snap.surt.endswith(")/board") and snap.mime == "text/html" and snap.record_type == "response"
    assert re.fullmatch(r"[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}", snap.citation_id)
    assert not snap.warc_file.startswith("/") and (backend_db.settings.warc_dir / snap.warc_file).exists()
    stored = load_record(backend_db.settings, snap)
    assert stored.fixity == "ok" and stored.status == 200
    assert stored.raw_body == stored.body == PAGE.encode()
    # The request record is there too, names Caveat in its User-Agent and is linked to the response.
    req = read_record(backend_db.settings.warc_dir / snap.warc_file, snap.request_offset, snap.request_length)
    assert req.warc_type == "request" and req.header("WARC-Concurrent-To") == snap.record_id
    assert "Caveat/" in req.http_header("User-Agent")
    sent = server.requests[-1]["headers"]
    assert "Caveat/" in sent["User-Agent"] and sent["Accept-Encoding"] == "gzip, deflate"
    # the request record holds the headers as they went out
    assert {k: req.http_header(k) for k in sent} == sent


def test_cookies_are_archived_but_never_sent_back(db, server):
    """Every capture is what a first-time visitor gets, whatever was fetched before it."""
    first = server.route("/sets-cookie", PAGE, headers=[("Set-Cookie", "session=abc123; Path=/")])
    then = server.route("/after", PAGE + "after")
    redirect = server.route("/login", b"", status=302,
                            headers=[("Set-Cookie", "seen=1; Path=/"), ("Location", then)])
    results = capture_urls(db, [first, then, redirect])
    assert [r.error for r in results] == [None, None, None]
    assert load_record(db.settings, results[0].snapshot).header("Set-Cookie") == "session=abc123; Path=/"
    assert all("Cookie" not in r["headers"] for r in server.requests)


def test_gzip_page_is_stored_as_transferred(db, server):
    url = server.route("/gz", PAGE, gzip_body=True)
    [r] = capture_urls(db, [url])
    stored = load_record(db.settings, r.snapshot)
    served = server.routes["/gz"].body
    assert stored.raw_body == served and stored.raw_body[:2] == b"\x1f\x8b"
    assert stored.body == PAGE.encode()
    assert stored.header("Content-Encoding") == "gzip"
    assert stored.header("Content-Length") == str(len(served))
    assert r.snapshot.sha256 == hashlib.sha256(served).hexdigest()


def test_chunked_body_is_stored_dechunked_with_content_length(db, server):
    body = PAGE.encode() * 3
    url = server.route("/chunked", body, chunked=True)
    [r] = capture_urls(db, [url])
    stored = load_record(db.settings, r.snapshot)
    assert stored.raw_body == body
    assert stored.header("Transfer-Encoding") is None
    assert stored.header("Content-Length") == str(len(body))


def test_redirect_chain_stores_each_hop(db, server):
    final = server.route("/final", PAGE)
    server.redirect("/r2", "/final", status=301)
    start = server.redirect("/r1", server.url("/r2"))
    [r] = capture_urls(db, [start])
    assert r.final_url == final and r.status == 200
    assert [h.status for h in r.hops] == [302, 301]
    assert [h.redirect_to for h in r.hops] == [server.url("/r2"), final]
    assert len({h.record_id for h in r.hops} | {r.snapshot.record_id}) == 3
    assert count_rows(db) == 3


def test_too_many_redirects_writes_nothing(db, server):
    server.redirect("/a", "/b")
    server.redirect("/b", "/c")
    server.route("/c", PAGE)
    [r] = capture_urls(db_with(db.settings, max_redirects=1), [server.url("/a")])
    assert r.error and "more than 1 redirects" in r.error and "CAVEAT_MAX_REDIRECTS" in r.error
    assert count_rows(db) == 0


def test_404_is_captured_with_its_status(db, server, cli):
    url = server.url("/missing")
    result = cli("capture", url)
    assert result.exit_code == 0, result.output
    assert re.match(r"404  9 B  [2-9A-Z]{4}-[2-9A-Z]{4}  " + re.escape(url), result.output)
    with db.Session() as s:
        assert s.scalars(select(Snapshot.status)).all() == [404]


def test_non_utf8_page_keeps_its_bytes(db, server):
    text = "<html><meta charset=shift_jis><p>速度 – 131 トークン/秒</p></html>"
    body = text.encode("shift_jis", "replace")
    url = server.route("/sjis", body, content_type="text/html; charset=Shift_JIS")
    [r] = capture_urls(db, [url])
    stored = load_record(db.settings, r.snapshot)
    assert stored.body == body and stored.header("Content-Type") == "text/html; charset=Shift_JIS"
    assert stored.body.decode("shift_jis") == text.encode("shift_jis", "replace").decode("shift_jis")


@pytest.mark.parametrize("chunked", [False, True])
def test_body_over_limit_is_refused_and_nothing_written(db, server, chunked):
    url = server.route("/big", b"x" * 5000, chunked=chunked)
    small = db_with(db.settings, max_body_bytes=1000)
    [r] = capture_urls(small, [url])
    assert r.error and "1,000" in r.error and "CAVEAT_MAX_BODY_BYTES" in r.error
    assert count_rows(db) == 0
    # Only the warcinfo record is in the file.
    [path] = warc_files(db.settings)
    assert len(scan_members(path).members) == 1


def test_slow_response_times_out_cleanly(db, server):
    url = server.route("/slow", PAGE, delay=2.0)
    fast = server.route("/fast", PAGE)
    results = capture_urls(db_with(db.settings, read_timeout=0.3), [url, fast])
    assert results[0].error and "0.3 s" in results[0].error and "CAVEAT_READ_TIMEOUT" in results[0].error
    assert results[1].error is None and count_rows(db) == 1


def test_connect_timeout_is_reported_cleanly(db, server):
    """A host that never completes the TCP handshake: a listening socket whose accept queue is full
    (backlog 0, one connection already waiting, never accepted) drops further SYNs."""
    import socket

    if Path("/proc/sys/net/ipv4/tcp_abort_on_overflow").read_text().strip() != "0":
        pytest.skip("this kernel refuses connections to a full accept queue instead of dropping them")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(2):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        fillers.append(c)
    try:
        fast = server.route("/fast-too", PAGE)
        results = capture_urls(db_with(db.settings, connect_timeout=0.5), [f"http://127.0.0.1:{port}/", fast])
    finally:
        for c in fillers:
            c.close()
        listener.close()
    assert results[0].error and "no connection within 0.5 s" in results[0].error
    assert "CAVEAT_CONNECT_TIMEOUT" in results[0].error
    assert results[1].error is None and count_rows(db) == 1


def _drip(h, n=100, pause=0.05):
    """A server that sends one byte at a time, just often enough for the read timeout."""
    h.send_response(200)
    h.send_header("Content-Length", str(n))
    h.end_headers()
    try:
        for _ in range(n):
            h.wfile.write(b"x")
            h.wfile.flush()
            time.sleep(pause)
    except OSError:
        pass


def test_fetch_time_limit_stops_a_dripping_server(db, server):
    server.route("/drip", handler=_drip)
    started = time.monotonic()
    [r] = capture_urls(db_with(db.settings, fetch_time_limit=0.5, read_timeout=2), [server.url("/drip")])
    assert time.monotonic() - started < 3
    assert r.error and "took longer than 0.5 s" in r.error and "CAVEAT_FETCH_TIME_LIMIT" in r.error
    assert count_rows(db) == 0


def test_an_interrupted_thread_capture_stops_its_fetches(db, server):
    from app.capture.http import limits_for, spool_dir
    from archive.prepare import ThreadStage

    server.route("/drip2", handler=_drip)
    stage = ThreadStage(limits_for(db.settings), 5, spool_dir(db.settings), threads=2)
    stage.submit(0, server.url("/drip2"))
    deadline = time.monotonic() + 10
    while not any(r["path"] == "/drip2" for r in server.requests) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # a few bytes in
    started = time.monotonic()
    [(hops, error)] = stage.close(abort=True)
    assert time.monotonic() - started < 1.5  # not the 5 s the server would take
    assert hops is None and error == "the capture was interrupted"


def test_redirect_to_something_that_is_not_a_url_is_a_clear_error(db, server):
    bad = server.route("/bad-redirect", b"", status=302, headers=[("Location", "http://[::1/x")])
    ftp = server.route("/ftp-redirect", b"", status=301, headers=[("Location", "ftp://example.org/file")])
    results = capture_urls(db, [bad, ftp])
    assert "redirects to 'http://[::1/x'" in results[0].error and "not an http(s) URL" in results[0].error
    assert "redirects to 'ftp://example.org/file'" in results[1].error
    assert count_rows(db) == 0


def test_timestamps_are_unique_per_surt_key(db, server, monkeypatch):
    """Two URLs with one SURT key (query in another order) fetched in the same millisecond must not
    share a timestamp: replay looks captures up by key and timestamp."""
    import archive.prepare

    monkeypatch.setattr(archive.prepare, "ts17", lambda dt: "20261201000000000")
    server.route("/q", PAGE)
    a, b = server.url("/q?a=1&b=2"), server.url("/q?b=2&a=1")
    results = capture_urls(db, [a, b, server.route("/other", PAGE + "o")])
    snaps = [r.snapshot for r in results]
    assert snaps[0].surt == snaps[1].surt
    assert sorted([snaps[0].timestamp, snaps[1].timestamp]) == ["20261201000000000", "20261201000000001"]
    assert snaps[2].timestamp == "20261201000000000"  # another key keeps its own
    assert len({(s.surt, s.timestamp) for s in snaps}) == 3


def test_recapture_writes_revisit_with_unique_timestamps(backend_db, server):
    url = server.route("/same", PAGE)
    results = capture_urls(backend_db, [url, url, url])
    first, *later = [r.snapshot for r in results]
    assert first.record_type == "response"
    for snap in later:
        assert snap.record_type == "revisit" and snap.sha256 == first.sha256
        assert snap.refers_to_id == first.id and snap.refers_to_record_id == first.record_id
    assert len({s.timestamp for s in [first, *later]}) == 3
    rec = read_record(backend_db.settings.warc_dir / later[0].warc_file, later[0].offset, later[0].length)
    assert rec.header("WARC-Refers-To-Target-URI") == url
    assert rec.header("WARC-Refers-To") == first.record_id
    assert rec.header("WARC-Refers-To-Date").startswith(first.timestamp[:4])
    assert "identical-payload-digest" in rec.header("WARC-Profile")
    assert rec.payload == b""  # the revisit does not store a second copy
    stored = load_record(backend_db.settings, later[0])
    assert stored.fixity == "ok" and stored.body == PAGE.encode() and stored.record_type == "revisit"


def test_changed_page_is_a_new_response(db, server):
    url = server.route("/page", PAGE)
    capture_urls(db, [url])
    server.route("/page", PAGE + "<!-- updated -->")
    [r] = capture_urls(db, [url])
    assert r.snapshot.record_type == "response"


def test_find_by_citation_forgives_typing(db, server):
    [r] = capture_urls(db, [server.route("/c", PAGE)])
    cid = r.snapshot.citation_id
    with db.Session() as s:
        assert find_by_citation(s, cid.lower().replace("-", "\u2013")).id == r.snapshot.id
        with pytest.raises(NotFound, match="ABCD-EFGH"):
            find_by_citation(s, "nope")


def test_files_rotate_at_configured_size(db, server):
    urls = [server.route(f"/p{i}", PAGE + str(i)) for i in range(3)]
    small = db_with(db.settings, warc_rotate_bytes=200)
    for url in urls:
        capture_urls(small, [url])
    files = warc_files(db.settings)
    assert len(files) == 3
    with db.Session() as s:
        assert len(set(s.scalars(select(Snapshot.warc_file)))) == 3


def test_cli_capture_prints_lines_and_fails_on_errors(cli, server):
    ok = server.route("/ok", PAGE)
    result = cli("capture", ok, "ftp://example.org/x")
    assert result.exit_code == 1
    assert re.search(r"^200  [\d,]+ B  [2-9A-Z]{4}-[2-9A-Z]{4}  " + re.escape(ok) + "$", result.output, re.M)
    assert "error  ftp://example.org/x: only http and https" in result.output
    assert re.search(r"^stored 1 of 2 URL\(s\) \(0 unchanged, as revisits\) in [\d.]+ s$", result.output, re.M)
    assert "1 of 2 URL(s) failed; nothing was stored for them" in result.output


def test_cli_capture_reads_urls_from_a_file(cli, server, tmp_path):
    listing = tmp_path / "boards.txt"
    listing.write_text(f"# two boards\n{server.route('/one', PAGE)}\n\n  {server.route('/two', PAGE + 'x')}  \n")
    result = cli("capture", "--from-file", str(listing))
    assert result.exit_code == 0, result.output
    assert len(re.findall(r"^200  ", result.output, re.M)) == 2
    assert cli("capture").exit_code == 2  # neither URLs nor a file: a usage error


def test_gzip_raw_body_decodes_to_same_page(db, server):
    url = server.route("/gz2", PAGE, gzip_body=True)
    [r] = capture_urls(db, [url])
    assert gzip.decompress(load_record(db.settings, r.snapshot).raw_body) == PAGE.encode()


def test_large_bodies_stream_through_disk(db, server, monkeypatch):
    """Bodies past the in-memory limits are spooled to disk and compressed while writing."""
    import archive.fetcher as fetcher_mod
    import archive.prepare as capture_mod
    from tests.capture_helpers import ref_tool, run

    from archive.warcwriter import WarcWriter

    monkeypatch.setattr(capture_mod, "PREPARE_MAX", 1000)
    monkeypatch.setattr(fetcher_mod, "SPOOL_IN_MEMORY", 1000)
    spooled, files, real_append, real_tempfile = [], [], WarcWriter.append, fetcher_mod.tempfile.TemporaryFile
    monkeypatch.setattr(WarcWriter, "append", lambda w, rec: spooled.append(rec.payload_path) or real_append(w, rec))
    monkeypatch.setattr(fetcher_mod.tempfile, "TemporaryFile", lambda: files.append(1) or real_tempfile())
    body = (PAGE * 10).encode()
    [r] = capture_urls(db, [server.route("/large", body, chunked=True)])
    assert len(files) == 1  # the raw body went to a temporary file while it streamed in
    assert [p for p in spooled if p] and not any(Path(p).exists() for p in spooled if p)  # compressed via spool
    stored = load_record(db.settings, r.snapshot)
    assert stored.fixity == "ok" and stored.raw_body == body
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(db.settings))])
    assert check.returncode == 0, check.stdout


def test_cdxj_index_is_merged_and_heals_when_stale(db, server):
    from app.storage.warcfiles import index_path

    capture_urls(db, [server.route("/i1", PAGE + "1"), server.route("/i2", PAGE + "2")])
    capture_urls(db, [server.route("/i3", PAGE + "3")])  # merged into the sorted file
    path = index_path(db.settings)
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and lines == sorted(lines)
    path.write_text("\n".join(lines[1:]) + "\n")  # a killed run left the index behind the table
    capture_urls(db, [server.route("/i4", PAGE + "4")])
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines == sorted(lines)
    with db.Session() as s:
        assert {ln.split(" ")[0] for ln in lines} == set(s.scalars(select(Snapshot.surt)))


def test_http10_response_ending_at_connection_close(db, server):
    """No Content-Length, body ends when the server closes (python -m http.server, old servers)."""
    def old_server(h):
        h.close_connection = True
        h.wfile.write(b"HTTP/1.0 200 OK\r\nServer: old\r\nContent-Type: text/html\r\n\r\n" + PAGE.encode())

    server.route("/old", handler=old_server)
    [r] = capture_urls(db, [server.url("/old")])
    assert r.error is None, r.error
    stored = load_record(db.settings, r.snapshot)
    assert stored.body == PAGE.encode() and stored.header("Content-Length") == str(len(PAGE.encode()))
    rec = read_record(db.settings.warc_dir / r.snapshot.warc_file, r.snapshot.offset, r.snapshot.length)
    assert rec.header("WARC-IP-Address") == "127.0.0.1"
    assert rec.block.startswith(b"HTTP/1.0 200 OK\r\n")


def test_citation_ids_are_derived_from_the_warc_records(db, server):
    """Rebuilding the index from the WARC files must give every record the id it was cited by."""
    from warcio.archiveiterator import ArchiveIterator

    from archive.citeid import ALPHABET, citation_id_for_record

    urls = [server.route(f"/derive{i}", f"<p>page {i}</p>") for i in range(3)]
    results = capture_urls(db, urls)
    cited = {r.snapshot.record_id: r.snapshot.citation_id for r in results}
    from_warc = {}
    for path in warc_files(db.settings):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("response", "revisit"):
                    rid = rec.rec_headers.get_header("WARC-Record-ID")
                    from_warc[rid] = citation_id_for_record(rid)
    assert cited and all(from_warc[rid] == cid for rid, cid in cited.items())
    assert len(set(cited.values())) == 3
    assert all(re.fullmatch(f"[{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}", cid) for cid in cited.values())
    assert citation_id_for_record("<urn:uuid:x>", 1) != citation_id_for_record("<urn:uuid:x>", 0)
