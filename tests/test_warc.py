"""archive/: the WARC writer, reader, torn-tail scan and SURT keys, checked by round trips and referees."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

from archive import digests
from archive.reader import RecordUnreadable, read_record
from archive.recovery import scan_members, truncate_tail
from archive.surt import surt
from archive.timestamps import bump, parse_ts17, ts17, warc_date
from archive.warcwriter import WarcWriter
from tests.capture_helpers import ref_tool, run

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\n"
BODY = b"hello world"
TS = "20261201123456789"


def write_sample(path, level=6):
    with WarcWriter(path, gzip_level=level) as w:
        resp = w.write_response("http://example.org/", TS, HEAD, io.BytesIO(BODY), len(BODY),
                                hashlib.sha256(BODY).digest(), ip="93.184.216.34",
                                record_id="<urn:uuid:00000000-0000-0000-0000-000000000001>")
        req = w.write_request("http://example.org/", TS, b"GET / HTTP/1.1\r\nHost: example.org\r\n\r\n",
                              concurrent_to=resp.record_id)
        rev = w.write_revisit("http://example.org/", bump(TS), HEAD, hashlib.sha256(BODY).digest(),
                              refers_to=resp.record_id, refers_to_uri="http://example.org/", refers_to_ts=TS)
    return resp, req, rev


def test_round_trip_exact_bytes(tmp_path):
    path = tmp_path / "a.warc.gz"
    resp, req, rev = write_sample(path)
    rec = read_record(path, resp.offset, resp.length)
    assert rec.ok and rec.block_digest_ok and rec.payload_digest_ok
    assert rec.warc_type == "response" and rec.payload == BODY and rec.http_status == 200
    assert rec.block == HEAD + BODY
    assert rec.header("WARC-Date") == "2026-12-01T12:34:56.789Z"
    assert rec.header("WARC-Record-ID") == "<urn:uuid:00000000-0000-0000-0000-000000000001>"
    assert rec.header("WARC-Payload-Digest") == digests.label(hashlib.sha256(BODY).digest())
    assert rec.header("WARC-IP-Address") == "93.184.216.34"
    r2 = read_record(path, req.offset, req.length)
    assert r2.warc_type == "request" and r2.header("WARC-Concurrent-To") == resp.record_id
    r3 = read_record(path, rev.offset, rev.length)
    assert r3.warc_type == "revisit" and r3.payload == b"" and r3.block == HEAD and r3.ok
    assert r3.header("WARC-Refers-To-Date") == warc_date(TS)
    # Each record is its own gzip member and members tile the file exactly.
    scan = scan_members(path)
    assert [m[0] for m in scan.members][1:] == [resp.offset, req.offset, rev.offset]
    assert scan.good_end == path.stat().st_size == rev.offset + rev.length


def test_warcio_reads_what_we_write(tmp_path):
    path = tmp_path / "b.warc.gz"
    write_sample(path)
    out = run([ref_tool("warcio"), "check", "-v", str(path)])
    assert out.returncode == 0 and out.stdout.count("digest pass") == 3, out.stdout
    idx = run([ref_tool("warcio"), "index", "-f", "warc-type,warc-date,length,offset", str(path)])
    types = [json.loads(line)["warc-type"] for line in idx.stdout.splitlines()]
    assert types == ["warcinfo", "response", "request", "revisit"]


def test_flipped_byte_is_a_digest_mismatch(tmp_path):
    path = tmp_path / "c.warc.gz"
    with WarcWriter(path, gzip_level=0) as w:  # stored deflate blocks: a flipped byte survives gunzip...
        resp = w.write_response("http://example.org/", TS, HEAD, BODY, len(BODY), hashlib.sha256(BODY).digest())
    data = bytearray(path.read_bytes())
    pos = data.index(b"hello world", resp.offset)
    data[pos] ^= 0x20
    path.write_bytes(bytes(data))
    # ...but not the gzip CRC, so the reader reports corruption rather than returning the bytes.
    with pytest.raises(RecordUnreadable) as info:
        read_record(path, resp.offset, resp.length)
    assert info.value.kind == "corrupt"


def test_digest_mismatch_with_valid_gzip(tmp_path):
    path = tmp_path / "d.warc.gz"
    with WarcWriter(path) as w:
        resp = w.write_response("http://example.org/", TS, HEAD, BODY, len(BODY), hashlib.sha256(b"other").digest())
    rec = read_record(path, resp.offset, resp.length)
    assert rec.payload_digest_ok is False and any("payload digest mismatch" in p for p in rec.problems)


def test_truncated_record_is_reported(tmp_path):
    path = tmp_path / "e.warc.gz"
    resp, _, rev = write_sample(path)
    truncate_tail(path, rev.offset + rev.length // 2)
    with pytest.raises(RecordUnreadable) as info:
        read_record(path, rev.offset, rev.length)
    assert info.value.kind == "truncated"
    assert read_record(path, resp.offset, resp.length).ok  # earlier records stay readable
    scan = scan_members(path, resp.offset)
    assert scan.good_end == rev.offset and scan.torn_bytes == rev.length // 2
    with pytest.raises(RecordUnreadable) as missing:
        read_record(tmp_path / "nope.warc.gz", 0, 10)
    assert missing.value.kind == "missing"


def test_writer_appends_and_starts_new_files_with_warcinfo(tmp_path):
    path = tmp_path / "f.warc.gz"
    write_sample(path)
    size = path.stat().st_size
    with WarcWriter(path) as w:  # reopening appends; no second warcinfo
        assert w.size == size and w.has_records
    kinds = [read_record(path, o, n).warc_type for o, n in scan_members(path).members]
    assert kinds == ["warcinfo", "response", "request", "revisit"]


def test_digest_labels_parse_in_every_encoding():
    raw = hashlib.sha256(b"x").digest()
    assert digests.parse(digests.label(raw)) == ("sha256", raw)
    assert digests.parse("sha256:" + raw.hex()) == ("sha256", raw)
    sha1 = hashlib.sha1(b"x").digest()
    import base64

    assert digests.parse("sha1:" + base64.b32encode(sha1).decode()) == ("sha1", sha1)
    with pytest.raises(ValueError):
        digests.parse("nonsense")


def test_timestamps():
    assert ts17(parse_ts17(TS)) == TS
    assert bump("20261231235959999") == "20270101000000000"
    with pytest.raises(ValueError):
        parse_ts17("2026")


SURT_CASES = [
    "http://127.0.0.1:8080/a/b?z=1&a=2", "https://www.Example.com/Path?b=2&a=1#frag", "http://example.com",
    "http://example.com:80/x", "https://example.com:443/", "http://sub.example.co.uk/a%20b/",
    "http://localhost:5000/p;x?", "http://[::1]:8080/x", "http://example.com/?a=b&a=a", "http://EXAMPLE.com./x",
    "http://example.com/a/../b/./c", "http://example.com/%7Efoo", "http://www2.example.com/",
    "http://example.com/a b/%2541", "http://example.com/dir/", "https://github.com/ggml-org/llama.cpp/discussions/4167",
    "http://x.org/caf%C3%A9?q=%E2%82%AC", "http://127.0.0.1:5/redirect/1?x=1&&y=2", "http://example.com/a//b",
    "https://localmaxxing.example/api/leaderboard?sort=tokSOut&order=desc",
]


def test_surt_matches_the_reference_library():
    code = "import json,sys,surt; print(json.dumps([surt.surt(u) for u in json.load(sys.stdin)]))"
    out = run([ref_tool("python"), "-c", code], input=json.dumps(SURT_CASES))
    assert out.returncode == 0, out.stderr
    assert [surt(u) for u in SURT_CASES] == json.loads(out.stdout)


def test_spooled_payload_gives_the_same_record_and_redating_keeps_it_valid(tmp_path):
    """A payload compressed through a spool file (large bodies) must give the same record as one
    compressed in memory; re-dating a built record changes only its WARC-Date."""
    import zlib

    from archive.warcwriter import build_response

    body = b"<tr><td>GLM</td><td>391.2</td></tr>\n" * 3000
    sha = hashlib.sha256(body).digest()
    rid = "<urn:uuid:00000000-0000-0000-0000-000000000002>"
    in_memory = build_response("http://example.org/", TS, HEAD, body, len(body), sha, record_id=rid)
    spooled = build_response("http://example.org/", TS, HEAD, io.BytesIO(body), len(body), sha, record_id=rid,
                             spool_dir=tmp_path)
    assert spooled.payload_path and Path(spooled.payload_path).exists() and not in_memory.payload_path
    with WarcWriter(tmp_path / "a.warc.gz") as w:
        a = w.append(in_memory)
        later = w.append(in_memory.at(bump(TS)))
    with WarcWriter(tmp_path / "b.warc.gz") as w:
        b = w.append(spooled)
    assert not Path(spooled.payload_path).exists()  # the spool file is consumed by the append
    member = lambda p, r: p.read_bytes()[r.offset:r.offset + r.length]  # noqa: E731
    assert zlib.decompress(member(tmp_path / "b.warc.gz", b), 31) == zlib.decompress(member(tmp_path / "a.warc.gz", a), 31)
    assert a.block_digest == b.block_digest == later.block_digest
    rec = read_record(tmp_path / "b.warc.gz", b.offset, b.length)
    assert rec.ok and rec.payload == body
    moved = read_record(tmp_path / "a.warc.gz", later.offset, later.length)
    assert moved.ok and moved.payload == body and moved.header("WARC-Date") == warc_date(bump(TS))
    assert run(["gzip", "-t", str(tmp_path / "a.warc.gz")]).returncode == 0
    check = run([ref_tool("warcio"), "check", str(tmp_path / "a.warc.gz"), str(tmp_path / "b.warc.gz")])
    assert check.returncode == 0, check.stdout


def test_a_write_that_fails_midway_leaves_no_partial_record(tmp_path):
    """Disk full half-way through a record (here: a file-size limit): the file is cut back to the
    last whole record and the writer goes on at the right offset."""
    import subprocess
    import sys

    script = r"""
import os, resource, signal, sys, hashlib
sys.path.insert(0, sys.argv[2])
from archive.warcwriter import WarcWriter
from archive.reader import read_record
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path = sys.argv[1]
w = WarcWriter(path)
first = w.write_response("http://example.org/a", "20261201000000000", b"HTTP/1.1 200 OK\r\n\r\n", b"a" * 100, 100,
                         hashlib.sha256(b"a" * 100).digest())
w.sync()
end = os.path.getsize(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (end + 2000, resource.RLIM_INFINITY))
big = os.urandom(200_000)
try:
    w.write_response("http://example.org/big", "20261201000000001", b"HTTP/1.1 200 OK\r\n\r\n", big, len(big),
                     hashlib.sha256(big).digest())
except OSError as exc:
    print("failed:", exc.errno)
print("size", os.path.getsize(path), end, w.size)
small = w.write_response("http://example.org/b", "20261201000000002", b"HTTP/1.1 200 OK\r\n\r\n", b"b", 1,
                         hashlib.sha256(b"b").digest())
w.close()
print("small", small.offset == end, read_record(path, small.offset, small.length).ok)
"""
    import os

    repo = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "full.warc.gz"), repo], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"failed: {__import__('errno').EFBIG}"
    size, end, pos = map(int, lines[1].split()[1:])
    assert size == end == pos
    assert lines[2] == "small True True"
    assert run(["gzip", "-t", str(tmp_path / "full.warc.gz")]).returncode == 0
    assert os.path.getsize(tmp_path / "full.warc.gz") > end
