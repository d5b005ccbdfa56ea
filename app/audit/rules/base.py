"""What every rule shares: the registry, the finding it returns, the recipe context it may read, and
small helpers that find a phrase in a field and quote the archived text around it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

SEVERITY_RANK = {"critical": 4, "high": 3, "medium": 2, "low": 1}


@dataclass
class Finding:
    rule: str
    severity: str
    explanation: str
    numbers: dict[str, Any] = field(default_factory=dict)
    quotes: list[dict[str, str]] = field(default_factory=list)  # [{"field", "text"}]

    @property
    def evidence(self) -> dict:
        return {"numbers": self.numbers, "quotes": self.quotes}


@dataclass
class Rung:
    entry_id: int | None
    draft_tokens: int | None
    headline_tps: float | None


@dataclass
class Steady:
    entry_id: int | None
    low: float
    high: float
    quote: str | None = None


@dataclass
class Context:
    """What a rule may know beyond the entry: its recipe's ladder and stated steady states, and the
    concurrency of the other figures shown on the same page."""

    entry_id: int | None = None
    ladder: list[Rung] = field(default_factory=list)      # every entry of the recipe, this one included
    steady: list[Steady] = field(default_factory=list)    # every stated steady state in the recipe
    page_concurrency: list[int | None] = field(default_factory=list)  # other entries of the same source
    page_singles: int | None = None  # how many of them are single-stream (the audit gives this, not the list)


@dataclass
class Rule:
    id: str
    severity: str
    explanation: str
    check: Callable[[dict, dict, Context], Finding | None]

    def run(self, fields: dict, quotes: dict, ctx: Context) -> Finding | None:
        return self.check(fields, quotes, ctx)


RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: str, explanation: str):
    """Register ``check(fields, quotes, ctx) -> dict | None``; the dict holds ``numbers`` and ``quotes``
    (and may override ``explanation`` and ``severity``; ``severity`` is the rule's most severe case)."""

    def wrap(fn):
        def check(fields: dict, quotes: dict, ctx: Context) -> Finding | None:
            found = fn(fields, quotes or {}, ctx)
            if not found:
                return None
            quotes, seen = [], set()
            for q in found.get("quotes", []):
                if q and q.get("text") and q["text"] not in seen:
                    seen.add(q["text"])
                    quotes.append(q)
            return Finding(rule_id, found.get("severity", severity), found.get("explanation", explanation),
                           found.get("numbers", {}), quotes)

        RULES[rule_id] = Rule(rule_id, severity, explanation, check)
        check.rule_id = rule_id
        return check

    return wrap


# -- helpers ---------------------------------------------------------------------------------------
def num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if value == value else None
    try:
        return float(str(value).replace(",", "").strip())
    except ValueError:
        return None


def text(fields: dict, name: str) -> str:
    v = fields.get(name)
    return "" if v is None else str(v)


def quote(fields: dict, quotes: dict, name: str, match: re.Match | None = None, window: int = 80) -> dict | None:
    """The archived text behind ``fields[name]``: its quote when the parser kept one, else the value.
    With ``match`` (a hit inside the value) a long quote is cut to the words around the hit."""
    base = quotes.get(name)
    if not base:
        v = fields.get(name)
        if v is None:
            return None
        base = str(v)
    if match is not None and len(base) > 2 * window:
        hit = match.group(0)
        i = base.lower().find(hit.lower())
        if i >= 0:
            start = max(0, i - window)
            end = min(len(base), i + len(hit) + window)
            while start > 0 and not base[start - 1].isspace():
                start += 1
            while end < len(base) and not base[end].isspace():
                end -= 1
            base = base[start:end].strip() or hit
    return {"field": name, "text": base}


def search(fields: dict, names: tuple[str, ...], pattern: re.Pattern,
           negation: re.Pattern | None = None) -> tuple[str, re.Match] | None:
    """The first field among ``names`` whose text matches ``pattern`` (skipping hits that a nearby
    ``negation`` such as "disabled" takes back)."""
    for name in names:
        value = text(fields, name)
        for m in pattern.finditer(value):
            if negation is not None:
                near = value[max(0, m.start() - 60): m.end() + 60]
                if negation.search(near):
                    continue
            return name, m
    return None


def r2(x: float) -> float:
    return round(x, 2)
