"""The audit rules: small pure functions over one entry's fields, the quotes they came from, and the
recipe's context. Each rule has a public id, a severity and a one-line explanation, and returns the
evidence it found (computed numbers and quotes) or nothing.

Bump ``RULESET_VERSION`` whenever a rule's meaning changes; every stored flag records it.
"""

from __future__ import annotations

import re

from app.audit.rules import acceptance, bandwidth, conditions, headline, repetition  # noqa: F401  (registers)
from app.audit.rules.base import RULES, SEVERITY_RANK, Context, Finding, Rung, Steady
from app.audit.rules.clauses import Clause, read_entry

RULESET_VERSION = "2026.12.9"
SEVERITIES = ("critical", "high", "medium", "low")
BLOCKING = ("critical", "high")  # a headline with one of these standing is never the working number

__all__ = ["RULES", "RULESET_VERSION", "SEVERITY_RANK", "SEVERITIES", "BLOCKING", "Context", "Finding", "Rung",
           "Steady", "run_rules", "read_entry", "NOT_UNDERSTOOD", "CLAUSE_RULES"]

NOT_UNDERSTOOD = "not_understood"
# Rules only the clause reader raises (the others it raises beside the rule of the same id, when that one
# did not fire on the same entry): id -> (default severity, what it means).
CLAUSE_RULES = {
    "warm_cache": ("high", "The figure was measured on a warm or hit cache (or a repeated identical request), which "
                           "skips work a fresh request does."),
    "not_measured": ("critical", "The figure is an estimate, a projection or a theoretical value, not a measurement: "
                                 "nothing about it may be quoted as a speed."),
    NOT_UNDERSTOOD: ("high", "The notes say something Caveat did not understand; a reviewer must read it before the "
                             "headline may be quoted."),
}


def _clause_quote(c: Clause) -> dict:
    return {"field": c.field if not c.field.startswith("extra.") else "_extra", "text": c.text}


def _below_headline(text: str, fields: dict | None) -> bool:
    """Whether a clause stating a sustained figure states one below the headline (by more than 10 %), when
    the entry has no steady state of its own (the rule of that name judges that one)."""
    f = fields or {}
    if f.get("steady_low") is not None or f.get("steady_high") is not None:
        return False
    head = f.get("headline_tps")
    if not isinstance(head, (int, float)) or isinstance(head, bool) or head <= 0:
        return True
    nums = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]
    figures = [n for n in nums if 0 < n < 1e6 and n != head]
    return not figures or min(figures) * 1.10 < head


def clause_findings(reading: list[Clause], found: list[Finding], fields: dict | None = None) -> list[Finding]:
    """What the clause reading adds to the rules' findings: a condition clause raises its rule (or makes
    the rule's finding as severe as the clause says, quoting the clause); clauses not understood raise
    ``not_understood``, each quoted."""
    by_rule = {f.rule: f for f in found}
    out = list(found)
    scope = (fields or {}).get("scope")
    for c in reading:
        if c.reading != "condition" or not c.rule:
            continue
        if c.kind == "reviewer":    # a reviewer read the clause as this rule's condition: it stands as they said
            f = by_rule.get(c.rule)
            if f is None:
                rule = RULES.get(c.rule)
                sev = CLAUSE_RULES[c.rule][0] if c.rule in CLAUSE_RULES else (rule.severity if rule else "high")
                f = Finding(c.rule, sev, f"A reviewer read this clause of the notes as {c.rule}: {c.detail}.",
                            {"clause": "reviewer"}, [_clause_quote(c)])
                by_rule[c.rule] = f
                out.append(f)
            elif all(q.get("text") != c.text for q in f.quotes):
                f.quotes.append(_clause_quote(c))
            continue
        if c.rule == "aggregate_as_single_stream" and (scope == "aggregate" or (fields or {}).get("concurrency") is not None):
            continue    # the reader already read the figure's scope or concurrency: the rule of that name judges it
        if c.rule == "headline_above_steady_state" and not _below_headline(c.text, fields):
            continue    # a sustained figure as high as the headline (or already read as its steady state) inflates nothing
        f = by_rule.get(c.rule)
        if f is None:
            f = Finding(c.rule, c.severity or CLAUSE_RULES.get(c.rule, ("high",))[0],
                        f"The notes state it: {c.detail or c.text}.", {"clause": c.kind}, [_clause_quote(c)])
            by_rule[c.rule] = f
            out.append(f)
            continue
        if SEVERITY_RANK.get(c.severity or "", 0) > SEVERITY_RANK[f.severity]:
            f.severity = c.severity
            f.explanation = f"{f.explanation} The notes make it {c.severity}: {c.detail or c.text}."
        if all(q.get("text") != c.text for q in f.quotes):
            f.quotes.append(_clause_quote(c))
    unread = [c for c in reading if c.reading == "not_understood"]
    if unread:
        listed = "; ".join(f"\u00ab{c.text}\u00bb" for c in unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
        out.append(Finding(NOT_UNDERSTOOD, CLAUSE_RULES[NOT_UNDERSTOOD][0],
                           f"Caveat did not understand {'this clause' if len(unread) == 1 else 'these clauses'} of the "
                           f"notes: {listed}. A reviewer must read {'it' if len(unread) == 1 else 'them'} (dismiss this "
                           "flag if harmless) before the headline may be quoted.",
                           {"clauses": len(unread)}, [_clause_quote(c) for c in unread[:10]]))
    return out


def run_rules(fields: dict, quotes: dict | None = None, ctx: Context | None = None,
              reading: list[Clause] | None = None) -> list[Finding]:
    """Every finding for one entry, most severe first, then by rule id: the rules', then what the clause
    reading of its notes adds (``reading``: :func:`read_entry` of the fields, when the caller has it)."""
    ctx = ctx or Context()
    found = [f for r in RULES.values() if (f := r.run(fields, quotes or {}, ctx)) is not None]
    found = clause_findings(read_entry(fields) if reading is None else reading, found, fields)
    return sorted(found, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule))
