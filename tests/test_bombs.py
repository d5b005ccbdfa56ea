"""Bounded decoding: decompression bombs and bodies that do not decode never exhaust memory or break a view.

A 1 GiB page of zeros gzipped to ~1 MB, and the same twice gzipped (~10 KB), go through every path that
reads archived bytes: capture, crawl (the parsers), WARC import, raw replay (`id_`, which must not
decode at all), the framed view, the citation page and a quote in it. Each run happens in a child
process whose peak resident memory (VmHWM) is measured; without the limits a single decode takes more
than 1 GiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib

import pytest

from tests.capture_helpers import REPO, cli_env

GIB = 1 << 30


def _gzip_zeros(n: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 22)
    out = [c.compress(chunk) for _ in range(n // len(chunk))]
    out.append(c.flush())
    return b"".join(out)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bombs")
    single = _gzip_zeros(GIB)
    (d / "single.gz").write_bytes(single)
    double = zlib.compressobj(9, zlib.DEFLATED, 31)
    (d / "double.gz").write_bytes(double.compress(single) + double.flush())
    return d


CHILD = textwrap.dedent('''
    import json, sys, io, hashlib
    from pathlib import Path
    from tests.helpers import LocalServer
    from app.config import Settings
    from app.db import Database
    from app.capture.http import capture_urls
    from app.watch.schedule import crawl
    from app.claims.sources import add_source
    from app.rebuild.importer import import_warcs
    from fastapi.testclient import TestClient
    from app.main import create_app

    bombs = Path(sys.argv[1])
    out = {}
    srv = LocalServer(); srv.start()
    single = (bombs / "single.gz").read_bytes()
    double = (bombs / "double.gz").read_bytes()
    u1 = srv.route("/bomb", single, headers=[("Content-Encoding", "gzip")])
    u2 = srv.route("/double", double, headers=[("Content-Encoding", "gzip, gzip")])
    u3 = srv.route("/badbr", b"this is not brotli at all", headers=[("Content-Encoding", "br")])
    u4 = srv.route("/fine", "<table><tr><th>model</th><th>tok/s</th></tr><tr><td>m</td><td>12</td></tr></table>")
    settings = Settings()
    db = Database(settings); db.upgrade()
    res = capture_urls(db, [u1, u2, u3, u4])
    out["captured"] = [r.ok for r in res]
    with db.session() as s:
        add_source(s, "bomb", u1, "html")
        add_source(s, "fine", u4, "html")
    reps = crawl(db, settings)
    out["crawl"] = {r.name: [r.status, r.error or ""] for r in reps}

    # a WARC file whose one record inflates to 1 GiB, imported after a good file in the same command
    from archive.warcwriter import WarcWriter
    good = Path(settings.data_dir) / "good.warc.gz"
    with WarcWriter(good) as w:
        w.write_response("http://import.test/good", "20261201000000000", b"HTTP/1.1 200 OK\\r\\n\\r\\n",
                         b"good", 4, hashlib.sha256(b"good").digest())
    bad = Path(settings.data_dir) / "bomb.warc.gz"
    head = (b"WARC/1.1\\r\\nWARC-Type: response\\r\\nWARC-Record-ID: <urn:uuid:bomb>\\r\\n"
            b"WARC-Target-URI: http://import.test/bomb\\r\\nWARC-Date: 2026-12-01T00:00:00Z\\r\\n"
            b"Content-Type: application/http; msgtype=response\\r\\nContent-Length: %d\\r\\n\\r\\n" % (GIB + 19))
    import zlib
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(head + b"HTTP/1.1 200 OK\\r\\n\\r\\n")]
    z = bytes(1 << 22)
    parts += [c.compress(z) for _ in range(GIB // len(z))]
    parts.append(c.compress(b"\\r\\n\\r\\n")); parts.append(c.flush())
    bad.write_bytes(b"".join(parts))
    reports = import_warcs(db, [good, bad])
    out["import"] = [[len(r.imported), r.problems] for r in reports]

    app = create_app(settings)
    with TestClient(app, base_url="http://caveat.test") as client:
        for name, r in zip(("bomb", "double", "badbr"), res[:3]):
            snap = r.snapshot
            got = {}
            for view, path in (("raw", f"/web/{snap.timestamp}id_/{snap.url}"), ("frame", f"/web/{snap.timestamp}/{snap.url}"),
                               ("citation", f"/c/{snap.citation_id}"), ("quote", f"/c/{snap.citation_id}?q=zzz")):
                with client.stream("GET", path) as resp:  # the raw bytes: the client must not decode either
                    size = sum(len(c) for c in resp.iter_raw())
                    got[view] = [resp.status_code, size, resp.headers.get("content-encoding")]
            out[name] = got
    out["peak_rss"] = int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]) * 1024
    print(json.dumps(out))
''').replace("GIB", str(GIB))


def test_bombs_and_bad_bodies_are_bounded_everywhere(tmp_path, bombs):
    from app.config import Settings

    settings = Settings(data_dir=tmp_path / "data")
    env = cli_env(settings, CAVEAT_DECODE_MAX_BYTES=str(64 << 20), CAVEAT_MAX_BODY_BYTES=str(8 << 20),
                  CAVEAT_SECRET_KEY="k")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(bombs)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(out, indent=1))
    assert out["captured"] == [True, True, True, True]
    # the crawl of the bomb fails with a message naming the limit; the good source parses
    status, error = out["crawl"]["bomb"]
    assert status == "failed" and "CAVEAT_DECODE_MAX" in error, error
    assert out["crawl"]["fine"][0] in ("ok", "warnings")
    # import: the good file is kept, the bomb record is reported by name of the limit, not a traceback
    (good_n, good_problems), (bomb_n, bomb_problems) = out["import"]
    assert good_n == 1 and good_problems == []
    assert bomb_n == 0 and any("CAVEAT_DECODE_MAX_BYTES" in p for p in bomb_problems), bomb_problems
    for name in ("bomb", "double", "badbr"):
        views = out[name]
        for view, (code, _size, _enc) in views.items():
            assert code in (200, 404), (name, view, code)  # 404: the quote is not on the page; never a 500
        assert views["raw"][0] == 200
        assert views["raw"][2] is not None  # served as stored, still encoded
    assert out["bomb"]["raw"][1] == (bombs / "single.gz").stat().st_size
    # Peak memory: the app, the server and the test client together, well below one decoded bomb.
    assert out["peak_rss"] < 600 * 1024 * 1024, out["peak_rss"]
