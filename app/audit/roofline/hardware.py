"""Matching a hardware name written on a leaderboard to a row of accelerators.csv."""

from __future__ import annotations

import re

from .data import Accelerator, Reference, load_reference
from .text import HARDWARE_WINDOW, Hit, best_hit, hardware_tokens

_COUNT_WORDS = {"single": 1, "one": 1, "dual": 2, "twin": 2, "two": 2, "pair of": 2, "triple": 3,
                "three": 3, "quad": 4, "four": 4, "six": 6, "eight": 8}
_NOT_A_COUNT = r"(?!\s*(?:ddr|lpddr|dimm|pcie|gen|nvlink|slot|pin|lane))"
_COUNT_PATTERNS = (
    re.compile(r"(?<![\w.])(\d{1,3})\s*[x×*]\s*" + _NOT_A_COUNT + r"(?=[a-z])"),  # 2x RTX 4090, 8xH100
    re.compile(r"[a-z0-9)]\s*[x×*]\s*(\d{1,3})\s*$"),                             # RTX 3090 x2
    re.compile(r"(?<![\w.])(\d{1,3})\s+(?:gpus?|cards?|accelerators?)\b"),         # 4 GPUs
)


def count_from_text(text: str | None) -> int | None:
    """The number of devices a hardware text states ("2x RTX 4090", "dual 3090", "x4"), or None."""
    if not text:
        return None
    lowered = text.lower()
    for pattern in _COUNT_PATTERNS:
        match = pattern.search(lowered)
        if match:
            count = int(match.group(1))
            return count if count > 0 else None
    for word, count in _COUNT_WORDS.items():
        if re.search(rf"(?<![\w-]){word}\b(?![\s-]*(?:channel|slot|rank))", lowered):
            return count
    return None


def _match(text: str, rows) -> tuple[Accelerator, Hit] | None:
    text_tokens = hardware_tokens(text)
    best: tuple[Accelerator, Hit] | None = None
    for row in rows:
        hit = best_hit(row.aliases, text_tokens, hardware_tokens, window=HARDWARE_WINDOW)
        if hit is not None and (best is None or hit.rank() > best[1].rank()):
            best = (row, hit)
    return best


def match_accelerator(text: str | None, *, kinds: tuple[str, ...] | None = None,
                      ref: Reference | None = None) -> Accelerator | None:
    """The accelerators.csv row a hardware name refers to, or None.

    Tolerant of vendor words, counts and memory sizes ("2x RTX 4090", "NVIDIA GeForce RTX 4090
    24GB", "H100 80GB SXM5", "M3 Max 40-core", "Apple M2 Ultra (76-core)"). A product whose
    variant changes the bandwidth and is not stated matches its `-unspecified` row, which carries
    the highest variant's figure; a memory size or core count that only one variant comes with
    picks that variant ("M3 Max 128GB" is the 40-core chip). `kinds` limits the rows searched
    (for example `("cpu",)` for the CPU side of an offload).
    """
    if not text or not text.strip():
        return None
    ref = ref or load_reference()
    rows = [row for row in ref.accelerators if kinds is None or row.kind in kinds]
    found = _match(text, rows)
    return found[0] if found else None
