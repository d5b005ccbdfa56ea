"""Capture speed: 1,000 distinct 100 KB HTML-like pages from 127.0.0.1, end to end, against warcio.

Ours: ``capture_urls`` (fetch, write .warc.gz, fsync, index rows, CDXJ) on a fresh SQLite database,
as ``caveat capture`` runs it: 1,000 URLs, so 8 worker processes fetch and compress (started inside
the timed part) and this process writes, fsyncs and indexes.
Peer: warcio's ``WARCWriter`` with its defaults (gzip level 9, sha1 digests) writing response records
with the same payloads and headers to one file, then fsync - writing only, no fetching.

    .venv/bin/python bench/capture.py            # 1,000 pages
    .venv/bin/python bench/capture.py --pages 200
    .venv/bin/python bench/capture.py --processes 0   # fetch in threads instead
    .venv/bin/python bench/capture.py --postgres postgresql+psycopg2://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/capture.py --compare-log   # what the tamper-evident log costs (goal <= 5%)
    .venv/bin/python bench/capture.py --archive seaweedfs --pages 300   # bucket vs local (goal within 10%)

``--compare-log`` runs ours alternately with the tamper-evident log (the default: every record
re-read, hashed and appended, a tree head signed per batch) and without it (the append replaced by a
no-op), ``--rounds`` times each, and prints the best rate of each and the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgtemp import temporary_database  # noqa: E402 - bench/ is this script's own folder

PAGE_BYTES = 100 * 1024
WORDS = ("model hardware engine tok/s quant draft acceptance gpu nvidia rtx pro 6000 llama glm qwen vllm sglang "
         "the of and notes steady state tg128 pp512 concurrency speculative decoding batch context").split()


def make_page(i: int) -> bytes:
    rnd = random.Random(i)
    parts = [f"<!doctype html><html><head><title>Leaderboard snapshot {i}</title></head><body><table>\n"]
    size = len(parts[0])
    while size < PAGE_BYTES:
        row = (f'<tr><td class="model">{rnd.choice(WORDS)}-{rnd.randint(1, 999)}B</td>'
               f"<td>{rnd.choice(WORDS)}</td><td>{rnd.random() * 1000:.2f}</td>"
               f"<td>{' '.join(rnd.choice(WORDS) for _ in range(4))}</td></tr>\n")
        parts.append(row)
        size += len(row)
    return "".join(parts).encode()[:PAGE_BYTES - 16] + b"</table></html>\n"


def serve(pages: int, port_queue) -> None:
    """A small keep-alive HTTP/1.1 server in its own process (asyncio, pre-built responses)."""
    bodies = {f"/page/{i}".encode(): make_page(i) for i in range(pages)}
    responses = {path: (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                        + str(len(body)).encode() + b"\r\n\r\n" + body) for path, body in bodies.items()}
    missing = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                writer.write(responses.get(path, missing))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def run_ours(urls: list[str], workdir: Path, workers: int, processes: int | None,
             database_url: str | None = None, **extra) -> tuple[float, int]:
    from app.config import Settings
    from app.db import Database
    from app.capture.http import capture_urls
    from app.storage.uploads import Uploader

    settings = Settings(data_dir=workdir / "ours", allow_private_addresses=True, database_url=database_url, **extra)
    db = Database(settings)
    db.upgrade()
    capture_urls(db, urls[:5])  # warm-up: imports, connection pool, first file (not timed)
    before = sum(f.stat().st_size for f in settings.warc_dir.glob("*.warc.gz"))
    # With a bucket (--archive): sealed files upload beside the capture, as `caveat crawl` and workers do.
    uploader = Uploader(db, series=None, say=lambda m: None).start() if settings.archive_url else None
    t0 = time.perf_counter()
    results = capture_urls(db, urls[5:], workers=workers, processes=processes)
    elapsed = time.perf_counter() - t0
    bad = [r for r in results if r.error]
    if bad:
        raise SystemExit(f"capture failed: {bad[0].error}")
    if uploader is not None:
        from sqlalchemy import func, select

        from app.models import ArchiveObject

        t1 = time.perf_counter()
        report = uploader.close()
        with db.Session() as s:
            size = s.scalar(select(func.sum(ArchiveObject.size))) or 0
            n = s.scalar(select(func.count()).select_from(ArchiveObject))
        print(f"  uploaded {n} sealed file(s) ({size / 1e6:.1f} MB) to {settings.archive_url}; the last one "
              f"after the capture, in {time.perf_counter() - t1:.2f} s; failed: {report.failed if report else '?'}",
              flush=True)
        db.dispose()
        return (len(urls) - 5) / elapsed, size
    size = sum(f.stat().st_size for f in settings.warc_dir.glob("*.warc.gz")) - before
    db.dispose()
    return (len(urls) - 5) / elapsed, size


def run_peer(pages: list[bytes], urls: list[str], workdir: Path) -> tuple[float, int]:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    path = workdir / "peer.warc.gz"
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, body in zip(urls, pages):
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                                  ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            rec = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers)
            writer.write_record(rec)
        f.flush()
        os.fsync(f.fileno())
    elapsed = time.perf_counter() - t0
    return len(pages) / elapsed, path.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=8, help="concurrent fetches (capture_urls default: 8)")
    ap.add_argument("--processes", type=int, default=None,
                    help="worker processes (default: as `caveat capture`, one per concurrent fetch; 0: threads)")
    ap.add_argument("--postgres", metavar="URL", default=None,
                    help="index in a fresh, temporary database on this PostgreSQL server instead of SQLite "
                    "(e.g. postgresql+psycopg2://postgres@127.0.0.1:5432/test)")
    ap.add_argument("--compare-log", action="store_true",
                    help="also run ours without the tamper-evident log and print what appending to it costs")
    ap.add_argument("--rounds", type=int, default=3, help="with --compare-log: runs of each, alternating")
    ap.add_argument("--compare-synchronous", action="store_true",
                    help="also run ours with SQLite synchronous=NORMAL and print what FULL (the default) costs")
    ap.add_argument("--archive", metavar="URL", default=None,
                    help="also run ours with CAVEAT_ARCHIVE_URL=URL (s3://bucket/prefix; CAVEAT_S3_ENDPOINT and AWS_* "
                    "from the environment), alternating with local files --rounds times, and print the ratio; "
                    "`--archive seaweedfs` starts a SeaweedFS S3 gateway on 127.0.0.1 for the run")
    ap.add_argument("--rotate", type=int, default=8 * 1024 * 1024,
                    help="with --archive: CAVEAT_WARC_ROTATE_BYTES for both runs, so files seal (and upload) during "
                    "the capture (default 8 MiB)")
    args = ap.parse_args()
    if args.archive:
        compare_archive(args)
        return
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    server = ctx.Process(target=serve, args=(args.pages + 5, q), daemon=True)
    server.start()
    port = q.get(timeout=60)
    try:
        urls = [f"http://127.0.0.1:{port}/page/{i}" for i in range(args.pages + 5)]
        pages = [make_page(i) for i in range(5, args.pages + 5)]
        with tempfile.TemporaryDirectory() as tmp, temporary_database(args.postgres) as database_url:
            ours_rate, ours_size = run_ours(urls, Path(tmp), args.workers, args.processes, database_url)
            peer_rate, peer_size = run_peer(pages, urls[5:], Path(tmp))
            normal_rate = None
            log_rates: dict[str, list[float]] = {"with log": [], "without log": []}
            if args.compare_log:
                import shutil

                import app.capture.http as capture_service

                real = capture_service.append_written
                spent = [0.0]

                def timed(*a, **k):
                    t = time.perf_counter()
                    try:
                        return real(*a, **k)
                    finally:
                        spent[0] += time.perf_counter() - t

                for _ in range(args.rounds):
                    for label in ("without log", "with log"):
                        shutil.rmtree(Path(tmp) / "ours", ignore_errors=True)
                        capture_service.append_written = timed if label == "with log" else (lambda *a, **k: None)
                        spent[0] = 0.0
                        try:
                            with temporary_database(args.postgres) as url2:
                                rate, _ = run_ours(urls, Path(tmp), args.workers, args.processes, url2)
                        finally:
                            capture_service.append_written = real
                        log_rates[label].append(rate)
                        if label == "with log":   # the appends' own share of the timed capture's wall time
                            elapsed = (len(urls) - 5) / rate
                            log_rates.setdefault("share", []).append(spent[0] / elapsed)
                        print(f"  {label}: {rate:.1f} records/s"
                              + (f" (appending to the log: {1000 * spent[0]:.0f} ms, "
                                 f"{100 * spent[0] * rate / (len(urls) - 5):.1f}% of the wall time)"
                                 if label == "with log" else ""), flush=True)
            if args.compare_synchronous and not database_url:
                import shutil

                import app.db

                shutil.rmtree(Path(tmp) / "ours")
                app.db.SQLITE_SYNCHRONOUS = "NORMAL"
                normal_rate, _ = run_ours(urls, Path(tmp), args.workers, args.processes, None)
                app.db.SQLITE_SYNCHRONOUS = "FULL"
    finally:
        server.terminate()
    print(f"pages: {args.pages} x {PAGE_BYTES // 1024} KB, cpus: {os.cpu_count()}, "
          f"index: {'PostgreSQL' if args.postgres else 'SQLite'}")
    print(f"ours (fetch+write+fsync+index): {ours_rate:8.1f} records/s  {ours_size / 1e6:8.2f} MB")
    print(f"peer (warcio default, write):   {peer_rate:8.1f} records/s  {peer_size / 1e6:8.2f} MB")
    print(f"speed ratio: {ours_rate / peer_rate:.2f}x (goal >= 4x)   size ratio: {ours_size / peer_size:.3f} "
          "(goal <= 1.10)")
    if args.compare_log:
        on, off = max(log_rates["with log"]), max(log_rates["without log"])
        share = sorted(log_rates["share"])[len(log_rates["share"]) // 2]
        print(f"tamper-evident log: with {on:.1f} vs without {off:.1f} records/s, best of {args.rounds} each "
              f"(throughput {100 * (1 - on / off):+.1f}%); time inside the log's appends: median {100 * share:.1f}% "
              "of capture wall time (goal <= 5%)")
    if normal_rate:
        print(f"SQLite synchronous=FULL (default) vs NORMAL: {ours_rate:.1f} vs {normal_rate:.1f} records/s "
              f"(FULL costs {100 * (1 - ours_rate / normal_rate):.1f}%)")


def compare_archive(args) -> None:
    """Local files against the bucket, alternating, best of --rounds each (uploads run beside capture)."""
    import shutil

    from s3gateway import archive_target

    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    server = ctx.Process(target=serve, args=(args.pages + 5, q), daemon=True)
    server.start()
    port = q.get(timeout=60)
    rates: dict[str, list[float]] = {"local": [], "bucket": []}
    try:
        urls = [f"http://127.0.0.1:{port}/page/{i}" for i in range(args.pages + 5)]
        with tempfile.TemporaryDirectory() as tmp, archive_target(args.archive, Path(tmp)) as (url, endpoint):
            for r in range(args.rounds):
                for label in ("local", "bucket"):
                    shutil.rmtree(Path(tmp) / "ours", ignore_errors=True)
                    extra = {"warc_rotate_bytes": args.rotate}
                    if label == "bucket":
                        extra.update(archive_url=f"{url.rstrip('/')}/round{r}", s3_endpoint=endpoint)
                    with temporary_database(args.postgres) as database_url:
                        rate, _ = run_ours(urls, Path(tmp), args.workers, args.processes, database_url, **extra)
                    rates[label].append(rate)
                    print(f"  {label}: {rate:.1f} records/s", flush=True)
    finally:
        server.terminate()
    local, bucket = max(rates["local"]), max(rates["bucket"])
    print(f"pages: {args.pages} x {PAGE_BYTES // 1024} KB, cpus: {os.cpu_count()}, "
          f"index: {'PostgreSQL' if args.postgres else 'SQLite'}, rotate {args.rotate:,} bytes")
    print(f"capture with the archive in {args.archive}: {bucket:.1f} vs local files {local:.1f} records/s, best of "
          f"{args.rounds} each: ratio {bucket / local:.2f} (goal >= 0.90: uploads beside capture, not in its path)")


if __name__ == "__main__":
    main()
