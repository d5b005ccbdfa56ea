"""What a label or a cell means for a speed figure: its phase, its scope, its concurrency, whether it is a
throughput at all, and the figure a cell holds.

Shared by the table reader, the prose reader and the tool recognisers, so one word means one thing
everywhere: "prompt eval" is prefill, "Total token throughput" is end to end, "per request" is one
user, "aggregate" is summed, ``req/s``, ``ms``, ``x`` and ``%`` are never tok/s.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from scrapers.numbers import NUMBER, to_float

TPS_UNIT = re.compile(r"tok(?:en)?s?\s*/\s*s(?:ec(?:ond)?)?\b|(?<![\w/])t/s\b|\btps\b|tokens?[\s_-]*(?:per|/)[\s_-]*s(?:ec(?:ond)?)?\b|"
                      r"\btok/sec\b|\btoken/s\b|\btokens/sec\b|\bt/sec\b", re.I)
THROUGHPUT = re.compile(r"\bthroughput\b|\bspeed\b|\brate\b", re.I)
NOT_TPS = re.compile(r"req(?:uest)?s?\s*/\s*s|\brequests?\s+(?:per|/)\s*s|\bms\b|\blatency\b|\bttft\b|\btpot\b|\bitl\b|"
                     r"\bGB/s(?:ec)?\b|\bGiB/s(?:ec)?\b|\bMB/s(?:ec)?\b|\bbandwidth\b|speed[\s-]?up|\bscaling\b|\bratio\b|\bx\s*$|%|\bvs\.?\b|"
                     r"\bpercent|\bimprovement|\bgain\b|\bdelta\b|\bdiff|\baccept|\bwatts?\b|\bjoules?\b|/\s*w\b|"
                     r"per\s+watt|\bcost\b|\$|\bmemory\b|\bvram\b|\bsize\b|\bseconds?\b|\bduration\b|\btime\b|"
                     r"\bper\s+(?:active[\s-]*)?(?:b|billion|param(?:eter)?s?)\b|\bper\s+active\b|\bper\s+\$", re.I)
# ("tok/s per Active-B", "per billion parameters", "per $": a speed divided by something, not a speed)
_PREFILL = re.compile(r"\b(?:prefill|pre-fill|prompt[\s_]+(?:eval(?:uation)?|processing|tok(?:en)?s?\s*/\s*s|"
                      r"tok(?:en)?s?\s+per\s+s(?:ec(?:ond)?)?|speed|throughput|phase|rate|tps|t/s)|pp\d*|"
                      r"input(?:\s+tok(?:en)?s?)?|ingest(?:ion)?|encoded?|context\s+processing|pp512|pp2048)\b", re.I)
_DECODE = re.compile(r"\b(?:decoded?|decoding|generation|generate|gen|output(?:\s+tok(?:en)?s?)?|new\s+tokens?|eval|tg\d*|completion|"
                     r"predicted|token\s+generation|sampling)\b", re.I)
_E2E = re.compile(r"\btotal\s+tok(?:en)?s?\b|\btotal\s+token\s+throughput|\btotal\s+(?:throughput|tput)\b|\btotal\s+tok/s|"
                  r"\bpp\d+\s*\+\s*tg\d+|\bprefill\s*\+\s*decode|\binput\s*\+\s*output|\bprompt\s*\+\s*gen|"
                  r"\bend[\s-]to[\s-]end\b|\be2e\b|\boverall\s+throughput|\bwall(?:[\s_-]?clock)?(?:[\s_-]time)?[\s_]+(?:tok|tps)", re.I)
_PER_USER = re.compile(r"\bper[\s-]?(?:user|request|req|stream|sequence|seq|query|session)\b|/\s*(?:user|req|request)\b|\bsingle[\s-]?(?:stream|user|"
                       r"request|batch)\b|\bbatch(?:\s+size)?\s*(?:=|:)?\s*1\b|\bbs\s*=?\s*1\b|\bone\s+(?:user|request|"
                       r"stream)\b|\bc\s*=\s*1\b|\bconcurrency\s*(?:=|:)?\s*1\b|\bmean\s+per[\s-]request", re.I)
_AGGREGATE = re.compile(r"\baggregate\b|\b(?:input|output|total)\s+token\s+throughput\b|\bpeak\s+output\b|\btotal\b|\bsystem\s+throughput\b|\bsummed\b|\bcombined\b|\boverall\b|"
                        r"\bthroughput\s+\(all|\ball\s+(?:users|requests)\b|/gpu\b|per\s+gpu\b", re.I)
_CONC = re.compile(r"(?:\bconcurrency|\bconc\.?|\bbatch(?:[\s_-]size)?|\bbs|\bparallel|\bnp|\busers|\bstreams|"
                   r"--max-concurrency|--max[-_]num[-_]seqs|--parallel|-np)\s*[=:]?\s*(\d+)\b|\bc\s*=\s*(\d+)\b|"
                   r"(?<![\w.])[cC](\d{1,4})(?![\w.])|(\d+)\s+(?:concurrent|parallel)\s+(?:requests|users|streams|"
                   r"sequences|clients)|@\s*c(\d+)\b|\b(single)[\s-](?:stream|request|user)\b", re.I)
_QUANTILE = re.compile(r"^\s*(?:p\d{1,2}(?:\.\d)?|median|mean|avg|average|min(?:imum)?|max(?:imum)?|std(?:dev)?|"
                       r"stdev|q\d)\b", re.I)
_PEAK = re.compile(r"\b(?:peak|max(?:imum)?|best|fastest|top|up\s+to)\b", re.I)
_SPACED = re.compile(r"^\d{1,3}(?: \d{3})+(?:[.,]\d+)?$")
_FOOT = re.compile(r"[*†‡§¹²³]+$")
_FIG = re.compile(r"(?P<approx>~|≈|∼|about\s+|around\s+|roughly\s+|up\s+to\s+|over\s+|>\s*)?(?P<n>" + NUMBER + r")"
                  r"(?:\s*(?P<pm>±|\+/-|\+-)\s*(?P<s>" + NUMBER + r"))?"
                  r"(?:\s*(?:-|–|—|to)\s*~?(?P<hi>" + NUMBER + r"))?", re.I)


_CJK_EDGE = re.compile(r"(?<=[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef])(?=[A-Za-z0-9])|"
                       r"(?<=[A-Za-z0-9])(?=[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef])")


@lru_cache(maxsize=8192)
def phase_of(text: str) -> str | None:
    """decode | prefill | e2e for a label or header, None when it does not say."""
    if not text:
        return None
    if not text.isascii():   # "我测出来Prefill": a CJK character is a word character, so no \b before the word
        text = _CJK_EDGE.sub(" ", text)
    if _E2E.search(text):
        return "e2e"
    p, d = _PREFILL.search(text), _DECODE.search(text)
    if p and d:
        # "prompt eval time ... eval time": the first word decides; "Input/Output" lists stay unknown
        return "prefill" if p.start() < d.start() else "decode"
    if p:
        return "prefill"
    if d:
        return "decode"
    return None


@lru_cache(maxsize=8192)
def scope_of(text: str) -> str | None:
    if not text:
        return None
    if _PER_USER.search(text):
        return "per_user"
    if _AGGREGATE.search(text):
        return "aggregate"
    return None


@lru_cache(maxsize=8192)
def concurrency_of(text: str) -> tuple[int, str] | None:
    """(n, quote) for "concurrency 8", "C8", "batch 4", "c=2", "32 concurrent requests"."""
    if not text:
        return None
    m = _CONC.search(text)
    if not m:
        return None
    v = next(g for g in m.groups() if g)
    n = 1 if v.lower() == "single" else int(v)
    if n <= 0 or n > 100000:
        return None
    return n, m.group(0)


@lru_cache(maxsize=8192)
def is_quantile(text: str) -> str | None:
    m = _QUANTILE.match(text or "")
    return m.group(0).strip().lower() if m else None


def is_peak(text: str) -> bool:
    return bool(_PEAK.search(text or ""))


@lru_cache(maxsize=8192)
def says_tps(text: str) -> bool:
    return bool(TPS_UNIT.search(text or ""))


@lru_cache(maxsize=8192)
def not_tps(text: str) -> bool:
    """A header or label that names something other than a tok/s figure (even if it says throughput)."""
    if not text:
        return False
    t = TPS_UNIT.sub(" ", text)
    return bool(NOT_TPS.search(t))


@dataclass
class Figure:
    value: float
    quote: str          # the literal as written
    start: int          # offset of the quote in the text it was read from
    approx: bool = False
    spread: float | None = None
    high: float | None = None
    peak: bool = False


_PLUS_SPREAD = re.compile(r"^(\d[\d,]*\.\d+)\s+\+\s+(\d[\d,]*\.\d+)$")


def cell_figure(text: str) -> Figure | None:
    """The figure a table cell gives: ``177 t/s``, ``**198** t/s``, ``131.42 ± 0.59``, ``~21.05*``,
    ``45-47 tok/s`` (low end, high kept), ``198 (1.16x)`` (the figure, not the ratio). None for ``2.13x``,
    ``+87%``, ``PASS 30 / FAIL 0``, text."""
    if not text:
        return None
    s = text.strip()
    pm = _PLUS_SPREAD.match(s)
    if pm and (to_float(pm.group(2)) or 0) < (to_float(pm.group(1)) or 0) / 2:
        # "903.49 + 3.16": llama-bench's "±" turned into "+" by a copy; a whole cell, spread below half
        fig = Figure(to_float(pm.group(1)), pm.group(1), 0)
        fig.spread = to_float(pm.group(2))
        return fig
    if _SPACED.match(s):     # "3 021,4": spaces as thousands separators, a whole cell only
        v = to_float(s.replace(" ", ""))
        return Figure(v, s, 0) if v is not None else None
    m = _FIG.search(s)
    if not m or m.start() > 3:
        return None
    head = s[:m.start()].strip("*`_ ~≈")
    if head and not all(ch in "([<>≥≤\ufe0f " or unicodedata.category(ch) == "So" for ch in head):
        return None     # a bracket or a mark ("✅ 97.9", "🏆 131"), else words: not a figure cell
    rest = _FOOT.sub("", s[m.end():].strip()).strip(" *`_")
    if rest:
        if re.match(r"^(?:x|×|%)", rest, re.I):
            return None
        rest2 = TPS_UNIT.sub("", rest, count=1).strip(" *`_,;")
        rest2 = _FOOT.sub("", rest2).strip()
        if rest2 and not re.match(r"^(?:\(.*\)|\[.*\]|\d+\s*runs?|\(?n\s*=|(?:agg(?:regate)?|per[\s-]user|total)\b)", rest2,
                                  re.I):
            return None
    n = m.group("n")
    v = to_float(n)
    if v is None:
        return None
    if n.startswith(("+", "-", "−")):
        return None   # a delta
    fig = Figure(v, n, m.start("n"), approx=bool(m.group("approx")), peak=bool(m.group("approx") and
                                                                             "up" in m.group("approx").lower()))
    if m.group("s"):
        fig.spread = to_float(m.group("s"))
    if m.group("hi"):
        hi = to_float(m.group("hi"))
        if hi is not None and hi >= v:
            fig.high = hi
        else:
            return None
    return fig


def numbers_in(text: str) -> int:
    """How many figures a text holds (for the 'seen but not read' count)."""
    return len(re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w.])", text or ""))
