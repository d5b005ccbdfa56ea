"""Sign-in under load: 8 concurrent sign-ins (Argon2id, m = 19 MiB, t = 2, p = 1) against a real
`caveat serve` on 127.0.0.1, their latency (p50/p95), and the quotable API's throughput at the same
time against its throughput with no sign-ins running (the rest of the app must keep answering).

Goal: sign-in p95 under 500 ms with 8 concurrent attempts.

    .venv/bin/python bench/login.py [--logins 80] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "bench password 1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def login_once(base: str) -> float:
    with httpx.Client(base_url=base, timeout=30) as c:
        token = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
        t = time.perf_counter()
        r = c.post("/login", data={"username": "bench", "password": PASSWORD, "csrf_token": token, "next": "/"})
        elapsed = time.perf_counter() - t
        assert r.status_code in (200, 302, 303), r.status_code
        return elapsed


def quotable_rate(base: str, seconds: float, stop: threading.Event | None = None) -> float:
    n, t0 = 0, time.perf_counter()
    with httpx.Client(base_url=base, timeout=30) as c:
        while time.perf_counter() - t0 < seconds and not (stop and stop.is_set()):
            assert c.get("/api/quotable?model=glm&limit=5").status_code == 200
            n += 1
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logins", type=int, default=80)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="caveat-login-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAVEAT_")}
        port = free_port()
        env.update(CAVEAT_DATA_DIR=tmp, CAVEAT_SECRET_KEY="bench", CAVEAT_PORT=str(port),
                   CAVEAT_LOGIN_LIMIT_CLIENT="100000 per minute", CAVEAT_LOGIN_LIMIT_ACCOUNT="100000 per minute")
        cli = [sys.executable, "-c", "from app.cli import main; main()"]
        subprocess.run(cli + ["init"], env=env, cwd=ROOT, check=True, capture_output=True)
        subprocess.run(cli + ["user", "add", "bench", "--password-stdin"], input=PASSWORD + "\n", text=True, env=env,
                       cwd=ROOT, check=True, capture_output=True)
        server = subprocess.Popen(cli + ["serve"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    httpx.get(base + "/api/quotable?model=glm", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            login_once(base)  # warm-up
            idle = quotable_rate(base, 3.0)
            times: list[float] = []
            lock = threading.Lock()
            per_worker = args.logins // args.concurrency

            def worker():
                for _ in range(per_worker):
                    e = login_once(base)
                    with lock:
                        times.append(e)

            stop = threading.Event()
            busy: list[float] = []
            meter = threading.Thread(target=lambda: busy.append(quotable_rate(base, 600, stop)))
            threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
            t0 = time.perf_counter()
            meter.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            stop.set()
            meter.join()
            wall = time.perf_counter() - t0
        finally:
            server.terminate()
            server.wait(10)
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    print(f"sign-ins: {len(times)} at concurrency {args.concurrency} in {wall:.1f} s; Argon2id m=19 MiB t=2 p=1")
    print(f"latency: p50 {1000 * statistics.median(times):.0f} ms, p95 {1000 * p95:.0f} ms, max {1000 * times[-1]:.0f} ms "
          f"(goal p95 < 500 ms: {'met' if p95 < 0.5 else 'NOT met'})")
    print(f"quotable API: {idle:.0f} req/s idle, {busy[0]:.0f} req/s during the sign-ins "
          f"({busy[0] / idle:.2f}x of idle, one client)")


if __name__ == "__main__":
    main()
