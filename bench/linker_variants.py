"""Variants of the learned model linker, leave-one-set-out (issue 26 item 3): what was tried beside the
linker ``bench/loso.py --linker`` scores, so the numbers in docs/parsers.md can be re-run.

    PYTHONPATH=. .venv/bin/python bench/linker_variants.py      # about 3 min here

For each held-out set (every set but the tuned ``real``), trained on all the other sets:

- ``argmax``: the linker's booster (the rules' choice among its features), its top candidate taken always;
- ``rank-alone``: a LambdaRank booster over each figure's candidates without the rules' features, its top
  candidate taken always;
- ``gated``: that ranker, and a second booster (trained on the ranker's out-of-fold picks inside the
  training sets, three groups of them) deciding whether its pick replaces the rules' choice (above 0.5).

Printed: model-ok of the rules and of each variant over the held-out sets, and for ``argmax`` and
``rank-alone`` how many of the rules' wrong figures (whose label is among the candidates) they fix and how
many right ones they break.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lightgbm as lgb
import numpy as np

from scrapers.learned import linker, score, train_linker

F = linker.FEATURES
RULES_FEATURES = {"is_rules", "rules_none", "rules_variant", "rules_prefix_of", "rules_quant_cut"}
COLS = [i for i, f in enumerate(F) if f not in RULES_FEATURES]
RANK = dict(linker.PARAMS, objective="lambdarank")
GATE = {"objective": "binary", "num_leaves": 7, "learning_rate": 0.05, "min_data_in_leaf": 10, "num_threads": 1,
        "deterministic": True, "force_row_wise": True, "seed": 26, "verbose": -1}
GATE_FEATURES = [F.index(g) for g in ("tool", "has_size", "has_moe", "family", "n_mentions", "same_line",
                                      "same_para", "min_d", "in_title", "in_heading_above", "draft_ctx",
                                      "quant_tail", "is_none")]


def _key(v) -> str:
    return score.norm_name(v) or linker.NONE


def rank_fit(tr):
    X = np.vstack([f.X[:, COLS] for f in tr])
    y = np.concatenate([[k == _key(f.label_model) for k in f.keys] for f in tr]).astype(int)
    return lgb.train(RANK, lgb.Dataset(X, label=y, group=[len(f.keys) for f in tr]), num_boost_round=linker.ROUNDS)


def gate_row(f, sc):
    rk = _key(f.rules_model)
    b = int(np.argmax(sc))
    r = f.keys.index(rk) if rk in f.keys else None
    srt = np.sort(sc)[::-1]
    rs = sc[r] if r is not None else srt[-1] - 1
    row = [sc[b], rs, sc[b] - rs, srt[0] - (srt[1] if len(srt) > 1 else srt[0] - 5), float(f.rules_model is None),
           len(f.keys)]
    row += list(f.X[b, GATE_FEATURES]) + (list(f.X[r, GATE_FEATURES]) if r is not None else [-1] * len(GATE_FEATURES))
    return row, b


def gate_fit(tr):
    sets = sorted({f.set_name for f in tr})
    R, Y = [], []
    for g in (sets[i::3] for i in range(3)):
        b = rank_fit([f for f in tr if f.set_name not in g])
        for f in tr:
            if f.set_name not in g:
                continue
            row, bi = gate_row(f, b.predict(f.X[:, COLS]))
            bc, rc = f.keys[bi] == _key(f.label_model), _key(f.rules_model) == _key(f.label_model)
            if f.keys[bi] != _key(f.rules_model) and bc != rc:
                R.append(row)
                Y.append(int(bc))
    return lgb.train(GATE, lgb.Dataset(np.array(R), label=np.array(Y)), num_boost_round=100)


def main() -> int:
    allf = train_linker.load_corpus()
    figs = [f for f in allf if len(f.keys)]
    n = rules = 0
    ok = {"argmax": 0, "rank-alone": 0, "gated": 0}
    fix = {"argmax": [0, 0], "rank-alone": [0, 0]}
    room = 0
    for s in sorted({f.set_name for f in allf}):
        if s == "real":
            continue
        tr = [f for f in figs if f.set_name != s]
        X, y, w = train_linker._xy(tr)
        lin = linker.fit_booster(X, y, w)
        rb, gate = rank_fit(tr), gate_fit(tr)
        for f in (f for f in allf if f.set_name == s):
            lab, rk = _key(f.label_model), _key(f.rules_model)
            n += 1
            rules += rk == lab
            picks = {"argmax": rk, "rank-alone": rk, "gated": rk}
            if len(f.keys):
                picks["argmax"] = f.keys[int(np.argmax(lin.predict(f.X, num_threads=1)))]
                sc = rb.predict(f.X[:, COLS], num_threads=1)
                picks["rank-alone"] = f.keys[int(np.argmax(sc))]
                row, bi = gate_row(f, sc)
                if f.keys[bi] != rk and gate.predict(np.array([row]), num_threads=1)[0] > 0.5:
                    picks["gated"] = f.keys[bi]
            room += rk != lab and lab in f.keys
            for v, p in picks.items():
                ok[v] += p == lab
                if v in fix:
                    fix[v][0] += rk != lab and p == lab
                    fix[v][1] += rk == lab and p != lab
    print(f"held-out figures {n}; rules model-ok {rules / n:.3f}; the rules wrong and the label among the "
          f"candidates: {room}")
    for v, k in ok.items():
        extra = f"  (fixes {fix[v][0]}, breaks {fix[v][1]})" if v in fix else ""
        print(f"{v:11s} {k / n:.3f}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
