"""Entry precision and recall on the real corpus (tests/data/real): pages nobody here wrote, labelled by hand.

Only pages whose label is committed in git are scored (a label being written is not yet a label).
A parsed entry matches a labelled one strictly: same page, headline figure within 0.5 % of ``figure``,
the same model (lower-cased, organisation prefix before '/' dropped, spaces/underscores/hyphens alike;
a null label model matches only an entry without one), the same ``test`` (null = absent) and the same
``phase``. Field agreement is then measured on matched pairs. Flags and working numbers need the app's
audit and are not scored here.

Run ``.venv/bin/python tests/test_real_corpus.py`` for the per-page table alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import scrapers  # noqa: E402

REAL = ROOT / os.environ.get("CAVEAT_TEST_REAL_CORPUS", "tests/data/real")   # another labelled folder: held-out pages
FIELDS_SCORED = ("hardware", "engine", "scope", "concurrency", "draft_tokens", "steady_low")
# Gate: the target, 0.95 for both (measured 0.97 / 0.96 on 48 pages, docs/parsers.md)
# (docs/parsers.md states the target and the measured figures side by side).
TARGET = 0.95
GATE_PRECISION = 0.95
GATE_RECALL = 0.95


def committed_labels() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", str((REAL / "labels").relative_to(ROOT))], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [ROOT / p for p in out.split() if p.endswith(".json")]


def norm_name(v) -> str | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    if "/" in s:
        s = s.rsplit("/", 1)[-1]
    s = re.sub(r"[\s_\-]+", "-", s).strip("-")
    return s or None


def norm_value(f: str, v):
    if v is None:
        return None
    if f in ("hardware", "engine", "scope", "model"):
        return norm_name(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return round(float(v), 3)
    return v


def page_kind(page: Path, content_type: str | None) -> str:
    return scrapers.guess_kind(page.read_bytes(), content_type)[0]


def parse_page(label: dict):
    page = REAL / "pages" / label["page"]
    ct = label.get("content_type")
    url = (label.get("origin") or {}).get("url")      # the crawl passes the snapshot's URL too
    return scrapers.parse(page.read_bytes(), kind=page_kind(page, ct), content_type=ct, url=url)


def _agrees(lab: dict, got: dict) -> bool:
    fig, val = float(lab["figure"]), got.get("headline_tps")
    if val is None or abs(float(val) - fig) > 0.005 * abs(fig):
        return False
    if norm_name(lab.get("model")) != norm_name(got.get("model")):
        return False
    if (lab.get("test") or None) != (got.get("test") or None):
        return False
    return (lab.get("phase") or None) == (got.get("phase") or None)


def match(labels: list[dict], parsed: list[dict]) -> list[tuple[int, int]]:
    """Pairs (label index, parsed index): each label takes the agreeing entry that shares most fields."""
    pairs, used = [], set()
    for li, lab in enumerate(labels):
        best, best_n = None, -1
        for pi, got in enumerate(parsed):
            if pi in used or not _agrees(lab, got):
                continue
            n = sum(norm_value(f, lab.get(f)) == norm_value(f, got.get(f)) for f in FIELDS_SCORED)
            if n > best_n:
                best, best_n = pi, n
        if best is not None:
            used.add(best)
            pairs.append((li, best))
    return pairs


def score_corpus(labels: list[Path] | None = None, entries_of=None) -> dict:
    """Scores of the reader on ``labels`` (the committed ones by default); ``entries_of(label)`` gives
    the entries to score instead of the parser's (a reviewer-corrected reading, as fields dicts)."""
    rows, tp, n_lab, n_got = [], 0, 0, 0
    agree = {f: 0 for f in FIELDS_SCORED}
    for path in labels if labels is not None else committed_labels():
        label = json.loads(path.read_text())
        if entries_of is not None:
            parsed = [f for f in entries_of(label) if f.get("headline_tps") is not None]
        else:
            result = parse_page(label)
            parsed = [e.fields for e in result.entries if e.fields.get("headline_tps") is not None]
        pairs = match(label["entries"], parsed)
        for li, pi in pairs:
            lab, got = label["entries"][li], parsed[pi]
            for f in FIELDS_SCORED:
                agree[f] += norm_value(f, lab.get(f)) == norm_value(f, got.get(f))
        tp, n_lab, n_got = tp + len(pairs), n_lab + len(label["entries"]), n_got + len(parsed)
        rows.append((label["page"], len(label["entries"]), len(parsed), len(pairs)))
    return {"rows": rows, "tp": tp, "labelled": n_lab, "parsed": n_got,
            "precision": tp / n_got if n_got else 0.0, "recall": tp / n_lab if n_lab else 0.0,
            "fields": {f: (agree[f] / tp if tp else 0.0) for f in FIELDS_SCORED}}


def report(s: dict) -> str:
    lines = [f"{'page':52s} {'labelled':>8s} {'parsed':>7s} {'matched':>8s} {'P':>5s} {'R':>5s}"]
    for page, n_lab, n_got, tp in s["rows"]:
        p = f"{tp / n_got:.2f}" if n_got else "  -  "
        r = f"{tp / n_lab:.2f}" if n_lab else "  -  "
        lines.append(f"{page:52s} {n_lab:8d} {n_got:7d} {tp:8d} {p:>5s} {r:>5s}")
    lines.append(f"{'ALL (' + str(len(s['rows'])) + ' pages)':52s} {s['labelled']:8d} {s['parsed']:7d} {s['tp']:8d} "
                 f"{s['precision']:5.2f} {s['recall']:5.2f}")
    lines.append("field agreement on matched entries: "
                 + ", ".join(f"{f} {v:.2f}" for f, v in s["fields"].items()))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def scored():
    labels = committed_labels()
    if not labels:
        pytest.skip("no committed labels (not a git checkout?)")
    return score_corpus(labels)


def test_entry_precision_and_recall(scored):
    print("\n" + report(scored))
    assert scored["precision"] >= GATE_PRECISION and scored["recall"] >= GATE_RECALL, \
        f"target {TARGET}; gate P>={GATE_PRECISION} R>={GATE_RECALL}\n" + report(scored)


def _every_labelled_page() -> list[tuple[Path, Path]]:
    """(folder, label) for every committed label of the tuned corpus and of every held-out set."""
    out = []
    for folder in sorted((ROOT / "tests" / "data").glob("real*")):
        try:
            listed = subprocess.run(["git", "ls-files", str((folder / "labels").relative_to(ROOT))], cwd=ROOT,
                                    capture_output=True, text=True, check=True).stdout.split()
        except (OSError, subprocess.CalledProcessError):
            continue
        out += [(folder, ROOT / p) for p in listed if p.endswith(".json")]
    return out


def test_every_selector_pins_its_quote_in_the_decoded_text():
    """On every committed page of every labelled set (the held-out ones too, whose scores are not
    gated): text[start:end] == exact == quotes[field], prefix/suffix around it."""
    global REAL
    pages = _every_labelled_page()
    assert len({f for f, _p in pages}) >= 2, "the held-out sets are missing"
    saved = REAL
    try:
        for folder, path in pages:
            REAL = folder
            _pins(json.loads(path.read_text()))
    finally:
        REAL = saved


def _pins(label: dict) -> None:
    r = parse_page(label)
    for e in r.entries:
        for f, sel in e.selectors.items():
            assert r.text[sel["start"]:sel["end"]] == sel["exact"] == e.quotes[f], (label["page"], f, sel)
            assert r.text[:sel["start"]].endswith(sel["prefix"]) and r.text[sel["end"]:].startswith(sel["suffix"])
        if "headline_tps" in e.quotes:
            assert "headline_tps" in e.selectors, (label["page"], e.quotes["headline_tps"])


if __name__ == "__main__":
    print(report(score_corpus()))
