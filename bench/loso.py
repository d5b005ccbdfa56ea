"""Leave-one-set-out: how the reader does on a labelled set it has never seen (issue 26, item 1).

For each labelled set folder tests/data/real*/ the learned parts are trained on all the other sets
(their threshold chosen inside those sets only: scrapers/learned/train.py, out-of-fold over three groups
of the training sets) and the set left out is scored:

- strict entries P / R (tests/test_real_corpus.py ``match``: page, figure within 0.5 %, model, test,
  phase) for the rules alone, the learned part alone (every figure the net is confident about, named as a
  proposal is named), and rules + learned (the rules' entries plus the proposals for figures they did
  not read: de-duplicated by figure);
- by figure value only (page + figure within 0.5 %, one to one) for the same three;
- phase accuracy of the learned part and model-linking accuracy (rules + learned) on figures matched by
  value.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python bench/loso.py [--cache /tmp/loso.pkl] [--sets real-heldout17,...]
    PYTHONPATH=. .venv/bin/python bench/loso.py --first-run     # the rules as they are today, per set
    PYTHONPATH=. .venv/bin/python bench/loso.py --linker        # model linking: the rules vs the learned linker
    PYTHONPATH=. .venv/bin/python bench/loso.py --linker-speed  # what the linker would add to a parse

``--linker``: for each set the learned model linker (``scrapers/learned/linker.py``) is trained on all the
other sets (its override margin chosen out-of-fold inside them: ``scrapers/learned/train_linker.py``) and
the figures the rules read in the set left out, matched to labelled figures by value, are scored: the share
whose model is the label's (``score.norm_name``) for the rules' choice and for the linker's.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import scrapers  # noqa: E402
from scrapers import learned  # noqa: E402
from scrapers.learned import linker, score, train, train_linker  # noqa: E402
from tests.test_real_corpus import match as strict_match  # noqa: E402


def _order(name: str) -> tuple:
    tail = name.replace("real-heldout", "").replace("real", "")
    return (0, 0) if name == "real" else (1, int(tail) if tail.isdigit() else 1)


def _label_of(name: str) -> str:
    return "tuned (real)" if name == "real" else f"held-out {name.replace('real-heldout', '') or '1'}"


class Tally:
    def __init__(self):
        self.n = {}

    def add(self, key: str, tp: int, lab: int, got: int) -> None:
        a = self.n.setdefault(key, [0, 0, 0])
        a[0], a[1], a[2] = a[0] + tp, a[1] + lab, a[2] + got

    def pr(self, key: str) -> tuple[float, float]:
        tp, lab, got = self.n.get(key, [0, 0, 0])
        return (tp / got if got else 0.0), (tp / lab if lab else 0.0)


def score_page(p: train.Labelled, props_all: list, props_new: list, t: Tally) -> None:
    labels = [e for e in p.labels if e.get("figure") is not None]
    rules = [e.fields for e in p.page.entries]
    alone = [q.fields for q in props_all]
    union = rules + [q.fields for q in props_new]
    for key, got in (("rules", rules), ("learned", alone), ("union", union)):
        t.add(key, len(strict_match(labels, got)), len(labels), len(got))
        vp = score.match(labels, got, strict=False)
        t.add(key + "/value", len(vp), len(labels), len(got))
        if key == "learned":
            ok = sum((labels[li].get("phase") or "decode") == got[pi].get("phase") for li, pi in vp)
            t.add("phase", ok, len(vp), len(vp))
        if key in ("union", "rules"):
            ok = sum(score.norm_name(labels[li].get("model")) == score.norm_name(got[pi].get("model")) for li, pi in vp)
            t.add(key + "/model", ok, len(vp), len(vp))


def load(cache: str | None) -> list[train.Labelled]:
    if cache and Path(cache).exists():
        return pickle.loads(Path(cache).read_bytes())
    pages = train.load_corpus(log=lambda s: print(s, file=sys.stderr, flush=True))
    if cache:
        Path(cache).write_bytes(pickle.dumps(pages))
    return pages


def first_run(pages: list[train.Labelled]) -> None:
    print(f"{'set':16s} {'pages':>5s} {'labelled':>8s} {'parsed':>6s}  strict P / R   value P / R   model ok")
    t_all = Tally()
    for s in sorted({p.set_name for p in pages}, key=_order):
        t = Tally()
        sub = [p for p in pages if p.set_name == s]
        for p in sub:
            score_page(p, [], [], t)
            if s != "real":
                score_page(p, [], [], t_all)
        P, R = t.pr("rules")
        vP, vR = t.pr("rules/value")
        print(f"{_label_of(s):16s} {len(sub):5d} {t.n['rules'][1]:8d} {t.n['rules'][2]:6d}  {P:5.2f} / {R:4.2f}"
              f"   {vP:5.2f} / {vR:4.2f}   {t.pr('rules/model')[1]:5.2f}")
    P, R = t_all.pr("rules")
    vP, vR = t_all.pr("rules/value")
    print(f"{'held-out (all)':16s} {'':5s} {t_all.n['rules'][1]:8d} {t_all.n['rules'][2]:6d}  {P:5.2f} / {R:4.2f}"
          f"   {vP:5.2f} / {vR:4.2f}   {t_all.pr('rules/model')[1]:5.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="leave-one-set-out scores of the rules and the learned recall net")
    ap.add_argument("--cache", help="pickle of the parsed corpus and its features (made if missing)")
    ap.add_argument("--sets", help="comma-separated set folder names to leave out (default: every set)")
    ap.add_argument("--first-run", action="store_true", help="only the rules as they are today, per set")
    ap.add_argument("--speed", action="store_true", help="pages/s of the learned part alone (shipped model)")
    ap.add_argument("--linker", action="store_true",
                    help="model-linking accuracy, held out per set: the rules' choice vs the learned linker's")
    ap.add_argument("--linker-speed", action="store_true",
                    help="parse alone vs parse + the learned linker on seed 002 and a 2,000-row page (ratio)")
    args = ap.parse_args(argv)
    if args.linker_speed:
        return linker_speed()
    if args.linker:
        return linker_table(args.sets.split(",") if args.sets else None)
    if args.speed:
        return speed()
    t0 = time.monotonic()
    pages = load(args.cache)
    print(f"corpus: {len(pages)} pages, {sum(len(p.page.cands) for p in pages)} candidates "
          f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
    if args.first_run:
        first_run(pages)
        return 0
    sets = sorted({p.set_name for p in pages}, key=_order)
    chosen = args.sets.split(",") if args.sets else sets
    print("strict = page + figure within 0.5% + model + test + phase; value = page + figure; "
          "phase (learned) and model (rules+learned) on value-matched figures")
    print(f"{'set':16s} {'lab':>4s} {'thr':>4s} | {'rules P/R':>11s} {'learned P/R':>11s} {'union P/R':>11s} | "
          f"{'value: rules':>12s} {'learned':>11s} {'union':>11s} | {'phase':>5s} {'model':>5s} {'model(r)':>8s} {'s':>4s}")
    total = Tally()
    for s in chosen:
        t1 = time.monotonic()
        net = train.fit([p for p in pages if p.set_name != s])
        t = Tally()
        for p in pages:
            if p.set_name != s:
                continue
            p_fig, p_phase = net.scores(p.page.X)
            props_all = learned.proposals_from(p.page, p_fig, p_phase, net.threshold, only_unread=False)
            props_new = [q for q in props_all if not _read(p, q)]
            score_page(p, props_all, props_new, t)
            if s != "real":
                score_page(p, props_all, props_new, total)
        print(_row(_label_of(s), t, net.threshold, time.monotonic() - t1), flush=True)
    print(_row("held-out (all)", total, None, time.monotonic() - t0))
    return 0


def linker_folds(sets: list[str]) -> list[tuple[str, list[str]]]:
    """(held-out set, the sets its linker trains on): every set but the one scored."""
    return [(s, [t for t in sets if t != s]) for s in sets]


def linker_table(only: list[str] | None = None) -> int:
    t0 = time.monotonic()
    figs = train_linker.load_corpus(log=lambda s: print(s, file=sys.stderr, flush=True))
    sets = sorted({f.set_name for f in figs}, key=_order)
    print("model ok = share of the rules' figures matched to a labelled figure by value whose model is the "
          "label's (score.norm_name); linker trained on the other sets only, its margin chosen inside them")
    print(f"{'set':16s} {'figures':>7s} {'rules':>6s} {'linker':>6s} {'changed':>7s} {'margin':>6s}")
    tot = [0, 0, 0, 0]
    kinds: dict[str, list[int]] = {}
    for s, train_sets in linker_folds(sets):
        if only and s not in only:
            continue
        assert s not in train_sets
        lk = train_linker.fit([f for f in figs if f.set_name in train_sets])
        held = [f for f in figs if f.set_name == s]
        r = sum(score.norm_name(f.rules_model) == f.label_model for f in held)
        picks = [train_linker.chosen(lk, f) for f in held]
        ln = sum(score.norm_name(p) == f.label_model for p, f in zip(picks, held))
        ch = sum(score.norm_name(p) != score.norm_name(f.rules_model) for p, f in zip(picks, held))
        n = max(1, len(held))
        print(f"{_label_of(s):16s} {len(held):7d} {r / n:6.3f} {ln / n:6.3f} {ch:7d} {lk.margin:6.2f}", flush=True)
        if s != "real":
            tot = [tot[0] + len(held), tot[1] + r, tot[2] + ln, tot[3] + ch]
            for p, f in zip(picks, held):
                k = kinds.setdefault(f.kind, [0, 0, 0, 0])
                k[0] += 1
                k[1] += score.norm_name(f.rules_model) == f.label_model
                k[2] += score.norm_name(p) == f.label_model
                k[3] += score.norm_name(p) != score.norm_name(f.rules_model)
    n = max(1, tot[0])
    print(f"{'held-out (all)':16s} {tot[0]:7d} {tot[1] / n:6.3f} {tot[2] / n:6.3f} {tot[3]:7d}       "
          f"({time.monotonic() - t0:.0f} s)")
    for kind, (m, r, ln, ch) in sorted(kinds.items()):
        print(f"{'  kind ' + kind:16s} {m:7d} {r / max(1, m):6.3f} {ln / max(1, m):6.3f} {ch:7d}")
    return 0


def linker_speed(repeat: int = 3) -> int:
    """``scrapers.parse`` alone vs parse + the linker (index the page, features and scores of every figure's
    candidates, the choice) on seed 002 and the 2,000-row HTML board of bench/parse.py; one thread, the
    linker trained on every labelled set beforehand (not timed)."""
    from bench.parse import html_page, rows
    lk = train_linker.fit(train_linker.load_corpus())
    seed = next(ROOT.glob("tests/data/real/pages/002_*"))
    label = json.loads(next(ROOT.glob("tests/data/real/labels/002_*.json")).read_text())
    cases = [(f"seed {seed.name}", seed.read_bytes(), label.get("content_type")),
             ("2,000-row HTML board", html_page(rows(2000)).encode(), "text/html; charset=utf-8")]
    for name, body, ct in cases:
        kind = scrapers.guess_kind(body, ct)[0]
        off = on = 1e9
        for _ in range(repeat):
            t = time.perf_counter()
            r = scrapers.parse(body, kind=kind, content_type=ct)
            off = min(off, time.perf_counter() - t)
            t = time.perf_counter()
            r = scrapers.parse(body, kind=kind, content_type=ct)
            picks = [lk.choose(k, sf, X, r.entries[n].fields.get("model"))
                     for n, k, sf, X in linker.page_rows(r.text, None, r.entries)]
            on = min(on, time.perf_counter() - t)
        print(f"{name}: {len(r.entries)} entries, {len(picks)} linked; parse {off * 1000:.0f} ms, "
              f"parse + linker {on * 1000:.0f} ms, ratio {on / off:.2f}x (best of {repeat}, one thread)")
    return 0


def speed() -> int:
    """``learned.propose`` alone (candidates, features, scores, naming) on every labelled page, the rules'
    entries given (their parse not timed), one thread, the shipped model loaded once beforehand."""
    net = learned.load()
    jobs = []
    for folder in train.labelled_sets():
        for lp in train.committed(folder):
            label = json.loads(lp.read_text())
            body = (folder / "pages" / label["page"]).read_bytes()
            ct = label.get("content_type")
            kind = scrapers.guess_kind(body, ct)[0]
            jobs.append((body, kind, ct, scrapers.parse(body, kind=kind, content_type=ct).entries))
    best = None
    for _ in range(3):
        t = time.perf_counter()
        n = sum(len(learned.propose(b, kind=k, content_type=ct, entries=e, net=net)) for b, k, ct, e in jobs)
        secs = time.perf_counter() - t
        best = secs if best is None else min(best, secs)
    size = sum(len(b) for b, *_ in jobs)
    print(f"learned part alone: {len(jobs)} pages ({size / 1e6:.1f} MB), {n} proposals, best of 3 {best:.2f} s = "
          f"{len(jobs) / best:.0f} pages/s ({1000 * best / len(jobs):.1f} ms/page), one thread")
    return 0


def _read(p: train.Labelled, q) -> bool:
    return any(isinstance(e.fields.get("headline_tps"), (int, float))
               and abs(float(e.fields["headline_tps"]) - q.figure) <= learned.TOLERANCE * abs(q.figure)
               for e in p.page.entries)


def _row(name: str, t: Tally, thr, secs: float) -> str:
    def pr(k):
        P, R = t.pr(k)
        return f"{P:.2f}/{R:.2f}"
    return (f"{name:16s} {t.n.get('rules', [0, 0])[1]:4d} {('%.2f' % thr) if thr is not None else '  - ':>4s} | "
            f"{pr('rules'):>11s} {pr('learned'):>11s} {pr('union'):>11s} | {pr('rules/value'):>12s} "
            f"{pr('learned/value'):>11s} {pr('union/value'):>11s} | {t.pr('phase')[1]:5.2f} "
            f"{t.pr('union/model')[1]:5.2f} {t.pr('rules/model')[1]:8.2f} {secs:4.0f}")


if __name__ == "__main__":
    raise SystemExit(main())
