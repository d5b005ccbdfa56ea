"""`caveat import-warc`: foreign WARCs (warcio, wget) become snapshots; digests checked on the way in;
bad and truncated files reported record by record while the good records are kept."""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from app.models import Snapshot


def warcio_record(uri: str, body: bytes, *, date: str, status: str = "200 OK", rtype: str = "response",
                  ctype: str = "text/html", tamper: bool = False, gz: bool = True) -> bytes:
    """One record written by warcio (its own sha1 digests); ``tamper`` flips a payload byte after."""
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False)
    headers = StatusAndHeaders(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))],
                               protocol="HTTP/1.1")
    rec = w.create_warc_record(uri, rtype, payload=io.BytesIO(body), http_headers=headers,
                               warc_headers_dict={"WARC-Date": date})
    w.write_record(rec)
    raw = buf.getvalue()
    if tamper:
        i = raw.rindex(body[:8]) + 3
        raw = raw[:i] + bytes([raw[i] ^ 0x20]) + raw[i + 1:]
    return gzip.compress(raw) if gz else raw


def test_warcio_file_imported_digests_checked_bad_record_reported(tmp_path, cli, client, app):
    path = tmp_path / "foreign.warc.gz"
    path.write_bytes(
        warcio_record("http://a.test/one", b"<p>first page</p>", date="2026-05-01T10:00:00Z")
        + warcio_record("http://a.test/bad", b"<p>tampered page</p>", date="2026-05-01T10:00:01Z", tamper=True)
        + warcio_record("http://a.test/two", b'{"tps": 412}', date="2026-05-01T10:00:02.250Z",
                        ctype="application/json"))
    r = cli("import-warc", str(path))
    assert r.exit_code == 1
    assert "bad record" in r.stderr and "http://a.test/bad" in r.stderr and "digest mismatch" in r.stderr
    assert "2 imported, 0 skipped, 1 bad" in r.stderr
    path.unlink()  # the copy in our store is all that is needed now
    with app.state.db.Session() as s:
        rows = {x.url: x for x in s.query(Snapshot).all()}
    assert set(rows) == {"http://a.test/one", "http://a.test/two"}
    two = rows["http://a.test/two"]
    assert two.timestamp == "20260501100002250" and two.origin == "import" and two.mime == "application/json"
    assert two.citation_id in r.stdout
    raw = client.get(f"/web/{two.timestamp}id_/http://a.test/two")
    assert raw.status_code == 200 and raw.content == b'{"tps": 412}'
    assert client.get(f"/c/{two.citation_id}.json").json()["fixity"] == "ok"
    # importing the same file again is harmless
    path.write_bytes(warcio_record("http://a.test/one", b"<p>first page</p>", date="2026-05-01T10:00:00Z"))
    assert cli("import-warc", str(path)).exit_code == 0


def test_truncated_file_keeps_the_records_before_the_cut(tmp_path, cli, app):
    good = [warcio_record(f"http://b.test/{i}", f"<p>page {i}</p>".encode() * 200, date=f"2026-05-01T10:00:0{i}Z")
            for i in range(3)]
    data = b"".join(good)
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(data[: len(good[0]) + len(good[1]) + len(good[2]) // 2])
    r = cli("import-warc", str(path))
    assert r.exit_code == 1 and "truncated" in r.stderr
    assert f"offset {len(good[0]) + len(good[1])}" in r.stderr
    with app.state.db.Session() as s:
        assert sorted(x.url for x in s.query(Snapshot).all()) == ["http://b.test/0", "http://b.test/1"]


def test_corrupt_member_in_the_middle_is_skipped(tmp_path, cli, app):
    recs = [warcio_record(f"http://c.test/{i}", f"<p>page {i}</p>".encode() * 100, date=f"2026-05-01T10:00:0{i}Z")
            for i in range(3)]
    mid = bytearray(recs[1])
    for j in range(20, 60):
        mid[j] ^= 0xA5
    path = tmp_path / "mid.warc.gz"
    path.write_bytes(recs[0] + bytes(mid) + recs[2])
    r = cli("import-warc", str(path))
    assert r.exit_code == 1 and "damaged gzip" in r.stderr
    with app.state.db.Session() as s:
        assert sorted(x.url for x in s.query(Snapshot).all()) == ["http://c.test/0", "http://c.test/2"]


def test_uncompressed_warc_and_missing_file(tmp_path, cli, app):
    path = tmp_path / "plain.warc"
    path.write_bytes(warcio_record("http://d.test/", b"plain", date="2026-05-01T10:00:00Z", gz=False,
                                   ctype="text/plain"))
    assert cli("import-warc", str(path)).exit_code == 0
    r = cli("import-warc", str(tmp_path / "nope.warc.gz"))
    assert r.exit_code == 1 and "no such file" in r.stderr


@pytest.mark.skipif(shutil.which("wget") is None, reason="wget not installed (apt-get install wget)")
def test_wget_warc_capture_is_imported_and_replays(tmp_path, server, cli, client, app):
    page = "<html><head><title>wget board</title></head><body><p>Steady state 180 tok/s.</p></body></html>"
    url = server.route("/wboard", page)
    subprocess.run(["wget", "-q", "--no-verbose", "--tries=1", "--warc-file", str(tmp_path / "wgot"),
                    "-O", str(tmp_path / "page.html"), url], check=True, cwd=tmp_path, timeout=60)
    warc = tmp_path / "wgot.warc.gz"
    r = cli("import-warc", str(warc))
    assert r.exit_code == 0, r.stderr
    warc.unlink()
    with app.state.db.Session() as s:
        snap = s.query(Snapshot).filter(Snapshot.url == url).one()
    raw = client.get(f"/web/{snap.timestamp}id_/{url}")
    assert raw.status_code == 200 and raw.text == page
    q = client.get(f"/c/{snap.citation_id}", params={"q": "Steady state 180 tok/s."})
    assert q.status_code == 200 and "<mark" in q.text


def test_revisit_is_imported_and_replays_its_originals_bytes(tmp_path, cli, client, app):
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    body = b"<p>same bytes twice</p>"
    headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                               protocol="HTTP/1.1")
    orig = w.create_warc_record("http://e.test/", "response", payload=io.BytesIO(body), http_headers=headers,
                                warc_headers_dict={"WARC-Date": "2026-05-01T10:00:00Z"})
    w.write_record(orig)
    rev = w.create_revisit_record("http://e.test/", digest=orig.rec_headers.get_header("WARC-Payload-Digest"),
                                  refers_to_uri="http://e.test/", refers_to_date="2026-05-01T10:00:00Z",
                                  http_headers=headers, warc_headers_dict={"WARC-Date": "2026-06-01T10:00:00Z"})
    w.write_record(rev)
    orphan = w.create_revisit_record("http://f.test/", digest="sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                                     refers_to_uri="http://f.test/", refers_to_date="2026-05-01T10:00:00Z",
                                     http_headers=headers, warc_headers_dict={"WARC-Date": "2026-06-01T10:00:00Z"})
    w.write_record(orphan)
    path = tmp_path / "rev.warc.gz"
    path.write_bytes(buf.getvalue())
    r = cli("import-warc", str(path))
    assert r.exit_code == 1 and "import the WARC holding the original first" in r.stderr
    with app.state.db.Session() as s:
        snap = s.query(Snapshot).filter(Snapshot.record_type == "revisit").one()
        assert snap.refers_to.url == "http://e.test/" and snap.sha256 == snap.refers_to.sha256
    assert client.get(f"/web/{snap.timestamp}id_/http://e.test/").content == body
