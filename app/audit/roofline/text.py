"""Tokens and alias matching shared by the hardware, quantization and model look-ups.

Names written on leaderboards differ in case, separators and noise words ("NVIDIA GeForce RTX
4090 24GB", "rtx4090", "2x 4090"), so both the text and every alias are cut into tokens the
same way and an alias matches when its tokens appear in the text in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Words that make a different product of the one before them ("4070" -> "4070 Ti", "M3" ->
#: "M3 Max", "4090" -> "4090 Laptop"). An alias never matches just before one of these, and a
#: match may not skip over one.
VARIANT_WORDS = frozenset({
    "ti", "super", "xt", "xtx", "gre", "d", "laptop", "mobile", "max", "pro", "ultra", "plus",
    "mini", "lite", "nano", "nx", "air", "flash", "next", "distill", "vision",
})

#: How many tokens a hardware alias may skip between two of its own ("H100 80GB SXM5" matches
#: the alias "H100 SXM5"; "M3 Max (16-core CPU, 40-core GPU, 128GB)" matches "M3 Max 128GB").
HARDWARE_WINDOW = 5

_SPLIT = re.compile(r"[^a-z0-9.]+")
_LONE_DOT = re.compile(r"(?<!\d)\.|\.(?!\d)")


def tokens(text: str) -> list[str]:
    """Lower-case tokens, cut at anything but letters, digits and a dot between two digits."""
    out: list[str] = []
    for part in _SPLIT.split(text.lower().replace("+", " plus ")):
        out.extend(piece for piece in _LONE_DOT.split(part) if piece)
    return out


def hardware_tokens(text: str) -> list[str]:
    """Tokens of a hardware name, with counts, memory sizes and glued suffixes put one way."""
    t = text.lower()
    t = re.sub(r"\(tm\)|\(r\)|[™®]", " ", t)
    t = re.sub(r"(\d+)\s*-?\s*(?:cores?|c)\b", r"\1core", t)           # 40-core, 40 cores, 40c
    t = re.sub(r"(\d+(?:\.\d+)?)\s*(?:gb|gib|g)\b", r"\1gb", t)         # 24 GB, 24G
    t = re.sub(r"(\d+)\s*-?\s*(?:channels?|ch)\b", r"\1 channel", t)    # 12-channel, 12ch
    t = re.sub(r"(?<![\w.])(\d{1,3})\s*[x×*]\s*(?=[a-z])", r"\1x ", t)       # 8xH100
    t = re.sub(r"\b(rtx|gtx|rx)(\d)", r"\1 \2", t)                      # rtx4090
    t = re.sub(r"(\d)(ti|super|xtx|xt)\b", r"\1 \2", t)                 # 1080ti, 7900xtx
    return tokens(t)


@dataclass(frozen=True)
class Hit:
    """One alias found in a text: how many tokens it has, where it lies, how weak it is."""
    alias: str
    size: int
    start: int
    end: int
    weak: bool

    @property
    def span(self) -> int:
        return self.end - self.start + 1

    def rank(self) -> tuple:
        # strong aliases first, then the longest alias, then the tightest match, then the earliest
        return (not self.weak, self.size, -self.span, -self.start)


def find(alias_tokens: list[str], text_tokens: list[str], *, window: int = 0) -> tuple[int, int] | None:
    """Where `alias_tokens` occur in order in `text_tokens`, as (first, last) positions.

    `window` is how many text tokens may be skipped between two alias tokens (never a variant
    word). The token after the match must not be a variant word either: "RTX 4070" does not
    match "RTX 4070 Ti SUPER".
    """
    if not alias_tokens:
        return None
    for start, token in enumerate(text_tokens):
        if token != alias_tokens[0]:
            continue
        pos = start
        for wanted in alias_tokens[1:]:
            found = None
            for candidate in range(pos + 1, min(len(text_tokens), pos + 2 + window)):
                if text_tokens[candidate] == wanted:
                    found = candidate
                    break
                if text_tokens[candidate] in VARIANT_WORDS:
                    break
            if found is None:
                break
            pos = found
        else:
            following = text_tokens[pos + 1] if pos + 1 < len(text_tokens) else None
            if following in VARIANT_WORDS:
                continue
            return start, pos
    return None


def best_hit(aliases, text_tokens: list[str], tokenize, *, window: int = 0) -> Hit | None:
    """The best of `aliases` (a leading `~` marks a weak alias) found in the tokens, or None."""
    best: Hit | None = None
    for raw in aliases:
        weak = raw.startswith("~")
        alias = raw.lstrip("~").strip()
        alias_tokens = tokenize(alias)
        where = find(alias_tokens, text_tokens, window=window)
        if where is None:
            continue
        hit = Hit(alias=alias, size=len(alias_tokens), start=where[0], end=where[1], weak=weak)
        if best is None or hit.rank() > best.rank():
            best = hit
    return best
