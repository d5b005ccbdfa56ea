"""`caveat export-wacz`: the package passes `wacz validate`, pywb replays it, pages.jsonl is present and
complete (checked here because the validator does not), and the WARC digests still verify."""

from __future__ import annotations

import gzip
import json
import subprocess
import zipfile

import httpx
import pytest

from app.models import Source
from app.capture.http import capture_urls
from archive.importer import scan_warc
from tests.refbin import Pywb, tool

PAGE = "<html><head><title>Board {n}</title></head><body><p>Model X runs at {n}00 tok/s steady.</p></body></html>"


@pytest.fixture
def archived(app, server):
    db = app.state.db
    with db.Session() as s:
        src = Source(name="board", url=server.url("/b1"))
        s.add(src)
        s.commit()
        sid = src.id
    urls = [server.route(f"/b{n}", PAGE.format(n=n)) for n in (1, 2)]
    first = capture_urls(db, urls, source_id=sid)
    again = capture_urls(db, [urls[0]], source_id=sid)  # same bytes: a revisit record
    other = capture_urls(db, [server.route("/other", "<p>not this source</p>")])
    assert all(r.ok for r in first + again + other)
    assert again[0].snapshot.record_type == "revisit"
    return urls, [r.snapshot for r in first + again], other[0].snapshot


def _read(z: zipfile.ZipFile, name: str) -> bytes:
    return z.read(name)


@pytest.mark.referee
def test_export_validates_has_complete_pages_and_replays_in_pywb(tmp_path, cli, archived):
    urls, snaps, other = archived
    out = tmp_path / "board.wacz"
    r = cli("export-wacz", str(out), "--source", "board")
    assert r.exit_code == 0, r.stderr
    assert "3 snapshots" in r.stdout
    v = subprocess.run([tool("wacz"), "validate", "-f", str(out)], capture_output=True, text=True)
    assert v.returncode == 0 and "is valid" in v.stdout, v.stdout + v.stderr

    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        assert {"datapackage.json", "pages/pages.jsonl", "indexes/index.cdx.gz", "indexes/index.idx"} <= names
        lines = _read(z, "pages/pages.jsonl").decode().splitlines()
        header, pages = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
        assert header["format"] == "json-pages-1.0"
        assert sorted(p["id"] for p in pages) == sorted(s.citation_id for s in snaps)
        assert other.citation_id not in {p["id"] for p in pages}
        for p, s in zip(sorted(pages, key=lambda p: p["id"]), sorted(snaps, key=lambda s: s.citation_id)):
            assert p["url"] == s.url and p["ts"].startswith(f"{s.timestamp[:4]}-") and p["text"]
            n = s.url[-1]
            assert p["title"] == f"Board {n}" and f"Model X runs at {n}00 tok/s steady." in p["text"]
        cdx = gzip.decompress(_read(z, "indexes/index.cdx.gz")).decode().splitlines()
        assert len(cdx) == 3  # two responses and the revisit (its original is one of the responses)
        assert sum('"warc/revisit"' in line for line in cdx) == 1
        warc_names = [n for n in names if n.startswith("archive/")]
        assert len(warc_names) == 1
        z.extract(warc_names[0], tmp_path / "x")
    extracted = tmp_path / "x" / warc_names[0]
    scanned = list(scan_warc(extracted))
    assert scanned and all(s.ok for s in scanned), [s.describe() for s in scanned if not s.ok]
    assert all(s.record.block_digest_ok for s in scanned)
    check = subprocess.run([tool("warcio"), "check", str(extracted)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

    with Pywb(tmp_path / "pywb", [out], unpack_wacz=True) as wb:
        for s in snaps:
            resp = httpx.get(f"{wb.base}/{s.timestamp[:14]}id_/{s.url}")
            assert resp.status_code == 200
            assert f"{s.url[-1]}00 tok/s".encode() in resp.content


def test_export_filters_and_reports_bad_records(tmp_path, cli, archived, app):
    urls, snaps, other = archived
    assert cli("export-wacz", str(tmp_path / "none.wacz"), "--since", "2999-01-01").exit_code == 1
    r = cli("export-wacz", str(tmp_path / "x.wacz"), "--since", "soon")
    assert r.exit_code == 1 and "YYYY-MM-DD" in r.stderr
    assert "no source named" in cli("export-wacz", str(tmp_path / "x.wacz"), "--source", "nope").stderr
    # damage one record: it is left out and named, the rest is exported
    victim = snaps[1]
    path = app.state.settings.warc_dir / victim.warc_file
    data = bytearray(path.read_bytes())
    data[victim.offset + victim.length // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    r = cli("export-wacz", str(tmp_path / "all.wacz"))
    assert r.exit_code == 1 and victim.citation_id in r.stderr
    with zipfile.ZipFile(tmp_path / "all.wacz") as z:
        ids = {json.loads(x)["id"] for x in z.read("pages/pages.jsonl").decode().splitlines()[1:]}
    assert victim.citation_id not in ids and other.citation_id in ids
