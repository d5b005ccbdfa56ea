"""Watching: N sources (small pages on 127.0.0.1) due at once, crawled by 2 `caveat worker` processes
through the job queue on PostgreSQL, against `caveat crawl` of the same sources directly, same run.

Both sides run on PostgreSQL (a fresh database each, dropped afterwards), each in its own data folder,
with the same pages: distinct small JSON boards (one entry each), so every crawl captures, parses,
stores, audits and looks for changes. The per-host delay is 0 on both sides: all N sources are on one
host (127.0.0.1), where the politeness delay would by design spread them over N seconds.

Timed, direct: `caveat crawl` (one process) from start to exit.
Timed, queue: from the moment the sources are due until the last crawl finished (its `finished_at`):
2 `caveat worker --once` processes start (their start-up is inside the timed part), their
housekeeping claims and queues the due sources, and they share the jobs; they leave once nothing is
waiting, running or due (the idle rounds after the last crawl are not timed).
Checked: every page fetched exactly once on each side (the server counts), one crawl row per source,
0 duplicates.

    .venv/bin/python bench/watch.py                  # 1,000 sources
    .venv/bin/python bench/watch.py --sources 200
    .venv/bin/python bench/watch.py --postgres postgresql+psycopg2://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pgtemp import temporary_database  # noqa: E402

CAVEAT = [sys.executable, "-c", "from app.cli import main; main()"]


def board(i: int) -> bytes:
    return json.dumps([{"hfId": f"org/Model-{i}-7B", "hardware": {"gpuName": "RTX 4090", "gpuCount": 1},
                        "engineName": "vLLM", "engineVersion": "0.6.0", "quantization": "FP8",
                        "tokSOut": 100.0 + i / 10, "engineFlags": {"tensorParallel": 1, "concurrency": 1},
                        "submitter": "bench"}]).encode()


class Pages:
    def __init__(self, n: int):
        self.hits: collections.Counter = collections.Counter()
        lock = threading.Lock()
        hits = self.hits
        bodies = {f"/s/{i}": board(i) for i in range(n)}

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                body = bodies.get(self.path)
                with lock:
                    hits[self.path] += 1
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"


def env_for(data: Path, url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAVEAT_")}
    env.update(CAVEAT_DATA_DIR=str(data), CAVEAT_DATABASE_URL=url, CAVEAT_ALLOW_PRIVATE_ADDRESSES="1",
               CAVEAT_HOST_DELAY="0", CAVEAT_WORKER_POLL="0.5", CAVEAT_SCHEDULE_JITTER="0")
    return env


def setup(data: Path, url: str, base: str, n: int, *, due: bool) -> None:
    from app.config import Settings
    from app.db import Database
    from app.models import utcnow
    from app.watch import schedule
    from app.claims.sources import add_source

    subprocess.run([*CAVEAT, "init"], env=env_for(data, url), check=True, capture_output=True)
    db = Database(Settings(data_dir=data, database_url=url))
    with db.Session.begin() as s:
        for i in range(n):
            src = add_source(s, f"s{i}", f"{base}/s/{i}", "json")
            if due:
                schedule.set_schedule(s, src, 3600, now=utcnow() + timedelta(days=1))  # not due yet
    db.dispose()


def make_due(url: str, data: Path) -> None:
    from sqlalchemy import update

    from app.config import Settings
    from app.db import Database
    from app.models import Source, utcnow

    db = Database(Settings(data_dir=data, database_url=url))
    with db.Session.begin() as s:
        s.execute(update(Source).values(next_crawl_at=utcnow() - timedelta(seconds=1)))
    db.dispose()
    return time.time()


def last_finished(url: str, data: Path) -> float:
    from sqlalchemy import func, select

    from app.config import Settings
    from app.db import Database
    from app.models import Crawl

    db = Database(Settings(data_dir=data, database_url=url))
    with db.Session() as s:
        at = s.scalar(select(func.max(Crawl.finished_at)))
    db.dispose()
    return at.timestamp()


def counts(url: str, data: Path) -> dict:
    from sqlalchemy import func, select

    from app.config import Settings
    from app.db import Database
    from app.models import Crawl, Snapshot

    db = Database(Settings(data_dir=data, database_url=url))
    with db.Session() as s:
        per_source = s.execute(select(Crawl.source_id, func.count(Crawl.id)).group_by(Crawl.source_id)).all()
        ok = s.scalar(select(func.count(Crawl.id)).where(Crawl.status == "ok"))
        snaps = s.scalar(select(func.count(Snapshot.id)))
        files = sorted({f for f in s.scalars(select(Snapshot.warc_file).distinct())})
    db.dispose()
    return {"crawled_twice": sum(1 for _, c in per_source if c > 1), "ok": ok, "snapshots": snaps,
            "series": sorted({f.split("-")[1] for f in files if f.startswith("caveat-w_")})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--postgres", default=os.environ.get("CAVEAT_BENCH_POSTGRES_URL",
                                                         "postgresql+psycopg2://postgres@127.0.0.1:5432/test"))
    args = ap.parse_args()
    n = args.sources
    pages = Pages(n)
    tmp = Path(tempfile.mkdtemp(prefix="caveat-watch-bench-"))
    print(f"{n:,} sources on {pages.base}, {args.workers} workers, PostgreSQL", flush=True)

    with temporary_database(args.postgres) as url_direct:
        data = tmp / "direct"
        setup(data, url_direct, pages.base, n, due=False)
        pages.hits.clear()
        t = time.perf_counter()
        r = subprocess.run([*CAVEAT, "crawl", "--json"], env=env_for(data, url_direct), capture_output=True, text=True)
        direct = time.perf_counter() - t
        direct_hits = dict(pages.hits)
        c_direct = counts(url_direct, data)
        if r.returncode != 0:
            print(r.stderr[-2000:], file=sys.stderr)
        print(f"direct  `caveat crawl`: {direct:7.1f} s  ({n / direct:6.1f} sources/s)  ok {c_direct['ok']:,}", flush=True)

    with temporary_database(args.postgres) as url_queue:
        data = tmp / "queue"
        setup(data, url_queue, pages.base, n, due=True)
        pages.hits.clear()
        started_at = make_due(url_queue, data)
        procs = [subprocess.Popen([*CAVEAT, "worker", "--once"], env=env_for(data, url_queue),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for _ in range(args.workers)]
        # The workers' housekeeping queues the due sources; --once workers leave when nothing is waiting,
        # running or due. Timed until the last crawl finished (their exit adds up to two idle rounds).
        errs = [p.communicate()[1] for p in procs]
        c_queue = counts(url_queue, data)
        queue = last_finished(url_queue, data) - started_at
        queue_hits = dict(pages.hits)
        print(f"queue   {args.workers} workers:    {queue:7.1f} s  ({n / queue:6.1f} sources/s)  ok {c_queue['ok']:,}  "
              f"series {', '.join(c_queue['series'])}", flush=True)
        for e in errs:
            if "Traceback" in e:
                print(e[-2000:], file=sys.stderr)

    dup_direct = sum(1 for v in direct_hits.values() if v > 1)
    dup_queue = sum(1 for v in queue_hits.values() if v > 1) + c_queue["crawled_twice"]
    missing = n - len(queue_hits)
    print(f"duplicates: queue {dup_queue} (pages fetched twice or sources crawled twice), direct {dup_direct}; "
          f"not crawled by the queue: {missing}")
    ratio = queue / direct
    print(f"ratio queue/direct wall time: {ratio:.3f} (goal <= 1.10: {'met' if ratio <= 1.10 else 'NOT met'}); "
          f"0 duplicates: {'met' if dup_queue == 0 and missing == 0 else 'NOT met'}")


if __name__ == "__main__":
    main()
