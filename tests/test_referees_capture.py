"""The field's own tools judge our WARC files: warcio check, gzip -t, cdxj-indexer and pywb replay."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time

import httpx
import pytest

from app.capture.http import capture_urls
from app.storage.warcfiles import index_path
from archive.cdxj import read_index
from tests.capture_helpers import ref_tool, run, warc_files

pytestmark = pytest.mark.referee

PAGE = "<html><head><title>Board</title></head><body>" + "<tr><td>GLM</td><td>391.2</td></tr>\n" * 300 + "</body>"


@pytest.fixture
def captured(db, server):
    """A small archive covering every shape of response the capture code writes."""
    urls = {
        "plain": server.route("/plain", PAGE),
        "gzip": server.route("/gzip", PAGE.replace("GLM", "Qwen"), gzip_body=True),
        "chunked": server.route("/chunked", PAGE.replace("GLM", "Llama"), chunked=True),
        "redirect": server.redirect("/old", "/plain"),
        "missing": server.url("/nope"),
        "sjis": server.route("/sjis", "速度 131 t/s".encode("shift_jis"), content_type="text/html; charset=shift_jis"),
    }
    results = capture_urls(db, list(urls.values()))
    results += capture_urls(db, [urls["plain"], urls["gzip"]])  # revisits
    assert all(r.error is None for r in results)
    return urls, results


def test_warcio_check_and_gzip_test_pass(db, captured):
    files = warc_files(db.settings)
    assert files
    check = run([ref_tool("warcio"), "check", "-v", *map(str, files)])
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout and "fail" not in check.stdout.lower()
    for f in files:
        gz = run(["gzip", "-t", str(f)])
        assert gz.returncode == 0, gz.stderr


def test_cdxj_indexer_agrees_with_our_index(db, captured):
    ours = {(k, ts, int(d["offset"]), int(d["length"]), d["filename"]) for k, ts, d in read_index(index_path(db.settings))}
    out = run([ref_tool("cdxj-indexer"), *[f.name for f in warc_files(db.settings)]], cwd=db.settings.warc_dir)
    assert out.returncode == 0, out.stderr
    theirs = set()
    for line in out.stdout.splitlines():
        k, ts, d = line.split(" ", 2)
        data = json.loads(d)
        theirs.add((k, ts, int(data["offset"]), int(data["length"]), data["filename"]))
    assert ours == theirs
    assert len(ours) == 9  # 6 URLs, 1 more for the redirect hop, 2 revisits
    lines = index_path(db.settings).read_text().splitlines()
    assert lines == sorted(lines)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_wayback(root) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen([ref_tool("wayback"), "-p", str(port), "-b", "127.0.0.1"], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError("wayback exited: " + proc.stdout.read().decode(errors="replace"))
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc, port
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("wayback did not start within 60 s")


def _raw_get(url: str) -> tuple[int, dict, bytes]:
    with httpx.Client(timeout=30) as c, c.stream("GET", url) as r:
        return r.status_code, dict(r.headers), b"".join(r.iter_raw())


def test_pywb_replays_our_records_byte_for_byte(db, captured, server, tmp_path):
    urls, results = captured
    root = tmp_path / "pywb"
    root.mkdir()
    assert run([ref_tool("wb-manager"), "init", "caps"], cwd=root).returncode == 0
    add = run([ref_tool("wb-manager"), "add", "caps", *map(str, warc_files(db.settings))], cwd=root)
    assert add.returncode == 0, add.stderr
    # A second collection that uses our own CDXJ index instead of one pywb built.
    assert run([ref_tool("wb-manager"), "init", "ours"], cwd=root).returncode == 0
    for f in warc_files(db.settings):
        shutil.copy(f, root / "collections" / "ours" / "archive" / f.name)
    shutil.copy(index_path(db.settings), root / "collections" / "ours" / "indexes" / "index.cdxj")
    proc, port = _start_wayback(root)
    try:
        by_url = {}
        for r in results:
            by_url.setdefault(r.url, r)
        for coll in ("caps", "ours"):
            for name in ("plain", "gzip", "chunked", "sjis"):
                snap = by_url[urls[name]].snapshot
                status, headers, body = _raw_get(
                    f"http://127.0.0.1:{port}/{coll}/{snap.timestamp[:14]}id_/{urls[name]}")
                assert status == 200, (coll, name, status)
                assert body == server.routes["/" + name].body, (coll, name)
                if name == "gzip":
                    assert headers.get("content-encoding") == "gzip"
            # The revisit (second capture of /gzip) replays the original payload.
            revisit = [r for r in results if r.url == urls["gzip"]][-1].snapshot
            assert revisit.record_type == "revisit"
            status, headers, body = _raw_get(
                f"http://127.0.0.1:{port}/{coll}/{revisit.timestamp[:14]}id_/{urls['gzip']}")
            assert status == 200 and body == server.routes["/gzip"].body
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
