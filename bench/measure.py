"""`caveat measure`'s own accuracy and cost: its decode tok/s against a reference clock, and the CPU
it spends per streamed token.

The reference: a real HTTP server on 127.0.0.1 (tests/openai_server.py, in its own process so its CPU
is not counted) streaming SSE tokens on an absolute schedule at a known, fixed rate, so the true decode
rate of every request is that rate. The harness is Caveat's own code path (`app.measure.run`:
discovery, prompts, streaming client, output checks, summary), in this process; its CPU is this
process's CPU time (all threads) over the run.

Goal: timing error <= 1% of the true rate at 1 and at 32 concurrent streams; harness CPU <= 5% of one
core at 1,000 tokens/s aggregate. Two errors are printed: the run's median against the nominal rate,
and every request against the rate the server really sent at (its own first and last send times on the
same monotonic clock, reported in llama.cpp's ``timings`` shape): the first includes the reference
server's own pacing jitter on a busy machine, the second is the harness's error alone. CPU is the
whole run (discovery, streaming, output checks and summary) over its wall time.

    .venv/bin/python bench/measure.py                 # c=1 at 1,000 tok/s; c=32 at 31.25 tok/s each
    .venv/bin/python bench/measure.py --tokens 512 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AGGREGATE = 1000.0


def serve(rate: float) -> None:
    from tests.openai_server import Behaviour, OpenAIServer

    srv = OpenAIServer(Behaviour(model="bench-model", rate=rate, ttft=0.02, timings=True)).start()
    print(srv.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    srv.stop()


def floor(url: str, tokens: int, requests: int) -> float:
    """CPU per token of the least any harness must do: a bare blocking socket reading one stream to its
    end, no HTTP parsing, no JSON, no timing (the same server, the same tokens)."""
    import json
    import socket

    port = int(url.rsplit(":", 1)[1])
    cpu = 0.0
    for k in range(requests):
        body = json.dumps({"model": "bench-model", "max_tokens": tokens, "stream": True,
                           "messages": [{"role": "user", "content": f"floor {k}"}]}).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            t = time.process_time()
            while True:
                data = sock.recv(65536)
                if not data or data.endswith(b"0\r\n\r\n"):
                    break
            cpu += time.process_time() - t
    return cpu / (tokens * requests) * 1e6


def one(concurrency: int, tokens: int, prompts: int) -> dict:
    from app.measure.client import Endpoint
    from app.measure.run import Plan, execute, summarise

    rate = AGGREGATE / concurrency
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(rate)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        plan = Plan(endpoint=Endpoint.parse(url), model="bench-model", prompts=prompts, max_tokens=tokens,
                    concurrency=concurrency, repeats=0)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        outcome = execute(plan)
        result = summarise(outcome)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        floor_us = floor(url, tokens, 4) if concurrency == 1 else None
    finally:
        proc.stdin.close()
        proc.wait(10)
    unique = [r for r in result["requests"] if r["kind"] == "unique"]
    errors = [abs(r["decode_tps"] - rate) / rate for r in unique]
    # the server's own send times (same monotonic clock): the rate it really streamed at, its pacing
    # jitter on a busy machine taken out, so what is left is the harness's own error
    sent = [r["server_timings"]["predicted_per_second"] for r in unique]
    own = [abs(r["decode_tps"] - x) / x for r, x in zip(unique, sent)]
    streamed = sum(r["tokens"] for r in unique) + sum(r["tokens"] for r in result["requests"] if r["kind"] == "probe")
    return {"concurrency": concurrency, "rate": rate, "median": result["decode_tps"],
            "median_error": abs(result["decode_tps"] - rate) / rate, "worst_error": max(errors),
            "own_worst": max(own), "own_median": sorted(own)[len(own) // 2],
            "aggregate": result["aggregate"]["tps"], "tokens": streamed, "wall": wall, "cpu": cpu,
            "cpu_share": cpu / wall, "us_per_token": cpu / streamed * 1e6, "checks": result["output_check"]["passed"],
            "floor_us": floor_us}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--tokens", type=int, default=512, help="max_tokens per request (default 512)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of each configuration (the worst of each figure is reported)")
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return
    print(f"reference: {AGGREGATE:,.0f} tok/s aggregate from a fixed-rate SSE server on 127.0.0.1 "
          f"(separate process); {args.tokens} tokens per request; {os.cpu_count()} CPUs")
    ok = True
    for concurrency, prompts in ((1, 8), (32, 32)):
        rows = [one(concurrency, args.tokens, prompts) for _ in range(args.rounds)]
        # the worst round for each figure on its own (errors from one round, CPU from another if so)
        worst = dict(max(rows, key=lambda r: r["median_error"]))
        for key in ("worst_error", "own_worst", "own_median"):
            worst[key] = max(r[key] for r in rows)
        costly = max(rows, key=lambda r: r["cpu_share"])
        for key in ("cpu", "wall", "cpu_share", "us_per_token", "tokens", "floor_us"):
            worst[key] = costly[key]
        worst["checks"] = all(r["checks"] for r in rows)
        if len(rows) > 1:
            print(f"concurrency {concurrency:>2}: harness CPU per round: "
                  + ", ".join(f"{r['cpu_share']:.1%}" for r in rows))
        ok &= worst["median_error"] <= 0.01 and worst["own_worst"] <= 0.01 and worst["cpu_share"] <= 0.05
        print(f"concurrency {concurrency:>2}: true {worst['rate']:,.2f} tok/s per stream; measured median "
              f"{worst['median']:,.2f} (ratio {worst['median'] / worst['rate']:.4f}), error median "
              f"{worst['median_error']:.3%}, worst request {worst['worst_error']:.3%}; against the server's own "
              f"send times: worst request {worst['own_worst']:.3%}, median {worst['own_median']:.3%}; aggregate "
              f"{worst['aggregate']:,.1f} tok/s; harness CPU {worst['cpu']:.2f} s over {worst['wall']:.2f} s = "
              f"{worst['cpu_share']:.1%} of one core, {worst['us_per_token']:.0f} us per token "
              f"({worst['tokens']:,} tokens); output checks {'passed' if worst['checks'] else 'FAILED'}")
        if worst["floor_us"]:
            print(f"               floor (a bare socket read per token, no parsing): {worst['floor_us']:.0f} us per "
                  f"token; ours is {worst['us_per_token'] / worst['floor_us']:.1f}x the floor")
    print(f"load average during the run: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print("goal (error <= 1%, CPU <= 5% of a core at 1,000 tok/s):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
