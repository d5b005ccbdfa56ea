"""Issue 24, item 7: decoding is bounded for the whole process, not per request. Twelve parallel
unauthenticated GETs on one 2 MB gzip record (2 GiB of zeros; each decoding refused at 100x = 200 MB)
took ``caveat serve`` from 124 MB to 2.5 GB. Now each decoding reserves its bound from a process budget
(CAVEAT_DECODE_PROCESS_BYTES), one record is decoded by one request at a time, and its refusal is
remembered. Measured as the peak RSS (VmHWM) of a real ``caveat serve`` process."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
import urllib.request
import zlib

import pytest

from app.storage.snapshots import load_record
from archive import decoding
from tests.capture_helpers import CLI, REPO, cli_env
from tests.replay_fixtures import add_snapshot

MIB = 1 << 20
# above the server at rest (125 MB in 2026-11; 195 MB once the learned reader's model and the object-store
# client came): one 200 MB decoding in flight (the 256 MB budget) + slack; twelve at once were 2.5 GB
PEAK_ABOVE_REST = 575 * MIB


def gzip_bomb(tag: int, members: int = 32) -> bytes:
    """~2 MB of gzip (``members`` members of 64 MiB of zeros each, the first starting with ``tag``)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = c.compress(bytes(64 * MIB)) + c.flush()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = c.compress(b"%d" % tag + bytes(64 * MIB)) + c.flush()
    return first + member * (members - 1)


def _bomb_snapshot(session, settings, n: int):
    body = gzip_bomb(n)
    assert len(body) > 1.5 * MIB
    return add_snapshot(session, settings, f"https://bomb.example/{n}", f"202601011000{n:05d}", body,
                        headers=[("Content-Encoding", "gzip")])


def _vmhwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1]) * 1024


def test_a_refused_decoding_is_remembered_and_not_inflated_again(db, settings):
    with db.session() as s:
        snap = _bomb_snapshot(s, settings, 0)
        s.commit()
        before = decoding.GATE.decodings
        first = load_record(settings, snap, session=s)
        assert not first.decoded and "CAVEAT_DECODE_MAX_RATIO" in first.warnings[0]
        assert decoding.GATE.decodings == before + 1
        again = load_record(settings, snap, session=s)
        assert again.warnings == first.warnings and again.raw_body == first.raw_body
        assert decoding.GATE.decodings == before + 1          # the verdict, not a second inflation
        assert decoding.GATE.held == 0


def test_the_process_budget_bounds_decodings_in_flight():
    limits = decoding.DecodeLimits(process_bytes=3 * MIB, wait_s=0.2)
    small = zlib.compress(b"x" * 100_000)
    assert decoding.decode_content(small, "deflate", limits)[0] == b"x" * 100_000
    assert decoding.GATE.reserve(3 * MIB, limits)            # someone else holds the whole budget
    try:
        body, problem = decoding.decode_content(small, "deflate", limits, key="busy")
        assert body == small and "CAVEAT_DECODE_PROCESS_BYTES" in problem
        assert decoding.GATE.refused(("busy", "deflate", limits.max_bytes, limits.max_ratio)) is None  # not a verdict
    finally:
        decoding.GATE.release(3 * MIB)
    assert decoding.decode_content(small, "deflate", limits, key="busy")[0] == b"x" * 100_000


def test_parallel_gets_on_gzip_records_stay_under_a_fixed_peak(db, settings):
    with db.session() as s:
        snaps = [_bomb_snapshot(s, settings, n) for n in range(12)]
        s.commit()
        ids = [(x.citation_id, x.timestamp, x.url) for x in snaps]
    proc = subprocess.Popen(CLI + ["serve", "--host", "127.0.0.1", "--port", "0"], cwd=REPO, env=cli_env(settings),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line, m = "", None
        for _ in range(5):   # the first serve also says it recorded its public base URL
            line += proc.stdout.readline()
            m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if m:
                break
        assert m, line + (proc.stdout.read() if proc.poll() is not None else "")
        base = f"http://127.0.0.1:{m.group(1)}"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/api/health", timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        rest = _vmhwm(proc.pid)
        statuses: list[int] = []

        def get(path: str) -> None:
            with urllib.request.urlopen(base + path, timeout=300) as r:
                r.read()
                statuses.append(r.status)

        def burst(paths: list[str]) -> None:
            threads = [threading.Thread(target=get, args=(p,)) for p in paths]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        cid, ts, url = ids[0]
        burst([f"/c/{cid}"] * 12)                                   # one record, twelve at once
        burst([f"/web/{ts}/{url}"] * 6 + [f"/c/{cid}"] * 6)         # remembered: not inflated again
        burst([f"/c/{c}" for c, _, _ in ids])                       # twelve records at once
        peak = _vmhwm(proc.pid)
        assert statuses.count(200) == 36, statuses
        assert peak - rest < PEAK_ABOVE_REST, f"peak RSS {peak / MIB:.0f} MiB (at rest {rest / MIB:.0f} MiB)"
        print(f"caveat serve: at rest {rest / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB", file=sys.stderr)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
