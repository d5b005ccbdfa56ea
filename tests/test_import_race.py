"""import-warc racing a capture: the import holds the store's lock until its rows commit, so a capture
that starts in between waits, and no imported record is ever taken for a torn tail and cut."""

from __future__ import annotations

import subprocess
import sys
import time

from sqlalchemy import func, select

from app.models import Snapshot
from tests.capture_helpers import REPO, cli_env, foreign_warc, ref_tool, run, warc_files
from tests.test_capture_crash import assert_every_whole_record_indexed

# The import, with a pause between fsyncing the copied records and committing their rows: exactly the
# gap in which a capture used to "repair" the imported records away.
SLOW_COMMIT = ("import sys, time\n"
               "import app.rebuild.importer as imp\n"
               "_add_all = imp._Importer.assign_ids\n"
               "def slow(self, rows):\n"
               "    print('imported, not committed', flush=True); time.sleep(3); return _add_all(self, rows)\n"
               "imp._Importer.assign_ids = slow\n"
               "from app.cli import main\nmain()")


def _count(db) -> int:
    with db.Session() as s:
        return s.scalar(select(func.count()).select_from(Snapshot))


def test_capture_during_a_slow_import_commit_waits_and_loses_nothing(db, server, tmp_path):
    settings = db.settings
    src = tmp_path / "foreign.warc.gz"
    foreign_warc(src, 200, "slow")
    env = cli_env(settings)
    imp = subprocess.Popen([sys.executable, "-c", SLOW_COMMIT, "import-warc", str(src)], cwd=REPO, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert imp.stdout.readline().strip() == "imported, not committed"  # records fsynced, rows not committed
    cap = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "capture",
                          server.route("/during", "<p>during the import</p>")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert cap.returncode == 0, cap.stderr
    assert "torn tail" not in cap.stderr and "without index rows" not in cap.stderr  # it waited for the commit
    assert imp.wait(60) == 0, imp.stderr.read()
    assert _count(db) == 201
    assert_every_whole_record_indexed(db)
    verify = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "verify", "-q"], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout


def test_free_running_imports_and_captures_lose_nothing(db, server, tmp_path):
    settings = db.settings
    env = cli_env(settings)
    procs = []
    for n in range(4):
        src = tmp_path / f"f{n}.warc.gz"
        foreign_warc(src, 150, f"free{n}")
        procs.append(subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "import-warc",
                                       str(src)], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        procs.append(subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "capture",
                                       *[server.route(f"/free{n}-{i}", f"<p>{n} {i}</p>") for i in range(5)]],
                                      cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        time.sleep(0.05)
    for p in procs:
        assert p.wait(180) == 0, p.stderr.read().decode()
    assert _count(db) == 4 * 150 + 4 * 5
    assert_every_whole_record_indexed(db)
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(settings))])
    assert check.returncode == 0, check.stdout
    verify = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "verify", "-q"], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout
