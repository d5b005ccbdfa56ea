"""Kill -9 a capture subprocess at several points: nothing indexed is lost, the next run repairs."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

from sqlalchemy import select

from app.models import Snapshot
from archive.reader import read_record
from tests.capture_helpers import CLI, REPO, cli_env, ref_tool, run, warc_files

BIG = 3 * 1024 * 1024


def _body(i: int) -> bytes:
    seed = hashlib.sha256(str(i).encode()).hexdigest().encode()
    rows = [b"<tr><td>%d</td><td>%s</td></tr>\n" % (n, hashlib.sha256(seed + b"%d" % n).hexdigest().encode())
            for n in range(BIG // 90)]
    return b"<html><table>\n" + b"".join(rows) + b"</table></html>"


def _caveat(settings, *args, code: str = CLI[-1], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO,
                            env=cli_env(settings, CAVEAT_WARC_GZIP_LEVEL="9"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)


# For kill points that must land inside a record: every os.write of the capture process sleeps 20 ms
# first, so writing one record takes long enough for the SIGKILL after the size check to land in it
# (whole records are otherwise written in a few fast system calls, and a kill mostly falls between).
SLOW_WRITES = ("import os, time\n_write = os.write\n"
               "os.write = lambda fd, data: (time.sleep(0.02), _write(fd, data))[1]\n"
               "from app.cli import main\nmain()")


def _newest_size(settings) -> int:
    files = warc_files(settings)
    return files[-1].stat().st_size if files else 0


def _check_index_reads_back(db) -> int:
    with db.Session() as s:
        snaps = s.scalars(select(Snapshot)).all()
    for snap in snaps:
        path = db.settings.warc_dir / snap.warc_file
        rec = read_record(path, snap.offset, snap.length)
        assert rec.ok and rec.header("WARC-Record-ID") == snap.record_id, rec.problems
        if snap.request_offset is None:
            # a capture indexed from the WARC after a kill that fell before its request, or an imported
            # response whose foreign WARC had no request record
            assert snap.origin in ("capture", "import"), snap.origin
            continue
        req = read_record(path, snap.request_offset, snap.request_length)
        assert req.ok and req.warc_type == "request"
    return len(snaps)


def assert_every_whole_record_indexed(db) -> int:
    """No fsynced record is lost: every whole response/revisit in the WARC files has an index row."""
    from archive.indexer import walk

    with db.Session() as s:
        indexed = set(s.scalars(select(Snapshot.record_id)))
    whole = [f.header("WARC-Record-ID") for p in warc_files(db.settings) for f in walk(p)
             if f.warc_type in ("response", "revisit")]
    missing = [r for r in whole if r not in indexed]
    assert not missing, f"{len(missing)} whole record(s) in the WARC files have no index row"
    return len(whole)


def test_sigkill_mid_capture_loses_nothing_indexed(db, server):
    settings = db.settings
    # Each round captures pages of its own: records a killed round left whole are indexed (not cut), so a
    # later round capturing the same pages would write small revisits and finish before its kill point.
    urls = [server.route(f"/big{i}", _body(i), delay=0.05 * (i % 3)) for i in range(20)]
    # Kill points: as soon as the file grows past these many bytes beyond where the run started.
    # The last two run with slow writes, so the kill lands inside a record.
    kill_after_growth = [1, 700_000, 2_500_000, 5_000_000]
    repairs = []
    for n, growth in enumerate(kill_after_growth):
        start = _newest_size(settings)
        slow = {"code": SLOW_WRITES} if growth >= 2_500_000 else {}
        proc = _caveat(settings, "capture", *urls[n * 5:n * 5 + 5], **slow)
        deadline = time.time() + 30
        while proc.poll() is None and time.time() < deadline:
            if _newest_size(settings) - start >= growth:
                break
            time.sleep(0.002)
        assert proc.poll() is None, "capture finished before the kill point; make the pages bigger"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        _check_index_reads_back(db)  # before any repair: every row points at whole, good bytes

        # The next run repairs the torn tail, says so, and captures normally.
        small = server.route(f"/small{n}", f"<p>after kill {n}</p>")
        nxt = _caveat(settings, "capture", small)
        out, err = nxt.communicate(timeout=60)
        assert nxt.returncode == 0, err.decode()
        repairs.append(err.decode())
        files = warc_files(settings)
        check = run([ref_tool("warcio"), "check", *map(str, files)])
        assert check.returncode == 0, check.stdout
        for f in files:
            assert run(["gzip", "-t", str(f)]).returncode == 0, f
        assert _check_index_reads_back(db) > 0
        assert_every_whole_record_indexed(db)

    said = [r for r in repairs if "torn tail repaired" in r]
    assert said, repairs
    assert any("partial record" in r for r in said), said
    verify = _caveat(settings, "verify")
    out, err = verify.communicate(timeout=60)
    assert verify.returncode == 0, out.decode() + err.decode()


def _processes_with(marker: str) -> list[int]:
    """PIDs whose command line mentions ``marker`` (forked workers keep their parent's command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_sigkill_of_a_capture_with_worker_processes(db, server, tmp_path):
    """Killing the writer of a big capture: its workers exit, nothing indexed is lost, the next run repairs."""
    settings = db.settings
    body = _body(99)[:400_000]
    urls = [server.route(f"/w{i}", body + b"%d" % i, delay=0.02 * (i % 4)) for i in range(48)]
    listing = tmp_path / "kill-me-urls.txt"
    listing.write_text("\n".join(urls))
    start = _newest_size(settings)
    proc = _caveat(settings, "capture", "--from-file", str(listing))
    deadline = time.time() + 60
    while proc.poll() is None and time.time() < deadline and len(_processes_with(str(listing))) < 9:
        time.sleep(0.01)
    assert len(_processes_with(str(listing))) == 9  # the writer and its 8 workers
    while proc.poll() is None and time.time() < deadline and _newest_size(settings) - start < 1_500_000:
        time.sleep(0.002)
    assert proc.poll() is None, "capture finished before the kill point"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    killed_at = _newest_size(settings)
    with db.Session() as s:
        ends = s.execute(select(Snapshot.offset + Snapshot.length, Snapshot.request_offset + Snapshot.request_length)
                         .where(Snapshot.warc_file == warc_files(settings)[-1].name)).all()
    indexed_end = max((max(a, b) for a, b in ends), default=0)
    deadline = time.time() + 30
    while _processes_with(str(listing)) and time.time() < deadline:
        time.sleep(0.1)
    left = _processes_with(str(listing))
    assert left == [], ("worker processes outlived the killed capture",
                        [open(f"/proc/{p}/stat").read()[:80] for p in left])
    stored = _check_index_reads_back(db)  # whole batches only (maybe none yet)
    assert stored < len(urls)

    nxt = _caveat(settings, "capture", server.route("/after-workers", "<p>after</p>"))
    out, err = nxt.communicate(timeout=60)
    assert nxt.returncode == 0, err.decode()
    if killed_at > indexed_end:  # records written after the last commit: the repair must say what it did
        assert "torn tail repaired" in err.decode() or "without index rows" in err.decode(), err.decode()
    assert not [p for p in (settings.warc_dir / ".spool").iterdir()]
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(settings))])
    assert check.returncode == 0, check.stdout
    after = _check_index_reads_back(db)
    assert after >= stored + 1
    assert assert_every_whole_record_indexed(db) == after
    verify = _caveat(settings, "verify")
    out, err = verify.communicate(timeout=60)
    assert verify.returncode == 0, out.decode() + err.decode()
