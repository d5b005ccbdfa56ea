"""How long `caveat --help` takes: the lazy command group against the same group with every command
module imported first (what `caveat --help` did before the group became lazy).

Each run is a fresh interpreter (``python -c``) so imports are not cached; ``--runs`` of each,
alternating, median wall time reported with the ratio.

    .venv/bin/python bench/cli_help.py
    .venv/bin/python bench/cli_help.py --runs 21
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAZY = "from app.cli import main; main(['--help'], prog_name='caveat')"
EAGER = "from app.cli import main; main.load_all(); main(['--help'], prog_name='caveat')"


def _time(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    lazy, eager = [], []
    for _ in range(args.runs):
        lazy.append(_time(LAZY))
        eager.append(_time(EAGER))
    lz, eg = statistics.median(lazy), statistics.median(eager)
    print(f"caveat --help, median of {args.runs}: lazy {lz * 1000:.0f} ms, every module imported "
          f"{eg * 1000:.0f} ms, {eg / lz:.1f}x faster")


if __name__ == "__main__":
    main()
