"""Features of a candidate number: a few measured facts (its value, where it sits, what its header, line
and headings say about tok/s, whether the rules read it) and the words of its context, each word hashed
into a fixed number of columns per slot (line before, line after, column header, row label, caption,
headings, JSON key path). The hash is CRC-32, so a feature index is the same in every process."""

from __future__ import annotations

import math
import re
import zlib
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from scrapers.learned.candidates import TOKEN, Candidate
from scrapers.meaning import TPS_UNIT, not_tps, phase_of, says_tps

HASH_BITS = 10
N_HASH = 1 << HASH_BITS
KINDS = {"table": 0, "code": 1, "text": 2, "heading": 3, "json": 4}
PHASES = {None: 0, "decode": 1, "prefill": 2, "e2e": 3}
DENSE = ["log_value", "is_int", "decimals", "kind", "col", "n_cols", "col_numeric", "row_index", "tps_line",
         "tps_header", "tps_scope", "not_tps_header", "not_tps_right", "rules_read", "rules_span", "phase_header",
         "phase_left", "unit_right", "other_unit_right", "year_like", "numbers_in_line", "page_position",
         "rules_entries", "rules_row", "rules_block", "tps_row", "phase_row", "in_range", "page_tps_words"]
N_DENSE = len(DENSE)
N_FEATURES = N_DENSE + N_HASH
_UNIT_START = re.compile(r"^\s*\**\s*(?:" + TPS_UNIT.pattern + ")", re.I)
_OTHER_UNIT = re.compile(r"^\s*(?:%|x\b|×|ms\b|s\b|sec|gb|gib|mb|w\b|b\b|k\b|tokens?\b|req)", re.I)
_NUMS = re.compile(r"\d+(?:\.\d+)?")


def _tokens(s: str) -> list[str]:
    return TOKEN.findall((s or "").lower())


_H: dict[tuple[str, str], int] = {}


def _h(slot: str, tok: str) -> int:
    k = (slot, tok)
    i = _H.get(k)
    if i is None:
        i = N_DENSE + (zlib.crc32(f"{slot}:{tok}".encode()) & (N_HASH - 1))
        if len(_H) < 200_000:
            _H[k] = i
    return i


@lru_cache(maxsize=16384)
def _slot(slot: str, s: str) -> frozenset:
    """The hashed columns of one context string (a header, row label, caption, headings or key path is
    shared by many candidates: computed once)."""
    return frozenset(_h(slot, t) for t in _tokens(s)[:24])


_WORDY = re.compile(r"[^\W\d_]|[%$]")    # a letter (any script), % or $: what every unit and phase word needs


@lru_cache(maxsize=16384)
def _line_facts(line: str) -> tuple[float, float]:
    """(says tok/s, how many numbers): the same for every number of a line, so computed once per line."""
    return float(says_tps(line)), float(len(_NUMS.findall(line)))


def _not_tps(s: str) -> float:
    return float(not_tps(s)) if s and _WORDY.search(s) else 0.0


def _phase(s: str) -> float:
    return float(PHASES.get(phase_of(s), 0)) if s and _WORDY.search(s) else 0.0


@lru_cache(maxsize=16384)
def _header_facts(header: str) -> tuple[float, float, float]:
    """(says tok/s, names something else, its phase) of a column header, shared by the column's numbers."""
    if not header:
        return 0.0, 0.0, 0.0
    return float(says_tps(header)), float(not_tps(header)), float(PHASES.get(phase_of(header), 0))


@lru_cache(maxsize=16384)
def _scope_tps(caption: str, section: str) -> float:
    scope = caption + " " + section
    return float(says_tps(scope)) if scope.strip() else 0.0


@lru_cache(maxsize=16384)
def _row_facts(cells: tuple) -> tuple[float, float]:
    row = " ".join(cells)
    if not row:
        return 0.0, 0.0
    return float(says_tps(row)), float(PHASES.get(phase_of(row[:200]), 0))


def dense_row(c: Candidate, page: dict) -> list[float]:
    v = c.value
    exact = c.exact
    line_right = c.line_right
    line_tps, line_numbers = _line_facts(c.line_left + exact + line_right)
    dec = len(exact) - exact.index(".") - 1 if "." in exact else 0
    h_tps, h_not, h_phase = _header_facts(c.header)
    r_tps, r_phase = _row_facts(tuple(c.row_cells)) if c.row_cells else (0.0, 0.0)
    return [
        math.log10(abs(v) + 1.0), float(dec == 0), float(dec), float(KINDS.get(c.kind, 2)), float(c.col),
        float(c.n_cols), c.col_numeric, float(min(c.row_index, 200)), line_tps,
        h_tps, _scope_tps(c.caption, c.section), h_not, _not_tps(line_right[:30]),
        float(c.rules_read), float(c.rules_span), h_phase, _phase(c.line_left[-60:]),
        float(bool(_UNIT_START.match(line_right))), float(bool(_OTHER_UNIT.match(line_right))),
        float(dec == 0 and 1900 <= v <= 2100), line_numbers, page["position"](c),
        math.log1p(page["n_rules"]), float(page["rules_row"](c)), float(page["rules_block"](c)),
        r_tps, r_phase, float(1.0 <= v <= 20000.0), float(page["tps_words"]),
    ]


@lru_cache(maxsize=65536)
def _side(slot: str, s: str, last: bool) -> frozenset:
    """The hashed columns of a line's words left (``last``: its last 8 and the very last) or right (its first 6
    and the very first) of a number; many numbers share them (a table cell, a repeated log line)."""
    toks = _tokens(s)
    if not toks:
        return frozenset()
    if last:
        return frozenset([_h("L", t) for t in toks[-8:]] + [_h("L1", toks[-1])])
    return frozenset([_h("R", t) for t in toks[:6]] + [_h("R1", toks[0])])


def hashed(c: Candidate) -> list[int]:
    idx = set(_side("L", c.line_left[-80:], True))
    idx.update(_side("R", c.line_right[:60], False))
    for slot, s in (("H", c.header), ("W", c.row), ("C", c.caption), ("S", c.section), ("K", c.keypath)):
        if s:
            idx.update(_slot(slot, s))
    return sorted(idx)


def matrix(cands: list[Candidate], page: dict) -> sp.csr_matrix:
    data, indices, indptr = [], [], [0]
    for c in cands:
        d = dense_row(c, page)
        hs = hashed(c)
        indices += list(range(N_DENSE)) + hs
        data += d + [1.0] * len(hs)
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data, dtype=np.float64), np.array(indices, dtype=np.int32),
                          np.array(indptr, dtype=np.int64)), shape=(len(cands), N_FEATURES))
