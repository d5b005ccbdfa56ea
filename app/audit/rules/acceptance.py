"""Acceptance rules: every drafted token accepted, and acceptance figures that cannot be."""

from __future__ import annotations

import re

from app.audit.rules.base import num, quote, rule, search

# "64/1.00", "acceptance 1.00", "100% acceptance"
_NOTES_FULL = re.compile(
    r"\b\d+\s*/\s*1\.0+\b|\bacceptance(?:\s+rate)?\s*(?:of|=|:)?\s*(?:1\.0+|100(?:\.0+)?\s*%)|"
    r"\b100(?:\.0+)?\s*%\s+acceptance", re.I)
_TEXT_FIELDS = ("notes", "label", "headline_label")


@rule("full_acceptance", "critical",
      "Every drafted token was accepted: the speculative decoder was replaying text it had already seen, "
      "which real prompts do not allow.")
def full_acceptance(f, q, ctx):
    reasons, numbers, quotes = [], {}, []
    rate = num(f.get("acceptance_rate"))
    if rate is not None and 0.99 <= rate <= 1.0:
        reasons.append(f"acceptance rate {rate:.2f} (>= 0.99)")
        numbers["acceptance_rate"] = rate
        quotes.append(quote(f, q, "acceptance_rate"))
    acc, drafted = num(f.get("accepted_tokens")), num(f.get("drafted_tokens"))
    if acc is not None and drafted and acc == drafted:
        reasons.append(f"{acc:g} accepted of {drafted:g} drafted")
        numbers.update(accepted_tokens=acc, drafted_tokens=drafted)
        quotes += [quote(f, q, "accepted_tokens"), quote(f, q, "drafted_tokens")]
    length, k = num(f.get("acceptance_length")), num(f.get("draft_tokens"))
    if length is not None and k and k + 1 - 0.05 <= length <= k + 1:
        reasons.append(f"mean acceptance length {length:g} at k={k:g} (ceiling {k + 1:g})")
        numbers.update(acceptance_length=length, draft_tokens=k)
        quotes.append(quote(f, q, "acceptance_length"))
    rates = [num(x) for x in (f.get("per_position_rates") or [])]
    if rates and all(r is not None and r >= 0.9995 for r in rates):
        reasons.append(f"all {len(rates)} per-position rates 1.000")
        numbers["per_position_rates"] = rates
        quotes.append(quote(f, q, "per_position_rates"))
    hit = search(f, _TEXT_FIELDS, _NOTES_FULL)
    if hit:
        name, m = hit
        reasons.append(f'{name} says "{m.group(0)}"')
        quotes.append(quote(f, q, name, m))
    if not reasons:
        return None
    numbers["reasons"] = reasons
    every = (rate is not None and rate >= 0.9995) or (acc is not None and drafted and acc == drafted) or bool(
        rates and all(r is not None and r >= 0.9995 for r in rates)) or bool(hit and re.search(r"1\.0+\b|100", hit[1].group(0)))
    said = "; ".join(reasons)
    if every:
        text = (f"Every drafted token was accepted ({said}): the speculative decoder was replaying text it had "
                "already seen, which real prompts do not allow.")
    else:
        text = (f"Nearly every drafted token was accepted ({said}): at that acceptance the proposer is almost "
                "always right, as it is when it replays text the model already produced; real prompts do not "
                "allow it.")
    return {"numbers": numbers, "quotes": _dedupe(quotes), "explanation": text}


def _dedupe(quotes):
    seen, out = set(), []
    for item in quotes:
        if item and (item["field"], item["text"]) not in seen:
            seen.add((item["field"], item["text"]))
            out.append(item)
    return out


@rule("arithmetic_mismatch", "high",
      "The page's own numbers do not agree: tokens over seconds is not the stated tok/s, or an acceptance "
      "figure is impossible.")
def arithmetic_mismatch(f, q, ctx):
    reasons, numbers, quotes = [], {}, []
    tokens, seconds, tps = num(f.get("tokens_stated")), num(f.get("seconds_stated")), num(f.get("headline_tps"))
    if tokens and seconds and tps:
        computed = tokens / seconds
        diff = abs(computed - tps) / tps
        if diff > 0.05:
            reasons.append(f"{tokens:g} tokens / {seconds:g} s = {computed:.1f} tok/s, "
                           f"not the stated {tps:g} ({diff:.0%} apart)")
            numbers.update(tokens_stated=tokens, seconds_stated=seconds, computed_tps=round(computed, 2),
                           headline_tps=tps, difference=round(diff, 3))
            quotes += [quote(f, q, "tokens_stated"), quote(f, q, "seconds_stated"), quote(f, q, "headline_tps")]
    gen, retok = num(f.get("tokens_generated")), num(f.get("tokens_retokenized"))
    if gen and retok and abs(gen - retok) / max(gen, retok) > 0.25:
        # SGLang's bench_serving counts the output twice: as the server reported it and by re-tokenizing the
        # text it returned; far apart, the token count behind the figure is not supported by the output
        reasons.append(f"the block counts {gen:g} generated tokens but {retok:g} when the output is "
                       f"re-tokenized ({abs(gen - retok) / max(gen, retok):.0%} apart)")
        numbers.update(tokens_generated=gen, tokens_retokenized=retok)
        quotes += [quote(f, q, "tokens_generated"), quote(f, q, "tokens_retokenized")]
    rate = num(f.get("acceptance_rate"))
    if rate is not None and rate > 1.0 + 1e-9:
        reasons.append(f"acceptance rate {rate:g} is above 1")
        numbers["acceptance_rate"] = rate
        quotes.append(quote(f, q, "acceptance_rate"))
    acc, drafted = num(f.get("accepted_tokens")), num(f.get("drafted_tokens"))
    if acc is not None and drafted is not None and acc > drafted:
        reasons.append(f"{acc:g} accepted is more than {drafted:g} drafted")
        numbers.update(accepted_tokens=acc, drafted_tokens=drafted)
        quotes += [quote(f, q, "accepted_tokens"), quote(f, q, "drafted_tokens")]
    length, k = num(f.get("acceptance_length")), num(f.get("draft_tokens"))
    if length is not None and k and length > k + 1 + 0.005:
        reasons.append(f"mean acceptance length {length:g} exceeds k+1 = {k + 1:g}")
        numbers.update(acceptance_length=length, draft_tokens=k)
        quotes += [quote(f, q, "acceptance_length"), quote(f, q, "draft_tokens")]
    bad = [r for r in (num(x) for x in (f.get("per_position_rates") or [])) if r is not None and r > 1.0 + 1e-9]
    if bad:
        reasons.append(f"per-position rate(s) above 1: {', '.join(f'{r:g}' for r in bad)}")
        numbers["per_position_rates"] = f.get("per_position_rates")
        quotes.append(quote(f, q, "per_position_rates"))
    if not reasons:
        return None
    numbers["reasons"] = reasons
    return {"numbers": numbers, "quotes": _dedupe(quotes)}
