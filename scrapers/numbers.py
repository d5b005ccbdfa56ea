"""Read numbers the way people write them on leaderboards and in posts.

Every reader takes a piece of text and returns plain Python values (never raises). Supported forms:

- thousands separators: ``1,004.9``, ``1 004.9`` (thin or no-break space), ``1.004,9`` (European)
- a decimal comma when it cannot be a thousands separator: ``87,5`` (not three digits after it), or
  when the caller says the page writes decimals with commas (``decimal_comma=True``)
- approximations: ``~55``, ``≈55``, ``about 55`` (``Reading.approx``)
- ranges: ``373 to 391``, ``373–391``, ``373-391``, ``373 — 391``
- a value with its spread: ``131.42 ± 0.59``, ``131.42 +/- 0.59``
- ratios: ``64/1.00`` (``Reading.ratio``), lists: ``87.5 / 219.3 / 308.1`` (``Reading.values``)
- counts: ``5000 of 5000`` (``Reading.of``), percentages: ``56.4 %``
- sizes with a ``k`` suffix: ``8k`` -> 8192 for token counts (``parse_tokens``)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DIGITS = r"(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:[\u202f\u2009\u00a0]\d{3})+|\d{1,3}(?:\.\d{3})+,\d+|\d+)(?:[.,]\d+)?"
NUMBER = r"[-+−]?(?:" + _DIGITS + r"|\.\d+)"
NUMBER_RE = re.compile(NUMBER)
_APPROX = r"(?:~|≈|∼|approx\.?\s*|about\s+|around\s+|roughly\s+|circa\s+|c\.\s*)"

_ONE_RE = re.compile(r"^\s*(?P<approx>" + _APPROX + r")?\s*(?P<n>" + NUMBER + r")\s*(?P<pct>%)?\s*$", re.I)
_PM_RE = re.compile(r"^\s*(?P<approx>" + _APPROX + r")?(?P<n>" + NUMBER + r")\s*(?:±|\+/-|\+-|\+/−)\s*(?P<s>"
                    + NUMBER + r")\s*(?P<pct>%)?\s*$", re.I)
_RANGE_RE = re.compile(r"^\s*(?P<approx>" + _APPROX + r")?(?P<a>" + NUMBER + r")\s*(?:-|–|—|to|‒)\s*~?\s*(?P<b>"
                       + NUMBER + r")\s*$", re.I)
_RATIO_RE = re.compile(r"^\s*(?P<a>" + NUMBER + r")\s*/\s*(?P<b>" + NUMBER + r")\s*$")
_OF_RE = re.compile(r"^\s*(?P<a>" + NUMBER + r")\s+(?:of|out of)\s+(?P<b>" + NUMBER + r")\s*$", re.I)
_LIST_SPLIT = re.compile(r"\s+/\s+|\s*;\s*|\s*\|\s*")
_UNIT_TAIL = re.compile(r"\s*(?:tok(?:en)?s?\s*/\s*s(?:ec(?:ond)?)?|t/s|tps|tokens?\s+per\s+second|tok/sec)\.?\s*$", re.I)
_STRIP = "*`_ \t\u00a0"
_SPACED = re.compile(r"^[~≈]?\d{1,3}(?: \d{3})+(?:[.,]\d+)?$")
_TOKENS_RE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<k>[kKmM])?\s*(?:tokens?|tok)?\s*$")


def to_float(text: str, *, decimal_comma: bool = False) -> float | None:
    """One number literal -> float. ``1,004.9`` -> 1004.9; ``87,5`` -> 87.5; ``1.004,9`` -> 1004.9.

    A single comma followed by exactly three digits (``1,004``) is a thousands separator unless
    ``decimal_comma`` says the page writes decimals with commas.
    """
    if text is None:
        return None
    s = text.strip().replace("−", "-").replace("\u202f", "").replace("\u2009", "").replace("\u00a0", "")
    if not s:
        return None
    if "," in s:
        if "." in s:
            if s.rfind(",") > s.rfind("."):      # 1.004,9 (European)
                s = s.replace(".", "").replace(",", ".")
            else:                                  # 1,004.9
                s = s.replace(",", "")
        else:
            parts = s.split(",")
            if len(parts) == 2 and (decimal_comma or len(parts[1]) != 3):
                s = parts[0] + "." + parts[1]      # 87,5
            elif all(len(p) == 3 for p in parts[1:]):
                s = s.replace(",", "")             # 1,004 / 1,115,904
            else:
                return None
    try:
        return float(s)
    except ValueError:
        return None


def as_int(value: float | None) -> int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else None


@dataclass
class Reading:
    """What a piece of text says numerically. ``value`` is the figure a reader would quote."""

    value: float | None = None
    approx: bool = False
    spread: float | None = None
    low: float | None = None
    high: float | None = None
    ratio: tuple[float, float] | None = None
    of: tuple[float, float] | None = None
    values: list[float] = field(default_factory=list)
    percent: bool = False
    form: str = "none"   # one | pm | range | ratio | of | list | none

    @property
    def ok(self) -> bool:
        return self.form != "none"


def read(text: str | None, *, decimal_comma: bool = False) -> Reading:
    """Read a short cell or value: a number, a ± pair, a range, a ratio, an "of" count or a list."""
    if text is None:
        return Reading()
    s = text.strip(_STRIP)
    if not s:
        return Reading()
    s = _UNIT_TAIL.sub("", s).strip(_STRIP)
    if " " in s and _SPACED.match(s):        # "3 021,4": spaces as thousands separators, whole cell only
        s = s.replace(" ", "")
    m = _ONE_RE.match(s)
    if m:
        v = to_float(m.group("n"), decimal_comma=decimal_comma)
        if v is not None:
            return Reading(value=v, approx=bool(m.group("approx")), percent=bool(m.group("pct")), form="one")
    m = _PM_RE.match(s)
    if m:
        v, sp = to_float(m.group("n"), decimal_comma=decimal_comma), to_float(m.group("s"), decimal_comma=decimal_comma)
        if v is not None and sp is not None:
            return Reading(value=v, spread=sp, approx=bool(m.group("approx")), percent=bool(m.group("pct")), form="pm")
    m = _RANGE_RE.match(s)
    if m and not m.group("a").startswith(("-", "−")):
        a, b = to_float(m.group("a"), decimal_comma=decimal_comma), to_float(m.group("b").lstrip("-−"),
                                                                           decimal_comma=decimal_comma)
        if a is not None and b is not None and b >= a:
            return Reading(low=a, high=b, approx=bool(m.group("approx")), form="range")
    m = _OF_RE.match(s)
    if m:
        a, b = to_float(m.group("a")), to_float(m.group("b"))
        if a is not None and b is not None:
            return Reading(value=a, of=(a, b), form="of")
    m = _RATIO_RE.match(s)
    if m and "/" in s and not re.search(r"\s/\s", s):
        a, b = to_float(m.group("a"), decimal_comma=decimal_comma), to_float(m.group("b"), decimal_comma=decimal_comma)
        if a is not None and b is not None:
            return Reading(ratio=(a, b), values=[a, b], form="ratio")
    if "/" in s or ";" in s or "|" in s:
        parts = [p.strip(_STRIP) for p in _LIST_SPLIT.split(s)]
        if len(parts) < 2:
            return Reading()
        vals = []
        for p in parts:
            r = read(p, decimal_comma=decimal_comma)
            if r.form != "one":
                break
            vals.append(r.value)
        else:
            if len(vals) >= 2:
                return Reading(values=vals, form="list")
    return Reading()


def parse_number(text: str | None, *, decimal_comma: bool = False) -> float | None:
    """The single figure in ``text`` ("~55", "1,004.9", "131.42 ± 0.59" -> 131.42, "56.4 %" -> 56.4)."""
    r = read(text, decimal_comma=decimal_comma)
    return r.value if r.form in ("one", "pm", "of") else None


def parse_range(text: str | None) -> tuple[float, float] | None:
    """``373 to 391`` / ``373–391`` -> (373.0, 391.0); a single number gives (n, n)."""
    r = read(text)
    if r.form == "range":
        return r.low, r.high
    if r.form == "one":
        return r.value, r.value
    return None


def parse_rate(text: str | None) -> float | None:
    """An acceptance rate as a fraction: ``0.564`` / ``56.4 %`` / ``56.4`` (taken as percent) / ``64/1.00``."""
    r = read(text)
    if r.form == "ratio" and r.ratio and r.ratio[1] <= 1.0:
        return r.ratio[1]
    if r.form == "of" and r.of and r.of[1]:
        return r.of[0] / r.of[1]
    if r.form != "one" or r.value is None:
        return None
    v = r.value
    if r.percent or v > 1.0:
        return v / 100.0 if v <= 100.0 else None
    return v


def parse_tokens(text: str | None) -> int | None:
    """A token count: ``8192``, ``8k`` (8192), ``128K`` (131072), ``1,115,904``."""
    if text is None:
        return None
    m = _TOKENS_RE.match(text.strip(_STRIP))
    if m:
        v = float(m.group("n"))
        k = (m.group("k") or "").lower()
        if k == "k":
            v *= 1024
        elif k == "m":
            v *= 1024 * 1024
        return int(v) if v.is_integer() else None
    v = parse_number(text)
    return as_int(v)


def parse_int(text: str | None) -> int | None:
    """An integer count ("64", "1,024", "2x" -> 2)."""
    if text is None:
        return None
    s = text.strip(_STRIP).rstrip("xX×").strip()
    return as_int(parse_number(s))
