"""The quote view of a word that occurs in every row (issue 24, item 6): ``GET /c/ID?q=WORD`` on a
table of N rows, each row holding the word, served by the real app in-process (the HTML page and its
JSON twin). Before the fix the highlighting was quadratic (10.3 s at 2,000 rows, over 10 minutes at
20,000); it must be linear, highlight at most ``quoteview.MAX_SHOWN`` occurrences and count the rest.

    .venv/bin/python bench/quoteview.py                       # 2,000 and 20,000 rows
    .venv/bin/python bench/quoteview.py --rows 2000 --rows 20000 --rows 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from app.config import Settings  # noqa: E402
from app.db import Database  # noqa: E402
from app.main import create_app  # noqa: E402
from archive import quoteview  # noqa: E402
from tests.replay_fixtures import add_snapshot  # noqa: E402


def board(rows: int) -> str:
    body = "".join(f"<tr><td>model-{i}</td><td>{i} tok/s WORD</td></tr>" for i in range(rows))
    return f"<html><body><h1>Board</h1><table><tr><th>Model</th><th>Speed</th></tr>{body}</table></body></html>"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, action="append", help="rows in the table (repeatable); default 2000 and 20000")
    ap.add_argument("--repeat", type=int, default=3, help="requests per size and form (median reported)")
    args = ap.parse_args()
    sizes = args.rows or [2000, 20000]
    with tempfile.TemporaryDirectory(prefix="caveat-bench-quote-") as tmp:
        settings = Settings(data_dir=Path(tmp), secret_key="bench", base_url="http://caveat.test")
        settings.warc_dir.mkdir(parents=True, exist_ok=True)
        db = Database(settings)
        db.upgrade()
        db.dispose()
        app = create_app(settings)
        ids = {}
        with app.state.db.Session() as s:
            for k, n in enumerate(sizes):
                ids[n] = add_snapshot(s, settings, f"https://board.example/{n}", f"2026010110000{k:04d}",
                                      board(n)).citation_id
            s.commit()
        print(f"MAX_SHOWN={quoteview.MAX_SHOWN} BUDGET_S={quoteview.BUDGET_S}")
        print("| rows | page KB | HTML s (median) | JSON s (median) | occurrences | highlighted | more |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        with TestClient(app, base_url="http://caveat.test") as client:
            for n in sizes:
                times = {"html": [], "json": []}
                j = None
                for _ in range(args.repeat):
                    for form, path in (("html", f"/c/{ids[n]}"), ("json", f"/c/{ids[n]}.json")):
                        t = time.perf_counter()
                        r = client.get(path, params={"q": "WORD"})
                        times[form].append(time.perf_counter() - t)
                        assert r.status_code == 200, r.text[:300]
                        if form == "json":
                            j = r.json()
                print(f"| {n:,} | {len(board(n)) // 1024:,} | {statistics.median(times['html']):.3f} | "
                      f"{statistics.median(times['json']):.3f} | {j['occurrences']:,}{'+' if j['partial'] else ''} | "
                      f"{j['shown']} | {j['more']:,} |")
        app.state.db.dispose()


if __name__ == "__main__":
    main()
