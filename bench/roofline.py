"""What the memory-bandwidth bound (issue 28) costs: one 10,000-row page through the whole crawl (served
from 127.0.0.1, captured, parsed from the archive, stored, audited), with the bound on and off in the
same run, alternating, on two pages:

- ``random``: ``bench/parse.py``'s rows (figures drawn from 20-1,200 tok/s whatever the model and GPU, so
  most rows of a 70B-671B model are above what their hardware can decode: each a critical flag);
- ``plausible``: the same rows with every figure of a row whose bound is known and that states no draft
  width held under 0.9 of its bound (a page of physically possible figures, as real boards mostly are).

"Off" removes the ``beyond_bandwidth_limit`` rule and the ``roofline_ratio`` column's computation; what is
left is what the audit did before issue 28. The figure compared is this process's CPU time of parse +
store + audit (the machine's other core is shared), median of ``--repeat`` alternating runs.

    .venv/bin/python bench/roofline.py [--rows 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from parse import html_page, rows  # noqa: E402 - bench/ is this script's own folder
from rows import crawl_page, timed_stages  # noqa: E402

import app.audit.engine as engine  # noqa: E402
from app.audit.roofline import bound_for  # noqa: E402
from app.audit.rules.base import RULES  # noqa: E402
from app.models import Flag  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

RULE = "beyond_bandwidth_limit"


def plausible(data: list[dict]) -> tuple[list[dict], int]:
    """The rows with each figure above 0.9 of its known bound (and no draft width) brought under it."""
    out, moved = [], 0
    for i, r in enumerate(data):
        r = dict(r)
        if not r["draft"]:
            b = bound_for({"model": r["model"], "hardware": r["gpu"], "gpu_count": r["gpus"],
                           "quantization": r["quant"], "phase": "decode", "scope": "per_user"}).bound_tps
            if b and r["tps"] > 0.9 * b:
                r["tps"] = max(1.0, round(0.9 * b * (0.5 + 0.5 * (i * 7919 % 1000) / 1000), 1))
                moved += 1
        out.append(r)
    return out, moved


def run(page: str, spent: dict[str, float]) -> tuple[float, int]:
    """CPU seconds of parse + store + audit, and the flags the bound raised."""
    spent.clear()

    def flags(db) -> int:
        with db.Session() as s:
            return s.scalar(select(func.count()).select_from(Flag).where(Flag.rule == RULE)) or 0

    _wall, _cpu, _report, raised = crawl_page(page, flags)
    return sum(spent.get(k, 0.0) for k in ("parse cpu", "store cpu", "audit cpu")), raised


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spent = timed_stages()
    rule, ratio = RULES[RULE], engine._roofline_ratio
    base = rows(args.rows)
    fixed, moved = plausible(base)
    pages = {"random": html_page(base), "plausible": html_page(fixed)}
    print(f"{args.rows:,} rows; plausible page: {moved:,} figures brought under 0.9 of their bound")
    for name, page in pages.items():
        on, off, flags = [], [], 0
        for i in range(args.repeat):
            for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
                if mode == "off":
                    RULES.pop(RULE, None)
                    engine._roofline_ratio = lambda item: None
                else:
                    RULES[RULE] = rule
                    engine._roofline_ratio = ratio
                cpu, raised = run(page, spent)
                (on if mode == "on" else off).append(cpu)
                if mode == "on":
                    flags = raised
                print(f"  {name:9s} run {i + 1} bound {mode:3s}: {cpu:6.2f} s CPU (parse+store+audit)", flush=True)
        RULES[RULE] = rule
        engine._roofline_ratio = ratio
        m_on, m_off = statistics.median(on), statistics.median(off)
        print(f"{name:9s} bound on {m_on:6.2f} s, off {m_off:6.2f} s: the bound adds {100 * (m_on / m_off - 1):+.1f} % "
              f"(goal under 5 %); {flags:,} {RULE} flags raised")
    return 0


if __name__ == "__main__":
    sys.exit(main())
