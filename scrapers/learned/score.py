"""The strict matcher of ``tests/test_real_corpus.py`` (page, figure within 0.5 %, model, test, phase), and
the figure-only one, for choosing thresholds inside training folds (``scrapers`` never imports ``tests``;
``tests/test_learned.py`` checks the two matchers agree)."""

from __future__ import annotations

import re


def norm_name(v) -> str | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    if "/" in s:
        s = s.rsplit("/", 1)[-1]
    s = re.sub(r"[\s_\-]+", "-", s).strip("-")
    return s or None


def _close(fig: float, val) -> bool:
    return val is not None and abs(float(val) - fig) <= 0.005 * abs(fig)


def agrees(lab: dict, got: dict, strict: bool = True) -> bool:
    if not _close(float(lab["figure"]), got.get("headline_tps")):
        return False
    if not strict:
        return True
    return (norm_name(lab.get("model")) == norm_name(got.get("model"))
            and (lab.get("test") or None) == (got.get("test") or None)
            and (lab.get("phase") or None) == (got.get("phase") or None))


def match(labels: list[dict], parsed: list[dict], strict: bool = True) -> list[tuple[int, int]]:
    """Greedy one-to-one pairs (label index, parsed index), labels in order."""
    pairs, used = [], set()
    for li, lab in enumerate(labels):
        for pi, got in enumerate(parsed):
            if pi not in used and agrees(lab, got, strict):
                used.add(pi)
                pairs.append((li, pi))
                break
    return pairs


def strict_counts(labels: list[dict], parsed: list[dict], strict: bool = True) -> tuple[int, int, int]:
    """(matched, labelled, parsed) on one page."""
    got = [p for p in parsed if p.get("headline_tps") is not None]
    return len(match(labels, got, strict)), len(labels), len(got)
