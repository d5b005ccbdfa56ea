"""One long page through the whole crawl: N rows served from 127.0.0.1, captured, parsed from the
archive, stored and audited (``caveat crawl`` of one source), with the time of each stage.

Goal: 100,000 rows within 60 s, linear in the rows (the audit used to build each entry's context from
every other entry of the page: quadratic). Run it at two sizes to see the slope:

    .venv/bin/python bench/rows.py --rows 10000 --rows 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from parse import html_page, rows  # noqa: E402 - bench/ is this script's own folder

import app.crawl.workflow as crawl_service  # noqa: E402

import app.watch.schedule as schedule_service  # noqa: E402
from app.config import Settings  # noqa: E402
from app.db import Database  # noqa: E402
from app.claims.sources import add_source  # noqa: E402
from tests.helpers import LocalServer  # noqa: E402

STAGES = {"capture_urls": "capture", "parse_snapshot": "parse", "store_parse": "store", "audit_entries": "audit"}


def timed_stages() -> dict[str, float]:
    spent: dict[str, float] = {}
    for name, label in STAGES.items():
        fn = getattr(crawl_service, name)

        def wrapper(*a, _fn=fn, _label=label, **k):
            t, c = time.perf_counter(), time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.perf_counter() - t
                spent[_label + " cpu"] = spent.get(_label + " cpu", 0.0) + time.process_time() - c

        setattr(crawl_service, name, wrapper)
    return spent


def crawl_page(page: str, inspect=None):
    """Serve ``page`` from 127.0.0.1 and crawl it as one source on a fresh data folder: (wall seconds, this
    process's CPU seconds, the crawl's report, ``inspect(db)`` run before the folder goes)."""
    with tempfile.TemporaryDirectory(prefix="caveat-rows-") as tmp:
        settings = Settings(data_dir=Path(tmp), allow_private_addresses=True, max_body_bytes=1 << 30)
        db = Database(settings)
        db.upgrade()
        srv = LocalServer()
        srv.start()
        try:
            url = srv.route("/board", page)
            with db.session() as s:
                add_source(s, "board", url, "html")
            t, c = time.perf_counter(), time.process_time()
            report = schedule_service.crawl(db, settings)[0]
            total, cpu = time.perf_counter() - t, time.process_time() - c
            seen = inspect(db) if inspect is not None else None
        finally:
            srv.stop()
            db.dispose()
    return total, cpu, report, seen


def one(n: int, spent: dict[str, float]) -> None:
    spent.clear()
    total, cpu, report, _ = crawl_page(html_page(rows(n)))
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in spent.items() if not k.endswith(" cpu"))
    cpus = ", ".join(f"{k[:-4]} {v:.1f} s" for k, v in spent.items() if k.endswith(" cpu"))
    print(f"{n:>7,} rows: {total:6.1f} s ({1000 * total / n:.2f} ms/row; {stages}); status {report.status}, "
          f"{report.summary.new:,} entries; goal {('met' if total <= 60 else 'NOT met') if n >= 100_000 else 'applies at 100,000 rows'} "
          "(100,000 rows <= 60 s)")
    print(f"{'':>13} this process's CPU time {cpu:.1f} s ({cpus}); wall time above includes waiting for the "
          "other core's load and the disk")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, action="append", help="rows on the page (repeatable); default 10000, 100000")
    args = ap.parse_args()
    spent = timed_stages()
    for n in args.rows or [10_000, 100_000]:
        one(n, spent)


if __name__ == "__main__":
    main()
