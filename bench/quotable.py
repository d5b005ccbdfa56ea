"""Benchmark `GET /api/recipes/{id}/quotable` over 100,000 audited entries, on SQLite and PostgreSQL,
with Datasette serving the same `entries` table (one row by primary key) as the peer.

    .venv/bin/python bench/quotable.py                      # SQLite + PostgreSQL + Datasette
    .venv/bin/python bench/quotable.py --backends sqlite --seconds 5

The data goes through the real pipeline: parsed entries stored by `store_parse` (ladders of six
draft widths per recipe, the seed's shape), then `audit_all`. The server is `caveat serve --workers 2`
on 127.0.0.1; the load comes from a second process: 32 keep-alive connections on asyncio streams,
each sending its next request as soon as the last answer arrived, for a bounded time. Datasette runs
from its own venv (default `.venv-bench`, install it with `python -m venv .venv-bench &&
.venv-bench/bin/pip install datasette`). Prints one line per target and a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pgtemp import temporary_database  # noqa: E402 - bench/ is this script's own folder

PG_DEFAULT = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
LADDER = [(8, 0.30), (12, 0.44), (20, 0.48), (20, 0.51), (28, 0.80), (64, 1.0)]


# -- data ------------------------------------------------------------------------------------------
def build(settings, n_entries: int) -> list[str]:
    from sqlalchemy import select

    from app.db import Database
    from app.models import Recipe, Snapshot, Source, utcnow
    from app.audit.engine import audit_all
    from app.claims.store import store_parse
    from archive.citeid import new_citation_id
    from scrapers.fields import ParsedEntry, ParseResult

    db = Database(settings)
    db.upgrade()
    rng = random.Random(7)
    per_page = 2004
    made = 0
    page = 0
    t0 = time.time()
    while made < n_entries:
        with db.session() as s:
            src = Source(name=f"board-{page}", url=f"https://board{page}.test/")
            s.add(src)
            s.flush()
            snap = Snapshot(citation_id=new_citation_id(), url=src.url, surt=f"test,board{page})/",
                            timestamp=utcnow().strftime("%Y%m%d%H%M%S%f")[:17], captured_at=utcnow(), status=200,
                            mime="text/html", warc_file="bench.warc.gz", offset=0, length=1,
                            record_id=f"<urn:uuid:bench-{page}>", sha256="0" * 64)
            s.add(snap)
            s.flush()
            entries = []
            while len(entries) < per_page and made + len(entries) < n_entries:
                r = made + len(entries)
                top = rng.uniform(80, 1200)
                base = dict(model=f"Model-{r // 6}", hardware=rng.choice(["RTX PRO 6000", "H100", "RTX 4090"]),
                            gpu_count=rng.choice([1, 2, 4]), engine=rng.choice(["SGLang", "vLLM", "llama.cpp"]),
                            quantization="NVFP4", concurrency=1, context_length=rng.choice([8192, 32768]),
                            spec_method="block draft", proposer="n-gram", submitter=f"user{page}",
                            command="serve --tp 2 --speculative-algorithm BLOCK")
                for k, share in LADDER:
                    f = dict(base, draft_tokens=k, headline_tps=round(top * share, 1))
                    q = {"headline_tps": str(f["headline_tps"])}
                    if k == 64 and rng.random() < 0.5:
                        f.update(acceptance_rate=1.0, notes="acceptance 64/1.00 on locked attractor",
                                 steady_low=round(top * 0.37, 1), steady_high=round(top * 0.39, 1))
                        q.update(notes=f["notes"], steady_low=f"{f['steady_low']} to {f['steady_high']}")
                    entries.append(ParsedEntry(fields=f, quotes=q))
            store_parse(s, src, snap, ParseResult(kind="json", entries=entries))
            made += len(entries)
            page += 1
    t1 = time.time()
    with db.session() as s:
        counts = audit_all(s, settings)
    t2 = time.time()
    with db.session() as s:
        ids = list(s.scalars(select(Recipe.recipe_id)))
    print(f"  built {made} entries in {t1 - t0:.0f} s, audited {counts['entries']} in {t2 - t1:.0f} s "
          f"({len(ids)} recipes)", flush=True)
    db.dispose()
    return ids


def recipe_ids(settings) -> list[str]:
    from sqlalchemy import select

    from app.db import Database
    from app.models import Recipe

    db = Database(settings)
    with db.session() as s:
        out = list(s.scalars(select(Recipe.recipe_id)))
    db.dispose()
    return out


# -- load ------------------------------------------------------------------------------------------
async def _client(host: str, port: int, paths: list[str], deadline: float, lat: list[float], errors: list[int]):
    reader, writer = await asyncio.open_connection(host, port)
    i = random.randrange(len(paths))
    while time.perf_counter() < deadline:
        path = paths[i % len(paths)]
        i += 1
        t = time.perf_counter()
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        chunked = False
        for line in head.split(b"\r\n"):
            low = line.lower()
            if low.startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif low.startswith(b"transfer-encoding:") and b"chunked" in low:
                chunked = True
        if chunked:
            while True:
                size = int((await reader.readline()).strip(), 16)
                await reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            await reader.readexactly(length)
        lat.append(time.perf_counter() - t)
        if status != 200:
            errors.append(status)
    writer.close()


def _load_proc(host, port, paths, seconds, clients, out):
    async def run():
        lat: list[float] = []
        errors: list[int] = []
        warm = time.perf_counter() + 1.0
        await asyncio.gather(*[_client(host, port, paths, warm, [], []) for _ in range(clients)])
        start = time.perf_counter()
        deadline = start + seconds
        await asyncio.gather(*[_client(host, port, paths, deadline, lat, errors) for _ in range(clients)])
        return lat, errors, time.perf_counter() - start

    lat, errors, elapsed = asyncio.run(run())
    out.put((lat, errors, elapsed))


def load(port: int, paths: list[str], seconds: float, clients: int) -> dict:
    q: mp.Queue = mp.Queue()
    p = mp.Process(target=_load_proc, args=("127.0.0.1", port, paths, seconds, clients, q))
    p.start()
    lat, errors, elapsed = q.get(timeout=seconds + 120)
    p.join()
    lat.sort()
    pct = lambda x: lat[min(len(lat) - 1, int(len(lat) * x))] * 1000  # noqa: E731
    return {"requests": len(lat), "rps": len(lat) / elapsed, "p50": pct(0.50), "p99": pct(0.99),
            "errors": len(errors)}


# -- servers ---------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port: int, path: str, proc, timeout: float = 60) -> None:
    import urllib.request

    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.3)
    raise SystemExit(f"server on {port} did not answer {path}")


def stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def serve_caveat(env: dict, workers: int) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([str(ROOT / ".venv/bin/caveat"), "serve", "--workers", str(workers), "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, port


def run_target(name: str, proc, port: int, paths: list[str], seconds: float, clients: int) -> dict:
    try:
        wait_http(port, paths[0], proc)
        res = load(port, paths, seconds, clients)
    finally:
        stop(proc)
    res["target"] = name
    print(f"  {name}: {res['rps']:.0f} req/s, p50 {res['p50']:.1f} ms, p99 {res['p99']:.1f} ms, "
          f"{res['requests']} requests, {res['errors']} non-200", flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--no-datasette", action="store_true")
    ap.add_argument("--datasette", default=str(ROOT / ".venv-bench/bin/datasette"))
    ap.add_argument("--postgres-url", default=os.environ.get("CAVEAT_BENCH_POSTGRES_URL", PG_DEFAULT))
    ap.add_argument("--keep", default=None, help="Folder to keep (and reuse) the SQLite data in.")
    args = ap.parse_args()

    from app.config import Settings

    results = []
    work = Path(args.keep or tempfile.mkdtemp(prefix="caveat-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    sqlite_file = work / "caveat.db"
    for backend in args.backends.split(","):
        print(f"{backend}:", flush=True)
        with temporary_database(args.postgres_url if backend != "sqlite" else None) as pg_url:
            url = pg_url or f"sqlite:///{sqlite_file}"
            settings = Settings(data_dir=work, database_url=url, secret_key="bench")
            reuse = pg_url is None and sqlite_file.exists()
            ids = recipe_ids(settings) if reuse else build(settings, args.entries)
            env = dict(os.environ, CAVEAT_DATABASE_URL=url, CAVEAT_DATA_DIR=str(work), CAVEAT_SECRET_KEY="bench")
            paths = [f"/api/recipes/{rid}/quotable" for rid in random.Random(1).sample(ids, min(len(ids), 5000))]
            proc, port = serve_caveat(env, args.workers)
            results.append(run_target(f"caveat quotable ({backend}, {args.workers} workers)", proc, port, paths,
                                      args.seconds, args.clients))
    if not args.no_datasette and sqlite_file.exists() and Path(args.datasette).exists():
        print("datasette:", flush=True)
        port = free_port()
        proc = subprocess.Popen([args.datasette, "serve", "-i", str(sqlite_file), "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        n = args.entries
        paths = [f"/caveat/entries/{i}.json" for i in random.Random(2).sample(range(1, n + 1), min(n, 5000))]
        results.append(run_target("datasette entries row (sqlite, immutable)", proc, port, paths, args.seconds,
                                  args.clients))
    print("\n| target | req/s | p50 ms | p99 ms | requests | non-200 |\n| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(f"| {r['target']} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['requests']} | {r['errors']} |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
