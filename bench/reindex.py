"""Reindex speed: ``caveat reindex`` of 10,000 records against ``cdxj-indexer`` over the same WARC files.

A data folder is filled with N distinct 100 KB HTML-like responses (each with its request record), as
Caveat's capture writes them, then its database is dropped. Timed, in the same run: Caveat rebuilding
its whole index from the WARC files alone (``reindex_all(..., reparse=False)``: snapshots with
citation ids, request records, revisits, the CDXJ file) on a fresh database, and the peer,
``cdxj-indexer`` (from ``.venv-ref``), writing a CDXJ index of the same files. The ratio printed is
peer time / our time (>= 1 means Caveat is at least as fast).

    .venv/bin/python bench/reindex.py [--records 10000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from capture import make_page  # noqa: E402
from pgtemp import temporary_database  # noqa: E402

from app.config import Settings  # noqa: E402
from app.db import Database  # noqa: E402
from app.rebuild.reindex import reindex_all  # noqa: E402
from archive.timestamps import ts17  # noqa: E402
from archive.warcwriter import WarcWriter  # noqa: E402

REF_BIN = Path(os.environ.get("CAVEAT_REF_BIN", str(ROOT / ".venv-ref" / "bin")))


def fill(warc_dir: Path, n: int, rotate: int) -> int:
    """Write n response+request pairs as capture does; returns the bytes written."""
    from datetime import datetime, timedelta, timezone

    warc_dir.mkdir(parents=True, exist_ok=True)
    start = datetime(2026, 12, 1, tzinfo=timezone.utc)
    w, total, files = None, 0, 0
    for i in range(n):
        if w is None or w.size >= rotate:
            if w is not None:
                total += w.size
                w.close()
            files += 1
            w = WarcWriter(warc_dir / f"caveat-{ts17(start + timedelta(hours=files))}-{files:06x}.warc.gz",
                           gzip_level=5)
        body = make_page(i)
        url = f"http://bench.test/page/{i}"
        ts = ts17(start + timedelta(seconds=i))
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                + str(len(body)).encode() + b"\r\n\r\n")
        rec = w.write_response(url, ts, head, body, len(body), hashlib.sha256(body).digest())
        w.write_request(url, ts, b"GET /page/%d HTTP/1.1\r\nHost: bench.test\r\n\r\n" % i,
                        concurrent_to=rec.record_id)
    total += w.size
    w.close()
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--postgres", default=None, help="PostgreSQL server URL; a temporary database is used")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="caveat-reindex-") as tmp, temporary_database(args.postgres) as pg:
        data = Path(tmp) / "data"
        settings = Settings(data_dir=data, database_url=pg)
        t = time.perf_counter()
        size = fill(settings.warc_dir, args.records, settings.warc_rotate_bytes)
        files = sorted(settings.warc_dir.glob("*.warc.gz"))
        print(f"records: {args.records:,} responses (+ requests), {size / 1e6:,.0f} MB in {len(files)} file(s), "
              f"written in {time.perf_counter() - t:.1f} s; database: {'PostgreSQL' if pg else 'SQLite'}")

        db = Database(settings)
        db.upgrade()
        t = time.perf_counter()
        report = reindex_all(db, reparse=False)
        ours = time.perf_counter() - t
        assert report.indexed == args.records, (report.indexed, report.problems[:3])
        db.dispose()

        out = Path(tmp) / "peer.cdxj"
        t = time.perf_counter()
        with open(out, "wb") as f:
            subprocess.run([str(REF_BIN / "cdxj-indexer"), *map(str, files)], stdout=f, check=True)
        peer = time.perf_counter() - t
        lines = sum(1 for _ in open(out, "rb"))
        print(f"caveat reindex : {ours:6.2f} s  ({args.records / ours:,.0f} records/s; snapshots, request records, "
              f"citation ids, CDXJ)")
        print(f"cdxj-indexer   : {peer:6.2f} s  ({lines:,} CDXJ lines)")
        print(f"ratio (peer / ours): {peer / ours:.2f}x  {'goal met' if peer >= ours else 'GOAL NOT MET'} "
              "(goal: >= 1.00x)")


if __name__ == "__main__":
    main()
