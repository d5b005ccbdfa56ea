"""Train the learned model linker from the labelled sets (``tests/data/real*``) and write ``linker.json``.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python scrapers/learned/train_linker.py [--out scrapers/learned/linker.json]

Examples: every figure the rules read that matches a labelled figure by value (page + figure within 0.5 %);
each candidate name of it is a row, positive when its normalised name is the label's model. The margin by
which the linker's best candidate must beat the rules' choice is chosen inside the training sets only
(out-of-fold over three groups of sets). One thread, fixed seed, sets and pages in sorted order.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import scrapers  # noqa: E402
from scrapers.learned import linker, score  # noqa: E402
from scrapers.learned.train import committed, labelled_sets  # noqa: E402

INNER_FOLDS = 3
BALANCE = True


@dataclass
class Figure:
    set_name: str
    page: str
    kind: str                      # the page's kind (scrapers.guess_kind): json | html | markdown | text
    label_model: str | None        # normalised
    rules_model: str | None
    keys: list[str]
    surfaces: list[str]
    X: np.ndarray


def page_figures(set_name: str, folder: Path, label_path: Path) -> list[Figure]:
    label = json.loads(label_path.read_text())
    body = (folder / "pages" / label["page"]).read_bytes()
    ct = label.get("content_type")
    url = (label.get("origin") or {}).get("url")
    kind = scrapers.guess_kind(body, ct)[0]
    result = scrapers.parse(body, kind=kind, content_type=ct, url=url)
    labels = [e for e in label.get("entries", []) if e.get("figure") is not None]
    got = [e.fields for e in result.entries]
    pairs = score.match(labels, got, strict=False)
    rows = {n: (k, s, X) for n, k, s, X in linker.page_rows(result.text, url, result.entries)}
    out = []
    for li, pi in pairs:
        rm = got[pi].get("model")
        k, s, X = rows.get(pi, ([], [], np.zeros((0, len(linker.FEATURES)))))
        out.append(Figure(set_name, label["page"], kind, score.norm_name(labels[li].get("model")), rm, k, s, X))
    return out


def load_corpus(log=None) -> list[Figure]:
    out = []
    for folder in labelled_sets(ROOT):
        n0 = len(out)
        for lp in committed(folder, ROOT):
            out += page_figures(folder.name, folder, lp)
        if log:
            log(f"loaded {folder.name}: {len(out) - n0} value-matched figures")
    return out


def _xy(figs: list[Figure]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows, labels and weights: each set weighs the same (the tuned set, where the rules are nearly always
    right, would otherwise teach the linker to copy them)."""
    per_set = Counter(f.set_name for f in figs)
    mean = len(figs) / max(1, len(per_set))
    Xs = [f.X for f in figs if len(f.keys)]
    ys = [np.array([k == (f.label_model or linker.NONE) for k in f.keys], dtype=np.int8) for f in figs if len(f.keys)]
    ws = [np.full(len(f.keys), (mean / per_set[f.set_name]) if BALANCE else 1.0) for f in figs if len(f.keys)]
    if not Xs:
        return np.zeros((0, len(linker.FEATURES))), np.zeros(0, dtype=np.int8), None
    return np.vstack(Xs), np.concatenate(ys), np.concatenate(ws)


def chosen(lk: linker.Linker, f: Figure) -> str | None:
    if not len(f.keys):
        return f.rules_model
    return lk.choose(f.keys, f.surfaces, f.X, f.rules_model)[0]


def fit(figs: list[Figure]) -> linker.Linker:
    """A linker trained on ``figs``, its margin chosen out-of-fold over groups of their sets."""
    sets = sorted({f.set_name for f in figs})
    groups = [sets[i::INNER_FOLDS] for i in range(INNER_FOLDS)]
    ok = {m: 0 for m in linker.MARGINS}
    for g in groups:
        inner = [f for f in figs if f.set_name not in g]
        X, y, w = _xy(inner)
        if not len(y) or y.min() == y.max():
            continue
        b = linker.fit_booster(X, y, w)
        for f in figs:
            if f.set_name not in g or not len(f.keys):
                continue
            for m in linker.MARGINS:
                name = chosen(linker.Linker(b, m), f)
                ok[m] += score.norm_name(name) == f.label_model
    margin = max(linker.MARGINS, key=lambda m: (ok[m], m))      # ties: the larger margin (closer to the rules)
    X, y, w = _xy(figs)
    return linker.Linker(linker.fit_booster(X, y, w), margin)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="train the learned model linker from tests/data/real*")
    ap.add_argument("--out", default=str(linker.MODEL_PATH), help="where to write the model (default: %(default)s)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    figs = load_corpus(log=lambda s: print(s, file=sys.stderr, flush=True))
    lk = fit(figs)
    Path(args.out).write_text(json.dumps(lk.to_dict(), sort_keys=True) + "\n")
    print(f"linker: {len(figs)} figures, margin {lk.margin}, wrote {args.out} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
