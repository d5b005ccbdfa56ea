"""Twenty SIGKILLs at random moments across capture, import and reindex lose no fsynced record.

After the kills, one more capture (which repairs and catches the index up), then the field's own
checks (`warcio check`, `gzip -t`) and `caveat verify` (digests, the database, and every whole WARC
record indexed) must all pass.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import time

from tests.capture_helpers import CLI, REPO, cli_env, foreign_warc, ref_tool, run, warc_files
from tests.test_capture_crash import _check_index_reads_back, assert_every_whole_record_indexed


def test_twenty_random_kills_lose_no_fsynced_record(db, server, tmp_path):
    settings = db.settings
    rnd = random.Random(int(os.environ.get("CAVEAT_TEST_SEED", "20261201")))
    pages = [server.route(f"/k{i}", hashlib.sha256(b"%d" % i).hexdigest().encode() * 4000,
                          delay=0.01 * (i % 3)) for i in range(40)]
    assert _caveat_ok(settings, "capture", *pages[:3])
    env = cli_env(settings)
    ops = []
    for n in range(20):
        op = rnd.choice(["capture", "import", "reindex"])
        if op == "capture":
            args = ["capture", *rnd.sample(pages, 6)]
        elif op == "import":
            src = tmp_path / f"foreign-{n}.warc.gz"
            foreign_warc(src, 25, n, repeat=2000)
            args = ["import-warc", str(src)]
        else:
            args = ["reindex"]
        proc = subprocess.Popen(CLI + args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.15, 1.2))  # the interpreter starts in ~0.3 s: some kills land before any write
        alive = proc.poll() is None
        if alive:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        ops.append((op, "killed" if alive else f"finished {proc.returncode}"))
        _check_index_reads_back(db)  # every committed row points at whole, good bytes, even right after a kill

    assert sum(1 for _, how in ops if how == "killed") >= 10, ops
    assert _caveat_ok(settings, "capture", server.route("/final", "<p>final</p>"))
    files = warc_files(settings)
    check = run([ref_tool("warcio"), "check", *map(str, files)])
    assert check.returncode == 0, check.stdout
    for f in files:
        assert run(["gzip", "-t", str(f)]).returncode == 0, f
    assert_every_whole_record_indexed(db)
    verify = subprocess.run(CLI + ["verify", "-q"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert verify.returncode == 0, (ops, verify.stdout, verify.stderr)


def _caveat_ok(settings, *args) -> bool:
    p = subprocess.run(CLI + list(args), cwd=REPO, env=cli_env(settings), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return True
