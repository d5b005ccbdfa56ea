"""Output checks: a measured number counts only when the output it timed is real text.

Each check returns problems in words (empty: passed). :func:`check_output` runs them all on one
response: non-empty, the token count agrees with what was streamed, not degenerate (a repeat loop seen
as periodicity over tokens or characters, a low distinct n-gram ratio, a compression ratio far below
prose's), not garbage (printable text, a plausible share of common English words), and an expected
answer where the prompt has one. Thresholds are module constants, documented in docs/measure.md.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from operator import eq

from app.measure.words import COMMON

MIN_TEXT_CHARS = 80          # below this the statistics are not read (a short answer is not a loop)
PERIOD_COVER = 0.5           # a cycle must cover at least half the output to count as a loop
PERIOD_MATCH = 0.9           # share of positions that must equal the one a period earlier
MIN_DISTINCT_4GRAM = 0.5     # distinct word 4-grams / all word 4-grams
MIN_COMPRESSION = 0.2        # zlib bytes / text bytes; prose of this length is ~0.4 to 0.6
MIN_PRINTABLE = 0.97         # share of characters that are printable or ordinary whitespace
MIN_COMMON_WORDS = 0.2       # share of words in the common-word list (prose: ~0.5; token soup: ~0)
MIN_WORDS = 20
BLOCK = 24                   # items compared at a time when a period is tried
_WHITESPACE = str.maketrans("", "", "\n\r\t ")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def _period(seq: list, *, cover: float = PERIOD_COVER, match: float = PERIOD_MATCH,
            longest: int | None = None) -> tuple[int, float] | None:
    """The shortest period p (1 .. len/3, at most ``longest``) with which the tail of ``seq`` repeats
    itself over at least ``cover`` of the sequence; returns (p, share of the sequence the loop covers)
    or None. A period is tried in full only when the last ``max(3p, 20)`` items already match it."""
    n = len(seq)
    if n < 6:
        return None
    for p in range(1, min(n // 3, longest or n) + 1):
        window = max(3 * p, 20)
        if window + p > n:
            break
        # the last ``window`` items against the ones p earlier, a block at a time from the end, giving up
        # as soon as more differ than the match share allows (prose fails within a block or two)
        allowed = window - match * window
        differ = 0
        for end in range(n, n - window, -BLOCK):
            lo = max(end - BLOCK, n - window)
            differ += (end - lo) - sum(map(eq, seq[lo:end], seq[lo - p:end - p]))
            if differ > allowed:
                break
        if differ > allowed:
            continue
        same = total = 0
        start = n
        for i in range(n - 1, p - 1, -1):  # walk back while positions equal the one p earlier
            total += 1
            if seq[i] == seq[i - p]:
                same += 1
            if total >= window:
                if same / total < match:
                    break
                start = i - p
        covered = (n - start) / n if start < n else 0.0
        if covered >= cover and n - start >= 3 * p:
            return p, covered
    return None


def degeneracy(text: str, tokens: list[str] | None = None) -> list[str]:
    """A repeat loop or degenerate text: periodicity over tokens and characters, distinct n-gram ratio,
    compression ratio."""
    problems: list[str] = []
    if len(text) < MIN_TEXT_CHARS:
        return problems
    if tokens and len(tokens) >= 12:
        hit = _period(tokens)
        if hit:
            problems.append(f"repeat loop: the output repeats a cycle of {hit[0]} token(s) over "
                            f"{hit[1]:.0%} of its tokens")
    if not problems:
        hit = _period(list(text[-2000:]), longest=200)
        if hit:
            problems.append(f"repeat loop: the text repeats a cycle of {hit[0]} character(s) over "
                            f"{hit[1]:.0%} of its end")
    w = [x.lower() for x in _WORD.findall(text)]
    grams = [tuple(w[i:i + 4]) for i in range(len(w) - 3)]
    if len(grams) >= 20:
        ratio = len(set(grams)) / len(grams)
        if ratio < MIN_DISTINCT_4GRAM:
            problems.append(f"degenerate: only {ratio:.0%} of its word 4-grams are distinct "
                            f"(below {MIN_DISTINCT_4GRAM:.0%})")
    raw = text.encode("utf-8")
    comp = len(zlib.compress(raw, 9)) / len(raw)
    if comp < MIN_COMPRESSION:
        problems.append(f"degenerate: it compresses to {comp:.0%} of its size (prose does not go "
                        f"below about {MIN_COMPRESSION:.0%})")
    return problems


def garbage(text: str) -> list[str]:
    """Not text: unprintable characters, or too few real words."""
    problems: list[str] = []
    if not text:
        return problems
    bare = text.translate(_WHITESPACE)
    if bare.isascii() and bare.isprintable():  # the usual case, without a look at each character
        printable = len(text)
    else:
        printable = sum(1 for c in text if c in "\n\r\t " or (c.isprintable() and c != "\ufffd"
                                                               and unicodedata.category(c) not in ("Co", "Cs")))
    share = printable / len(text)
    if share < MIN_PRINTABLE:
        problems.append(f"garbage: only {share:.0%} of its characters are printable text")
    w = [x.lower() for x in _WORD.findall(text)]
    if len(text) >= MIN_TEXT_CHARS or len(w) >= MIN_WORDS:
        common = sum(1 for x in w if x in COMMON) / len(w) if w else 0.0
        if common < MIN_COMMON_WORDS:
            problems.append(f"garbage: only {common:.0%} of its {len(w)} words are common English words "
                            f"(prose has about half; below {MIN_COMMON_WORDS:.0%} it is not text)")
    return problems


def token_count(streamed: int, usage_tokens: int | None, max_tokens: int, finish_reason: str | None) -> list[str]:
    """The server's count against the stream: no more content chunks than tokens, never more tokens
    than asked for, and a length stop at exactly ``max_tokens``."""
    problems: list[str] = []
    if usage_tokens is None:
        return problems
    if usage_tokens < 1:
        problems.append(f"token count: the server reports {usage_tokens} completion tokens for a non-empty output")
    if streamed > usage_tokens:
        problems.append(f"token count: {streamed} content chunks streamed but the server reports only "
                        f"{usage_tokens} completion tokens")
    if usage_tokens > max_tokens:
        problems.append(f"token count: the server reports {usage_tokens} completion tokens, more than the "
                        f"{max_tokens} asked for")
    if finish_reason == "length" and usage_tokens != max_tokens:
        problems.append(f"token count: stopped for length after {usage_tokens} tokens, not the {max_tokens} asked for")
    return problems


def expected(text: str, answer: str | None) -> list[str]:
    if answer is None:
        return []
    if answer.strip().lower() not in text.lower():
        return [f"wrong answer: expected {answer.strip()!r} in the output"]
    return []


def check_output(text: str, *, tokens: list[str] | None = None, streamed: int = 0, usage_tokens: int | None = None,
                 max_tokens: int = 0, finish_reason: str | None = None, answer: str | None = None,
                 open_ended: bool = True) -> list[str]:
    """Every check on one response; the problems in words (empty: it passed)."""
    if not text.strip():
        return ["empty: the server streamed no text"]
    problems = token_count(streamed, usage_tokens, max_tokens, finish_reason)
    problems += garbage(text)
    problems += degeneracy(text, tokens)
    problems += expected(text, answer)
    return problems
