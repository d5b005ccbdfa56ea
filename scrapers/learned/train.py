"""Train the learned recall net from the labelled sets (``tests/data/real*``) and write ``model.json``.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python scrapers/learned/train.py [--out scrapers/learned/model.json]

Reproducible: a fixed seed, one thread, LightGBM's deterministic mode, pages in sorted order; the same
corpus gives the same file byte for byte. The threshold is chosen inside the training data only: out-of-fold
scores over three groups of labelled sets, the threshold that maximises the strict F1 of rules + net.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import scrapers  # noqa: E402
from scrapers import learned  # noqa: E402
from scrapers.learned.score import strict_counts  # noqa: E402

SEED = 26
FIGURE_PARAMS = {"objective": "binary", "num_leaves": 31, "learning_rate": 0.08, "min_data_in_leaf": 20,
                 "feature_fraction": 0.5, "lambda_l2": 1.0, "num_threads": 1, "deterministic": True,
                 "force_row_wise": True, "seed": SEED, "verbose": -1}
PHASE_PARAMS = {"objective": "multiclass", "num_class": 3, "num_leaves": 15, "learning_rate": 0.05,
                "min_data_in_leaf": 10, "feature_fraction": 0.5, "num_threads": 1, "deterministic": True,
                "force_row_wise": True, "seed": SEED, "verbose": -1}
FIGURE_ROUNDS = 150
PHASE_ROUNDS = 80
THRESHOLDS = [round(0.1 + 0.05 * i, 2) for i in range(17)]     # 0.10 .. 0.90
INNER_FOLDS = 3


@dataclass
class Labelled:
    set_name: str
    page_name: str
    labels: list[dict]
    page: learned.Page
    y: np.ndarray          # 1: the candidate's value is a labelled figure of the page
    phase_y: np.ndarray    # 0 decode, 1 prefill, 2 e2e (of the nearest labelled figure), -1 not a figure


def labelled_sets(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / "tests" / "data").glob("real*") if (p / "labels").is_dir())


def committed(folder: Path, root: Path = ROOT) -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", str((folder / "labels").relative_to(root))], cwd=root,
                             capture_output=True, text=True, check=True).stdout.split()
        return sorted(root / p for p in out if p.endswith(".json"))
    except (OSError, subprocess.CalledProcessError):
        return sorted((folder / "labels").glob("*.json"))


def load_page(folder: Path, label_path: Path) -> tuple[dict, object, learned.Page]:
    label = json.loads(label_path.read_text())
    page_path = folder / "pages" / label["page"]
    body = page_path.read_bytes()
    ct = label.get("content_type")
    url = (label.get("origin") or {}).get("url")
    kind = scrapers.guess_kind(body, ct)[0]
    result = scrapers.parse(body, kind=kind, content_type=ct, url=url)
    page = learned.prepare(body, kind=kind, content_type=ct, url=url, entries=result.entries)
    return label, result, page


def targets(page: learned.Page, labels: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    figs = [(float(e["figure"]), e.get("phase") or "decode") for e in labels if e.get("figure") is not None]
    y = np.zeros(len(page.cands), dtype=np.int8)
    ph = np.full(len(page.cands), -1, dtype=np.int8)
    for i, c in enumerate(page.cands):
        best = None
        for f, phase in figs:
            if abs(c.value - f) <= learned.TOLERANCE * abs(f):
                d = abs(c.value - f)
                if best is None or d < best[0]:
                    best = (d, phase)
        if best is not None:
            y[i] = 1
            ph[i] = learned.PHASE_NAMES.index(best[1]) if best[1] in learned.PHASE_NAMES else 0
    return y, ph


def load_corpus(root: Path = ROOT, log=None) -> list[Labelled]:
    """The bundled labelled sets (``tests/data/real*``, committed labels only)."""
    folders = labelled_sets(root)
    out = []
    for n, folder in enumerate(folders, start=1):
        out += load_set(folder, committed(folder, root), folder.name)
        if log:
            log(f"[{n}/{len(folders)}] loaded {folder.name}: {sum(1 for p in out if p.set_name == folder.name)} pages")
    return out


def exported(folder: Path) -> list[Path]:
    """The labels of a folder in the labelled sets' format (``labels/<page>.json`` beside ``pages/<page>``,
    what ``caveat corpus export`` writes); ValueError when it is not one."""
    if not (folder / "labels").is_dir() or not (folder / "pages").is_dir():
        raise ValueError(f"{folder} is not a labelled set: it needs labels/<page>.json and pages/<page> "
                         "(the format of tests/data/real*/, what `caveat corpus export DIR` writes)")
    found = sorted((folder / "labels").glob("*.json"))
    if not found:
        raise ValueError(f"{folder}/labels holds no <page>.json label")
    return found


def load_set(folder: Path, label_paths: list[Path], set_name: str) -> list[Labelled]:
    out = []
    for lp in label_paths:
        try:
            label, _result, page = load_page(folder, lp)
            entries = label["entries"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{lp}: not a usable label ({type(exc).__name__}: {exc}); a label is "
                             "{\"page\": NAME, \"entries\": [{\"figure\": ...}, ...]} with pages/NAME beside it") from exc
        y, ph = targets(page, entries)
        out.append(Labelled(set_name, label["page"], entries, page, y, ph))
    return out


def _stack(pages: list[Labelled]):
    X = sp.vstack([p.page.X for p in pages], format="csr") if pages else None
    y = np.concatenate([p.y for p in pages]) if pages else None
    ph = np.concatenate([p.phase_y for p in pages]) if pages else None
    return X, y, ph


def fit_boosters(pages: list[Labelled]) -> tuple[lgb.Booster, lgb.Booster]:
    X, y, ph = _stack(pages)
    fig = lgb.train(FIGURE_PARAMS, lgb.Dataset(X, label=y, params={"verbose": -1, "num_threads": 1}),
                    num_boost_round=FIGURE_ROUNDS)
    pos = np.nonzero(ph >= 0)[0]
    phase = lgb.train(PHASE_PARAMS, lgb.Dataset(X[pos], label=ph[pos], params={"verbose": -1, "num_threads": 1}),
                      num_boost_round=PHASE_ROUNDS)
    return fig, phase


def union_counts(p: Labelled, props: list[learned.Proposal]) -> tuple[int, int, int]:
    rules = [e.fields for e in p.page.entries]
    return strict_counts(p.labels, rules + [q.fields for q in props])


def choose_threshold(pages: list[Labelled], log=None) -> tuple[float, dict]:
    """Out-of-fold scores over INNER_FOLDS groups of the training sets; the threshold with the best strict
    F1 of rules + proposals."""
    sets = sorted({p.set_name for p in pages})
    fold_of = {s: i % INNER_FOLDS for i, s in enumerate(sets)}
    oof: dict[int, tuple] = {}
    for k in range(INNER_FOLDS):
        train = [p for p in pages if fold_of[p.set_name] != k]
        test = [(i, p) for i, p in enumerate(pages) if fold_of[p.set_name] == k]
        if not train or not test:
            continue
        if log:
            log(f"threshold: training fold {k + 1}/{INNER_FOLDS} ({len(train)} pages), scoring {len(test)}")
        fig, phase = fit_boosters(train)
        net = learned.Net(fig, phase, 0.5)
        for i, p in test:
            oof[i] = net.scores(p.page.X)
    best, table = None, {}
    for thr in THRESHOLDS:
        tp = n_lab = n_got = 0
        for i, p in enumerate(pages):
            if i not in oof:
                continue
            props = learned.proposals_from(p.page, oof[i][0], oof[i][1], thr)
            a, b, c = union_counts(p, props)
            tp, n_lab, n_got = tp + a, n_lab + b, n_got + c
        prec, rec = (tp / n_got if n_got else 0.0), (tp / n_lab if n_lab else 0.0)
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        table[thr] = (round(prec, 4), round(rec, 4), round(f1, 4))
        if best is None or f1 > table[best][2]:
            best = thr
    return best if best is not None else 0.5, table


def fit(pages: list[Labelled], log=None) -> learned.Net:
    thr, table = choose_threshold(pages, log)
    if log:
        log(f"threshold {thr} (strict F1 of rules + proposals, out of fold); training the model on {len(pages)} pages")
    fig, phase = fit_boosters(pages)
    meta = {"version": learned.VERSION, "seed": SEED, "pages": len(pages),
            "sets": sorted({p.set_name for p in pages}), "threshold_table": {str(k): v for k, v in table.items()}}
    return learned.Net(fig, phase, thr, meta)


def dumps(net: learned.Net) -> str:
    return json.dumps({"version": learned.VERSION, "threshold": net.threshold, "meta": net.meta,
                       "figure": net.figure.model_to_string(num_iteration=-1),
                       "phase": net.phase.model_to_string(num_iteration=-1)}, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(learned.MODEL_PATH))
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    pages = load_corpus(log=lambda s: print(s, file=sys.stderr))
    t1 = time.monotonic()
    net = fit(pages)
    Path(args.out).write_text(dumps(net))
    print(f"{len(pages)} pages, {sum(len(p.page.cands) for p in pages)} candidates, "
          f"{int(sum(p.y.sum() for p in pages))} positive; threshold {net.threshold}; "
          f"features {t1 - t0:.1f} s, training {time.monotonic() - t1:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
