"""Physics: a per-user decode figure above what memory bandwidth allows (``app/audit/roofline``)."""

from __future__ import annotations

from app.audit.roofline import batching, bound_for, per_user_decode, speculation
from app.audit.rules.base import quote, rule


@rule("beyond_bandwidth_limit", "critical",
      "A per-user decode figure above the memory-bandwidth bound of its hardware, model and precision: plain "
      "decoding of one stream cannot reach it, since every token reads the active weights once.")
def beyond_bandwidth_limit(f, q, ctx):
    figure = per_user_decode(f)
    if figure is None:
        return None
    r = bound_for(f)
    if not r.bound_tps or figure <= r.bound_tps:
        return None     # an input is missing (no finding), or the figure is within the bound
    ratio = figure / r.bound_tps
    spec, conc = speculation(f), batching(f)
    # inputs (the reference rows used, each with its source), assumptions, version: shared per setup, read-only
    numbers = {"headline_tps": figure, "bound_tps": round(r.bound_tps, 1), "ratio": round(ratio, 2), **r.evidence}
    said = f"{figure:g} tok/s is {ratio:.2f} times the {r.bound_tps:.1f} tok/s bound"
    if spec:
        numbers["speculation"] = spec
        stated = ", ".join(f"{k} {v}" for k, v in spec.items())
        text = (f"{said}, with speculation stated ({stated}): the ratio is the effective number of tokens accepted "
                f"per target step, about {ratio:.1f}; the figure is not the plain decode speed of one stream.")
        severity = "low"
    elif conc:
        numbers["concurrency"] = conc
        text = (f"{said}, with concurrency {conc} stated: one stream cannot go faster than the bound, so the figure "
                "is most likely summed over the concurrent requests.")
        severity = "low"
    else:
        text = (f"{said}, and no speculation, batching or concurrency is stated: one stream cannot decode this "
                "fast on this hardware. It is speculative decoding not stated, an aggregate over several "
                "requests, a cached or replayed output, or a reporting error.")
        severity = "critical"
    return {"numbers": numbers, "explanation": text, "severity": severity,
            "quotes": [quote(f, q, "headline_tps")]}
