"""The audit rules: small pure functions over one entry's fields, the quotes they came from, and the
recipe's context. Each rule has a public id, a severity and a one-line explanation, and returns the
evidence it found (computed numbers and quotes) or nothing.

Bump ``RULESET_VERSION`` whenever a rule's meaning changes; every stored flag records it.
"""

from __future__ import annotations

from app.audit.rules import acceptance, conditions, headline, repetition  # noqa: F401  (registers)
from app.audit.rules.base import RULES, SEVERITY_RANK, Context, Finding, Rung, Steady

RULESET_VERSION = "2026.12.4"
SEVERITIES = ("critical", "high", "medium", "low")
BLOCKING = ("critical", "high")  # a headline with one of these standing is never the working number

__all__ = ["RULES", "RULESET_VERSION", "SEVERITY_RANK", "SEVERITIES", "BLOCKING", "Context", "Finding", "Rung",
           "Steady", "run_rules"]


def run_rules(fields: dict, quotes: dict | None = None, ctx: Context | None = None) -> list[Finding]:
    """Every finding for one entry, most severe first, then by rule id."""
    ctx = ctx or Context()
    found = [f for r in RULES.values() if (f := r.run(fields, quotes or {}, ctx)) is not None]
    return sorted(found, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule))
