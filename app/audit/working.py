"""The working number: what a reader may quote for an entry or a recipe, on which basis, and why.

Policy, in order (section 9 of the seed's intake rule):

1. ``measured``: a recorded measurement on non-repeating prompts with checked output (the lowest such
   measurement of the recipe);
2. ``steady_state``: the lowest steady-state figure stated across the recipe's entries;
3. ``headline``: the recipe's lowest figure with no critical or high flag left standing after reviewer
   dismissals; the mean where the page gives a mean and spread (or per-run samples);
4. ``none``, with the reason in words.

An entry's working number is its recipe's (ruleset 2026.12.3): what may be quoted for the configuration
the entry ran, whichever rung or run the entry itself is. Prefill and end-to-end figures get none.
Whatever the basis, the number is never above the recipe's highest headline nor above any stated
steady state: a measurement above either is capped, and the reason says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from app.audit.rules import BLOCKING

BASES = ("measured", "steady_state", "headline", "unreviewed", "none")
UNREAD = "not_understood"   # the flag the clause reader raises for notes it did not understand
NOT_DECODE = ("prefill", "e2e")


@dataclass
class StandingFlag:
    rule: str
    severity: str


@dataclass
class Candidate:
    """One entry as the policy sees it."""

    entry_id: int | None
    headline_tps: float | None
    spread: float | None = None
    samples: list[float] = field(default_factory=list)
    steady_low: float | None = None
    steady_high: float | None = None
    standing: list[StandingFlag] = field(default_factory=list)  # active flags not dismissed
    phase: str | None = None  # decode | prefill | e2e (None: not stated, read as decode)
    superseded: bool = False  # the page says a later figure replaced this one (a tuning story)
    withheld: bool = False    # its capture was withdrawn or restricted: it is no evidence for anything quoted


@dataclass
class Working:
    tps: float | None
    basis: str
    reason: str
    headline_tps: float | None
    inflation_ratio: float | None
    steady_state: dict | None  # {"low", "high", "entry_id"} of the lowest stated steady state

    def as_dict(self) -> dict:
        return {"quotable_tps": self.tps, "basis": self.basis, "reason": self.reason,
                "headline_tps": self.headline_tps, "inflation_ratio": self.inflation_ratio,
                "steady_state": self.steady_state}


def _fmt(x: float) -> str:
    return f"{x:,.2f}".rstrip("0").rstrip(".")


def _ok(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and x > 0 and x != float("inf")


def lowest_steady(candidates: Iterable[Candidate]) -> dict | None:
    best = None
    for c in candidates:
        stated = [float(v) for v in (c.steady_low, c.steady_high) if _ok(v)]
        if not stated:
            continue
        low, high = min(stated), max(stated)  # a page may state the range either way round
        if best is None or low < best["low"]:
            best = {"low": float(low), "high": float(high), "entry_id": c.entry_id}
    return best


def headline_value(c: Candidate) -> tuple[float | None, str]:
    """The figure the headline basis quotes: the mean where the page gives spread or samples."""
    if not _ok(c.headline_tps):
        return None, ""
    if c.spread is not None:
        return float(c.headline_tps), f"the stated mean {_fmt(c.headline_tps)} ± {_fmt(c.spread)}"
    samples = [float(s) for s in c.samples if _ok(s)]
    if len(samples) >= 2:
        mean = min(sum(samples) / len(samples), float(c.headline_tps))
        return mean, f"the mean of {len(samples)} stated runs ({_fmt(round(mean, 1))})"
    return float(c.headline_tps), f"the headline {_fmt(c.headline_tps)}"


def _blocking(c: Candidate) -> list[StandingFlag]:
    return [f for f in c.standing if f.severity in BLOCKING]


_UNSET = object()


def decide(candidates: list[Candidate], measurements: Iterable[float] = (), *, entry: Candidate | None = None,
           recipe_steady=_UNSET) -> Working:
    """The working number for one entry (``entry`` given) or a whole recipe (``candidates``).
    ``recipe_steady``: ``lowest_steady(candidates)`` when the caller computed it already (the audit does,
    once per recipe, so a recipe of n entries costs n, not n squared); ``entry`` must then be among them."""
    candidates = [c for c in candidates if not c.withheld]
    if entry is not None and entry.withheld:
        return _result(None, "none", "the capture this figure was read from is withdrawn or restricted, so "
                       "nothing may be quoted from it", entry.headline_tps, None)
    if recipe_steady is _UNSET:
        cands = list(candidates)
        if entry is not None and all(c is not entry for c in cands):
            cands.append(entry)
        steady = lowest_steady(cands)
    else:
        steady = recipe_steady
    if entry is not None and entry.superseded:
        return _result(None, "none", "superseded: the page says a later figure replaced this one, so this "
                       "one describes a configuration nobody runs any more", entry.headline_tps, None)
    if entry is not None and entry.phase in NOT_DECODE:
        scope = [entry]
    elif entry is not None:
        # an entry's working number is its recipe's: what a reader may quote for the configuration the
        # entry ran (its own figure may be a flagged rung or a short run of that configuration)
        scope = [c for c in candidates if c.phase not in NOT_DECODE]
        if all(c is not entry for c in scope):
            scope.append(entry)
    else:
        scope = list(candidates)
    heads = [float(c.headline_tps) for c in scope if _ok(c.headline_tps)]
    headline = max(heads) if heads else None
    phases = {c.phase for c in scope} - {None, "decode"}
    if phases and all(c.phase in NOT_DECODE for c in scope):
        what = " and ".join(sorted(phases))
        return _result(None, "none", f"a {what} figure: only decode figures can be quoted as a decode speed",
                       headline, None)
    caps = [(headline, "the headline")] if headline is not None else []
    if steady is not None:
        caps.append((steady["low"], "the lowest stated steady state"))

    def cap(value: float, reason: str) -> tuple[float, str]:
        for limit, name in sorted(caps):
            if value > limit:
                return limit, f"{reason}; capped at {name} ({_fmt(limit)}), which is lower"
        return value, reason

    good = sorted(float(m) for m in measurements if _ok(m))
    if good:
        tps, reason = cap(good[0], f"measured {_fmt(good[0])} tok/s on non-repeating prompts with checked output")
        return _result(tps, "measured", reason, headline, steady)
    if steady is not None:
        where = "this entry" if entry is not None and steady["entry_id"] == entry.entry_id else "the recipe"
        span = _fmt(steady["low"]) if steady["low"] == steady["high"] else f"{_fmt(steady['low'])} to {_fmt(steady['high'])}"
        tps, reason = cap(steady["low"], f"the lowest steady state stated for {where} ({span} tok/s), "
                                         "taken until it is measured on non-repeating prompts")
        return _result(tps, "steady_state", reason, headline, steady)
    clean = [c for c in scope if _ok(c.headline_tps) and not _blocking(c) and not c.superseded]
    if clean:
        (tps, how), c = _lowest(clean)
        if len(scope) > 1:
            how += f" of entry {c.entry_id}, the lowest entry of the recipe with no critical or high flag standing"
        tps, reason = cap(tps, f"{how}: no measurement or stated steady state, and no critical or high flag "
                               "left standing")
        return _result(tps, "headline", reason, headline, steady)
    # fail closed: a headline whose only blocking flag is notes Caveat did not understand is shown, not quoted
    pending = [c for c in scope if _ok(c.headline_tps) and not c.superseded and _blocking(c)
               and all(f.rule == UNREAD for f in _blocking(c))]
    if pending:
        (tps, how), _c = _lowest(pending)
        tps, reason = cap(tps, f"{how}, unreviewed: the notes hold clauses Caveat did not understand, so it is "
                               "not quoted until a reviewer reads them (the not_understood flag)")
        return _result(tps, "unreviewed", reason, headline, steady)
    if headline is None:
        return _result(None, "none", "the page gives no throughput figure", None, steady)
    blocking = sorted({f"{f.rule} ({f.severity})" for c in scope for f in _blocking(c)})
    return _result(None, "none", "no measurement and no stated steady state, and the headline has flags standing: "
                   + ", ".join(blocking) + "; record a measurement or have a reviewer dismiss them", headline, steady)


def _lowest(cands: list[Candidate]) -> tuple[tuple[float, str], Candidate]:
    """The candidate whose quoted headline value (the mean where the page gives one) is lowest."""
    return min(((headline_value(c), c) for c in cands), key=lambda v: v[0][0])


def _result(tps, basis, reason, headline, steady) -> Working:
    ratio = round(headline / tps, 2) if tps and headline else None
    return Working(tps, basis, reason, headline, ratio, steady)
