"""Rules about which figure was put forward: above the steady state, the top rung of a ladder, a best
or peak figure, and an aggregate over many streams shown as one user's speed."""

from __future__ import annotations

import re

from app.audit.rules.base import num, quote, r2, rule, search, text


def recipe_steady(f, ctx) -> tuple[float, float, str | None] | None:
    """The stated steady state that applies: the entry's own, else the lowest stated in its recipe."""
    low, high = num(f.get("steady_low")), num(f.get("steady_high"))
    if low is not None or high is not None:
        low = low if low is not None else high
        high = high if high is not None else low
        return min(low, high), max(low, high), "self"
    stated = [s for s in ctx.steady if s.low is not None]
    if not stated:
        return None
    best = min(stated, key=lambda s: s.low)
    return best.low, best.high, "recipe"


@rule("headline_above_steady_state", "high",
      "The headline is well above the steady state the same source states, so it describes a burst, not "
      "sustained speed.")
def headline_above_steady_state(f, q, ctx):
    tps = num(f.get("headline_tps"))
    steady = recipe_steady(f, ctx)
    if not tps or steady is None:
        return None
    low, high, where = steady
    if low <= 0 or tps <= high * 1.10:
        return None
    quotes = [quote(f, q, "headline_tps")]
    if where == "self":
        quotes += [quote(f, q, "steady_low"), quote(f, q, "steady_high")]
    else:
        src = min((s for s in ctx.steady if s.low == low), key=lambda s: s.high)
        if src.quote:
            quotes.append({"field": "steady_low", "text": src.quote})
    return {
        "numbers": {"headline_tps": tps, "steady_low": low, "steady_high": high,
                    "ratio_to_low": r2(tps / low), "ratio_to_high": r2(tps / high), "steady_from": where},
        "explanation": f"The headline {tps:,.1f} tok/s is {r2(tps / low)} times the low end and {r2(tps / high)} "
                       f"times the high end of the stated steady state ({low:,g} to {high:,g} tok/s).",
        "quotes": quotes,
    }


def climbing_ladder(rungs) -> list[tuple[int, float]] | None:
    """Best tok/s per draft width, ascending, when there are >= 2 widths and throughput rises with width."""
    best: dict[int, float] = {}
    for r in rungs:
        k, tps = num(r.draft_tokens), num(r.headline_tps)
        if k is None or tps is None:
            continue
        best[int(k)] = max(best.get(int(k), 0.0), tps)
    if len(best) < 2:
        return None
    ladder = sorted(best.items())
    steps = [b[1] > a[1] for a, b in zip(ladder, ladder[1:])]
    top = max(t for _, t in ladder)
    if ladder[-1][1] != top or ladder[0][1] >= top or sum(steps) < 0.75 * len(steps):
        return None
    return ladder


_CLIMB_CACHE: dict[int, tuple[list, object]] = {}


def _climbing_cached(ladder: list):
    """climbing_ladder(ladder), computed once for a ladder list shared by the entries of one recipe."""
    key = id(ladder)
    hit = _CLIMB_CACHE.get(key)
    if hit is not None and hit[0] is ladder:
        return hit[1]
    value = climbing_ladder(ladder)
    if len(_CLIMB_CACHE) > 4096:
        _CLIMB_CACHE.clear()
    _CLIMB_CACHE[key] = (ladder, value)
    return value


@rule("ladder_top_rung", "high",
      "The headline is the widest draft of a ladder whose speed climbs with draft width: the top rung, "
      "where acceptance is most favourable, not a typical setting.")
def ladder_top_rung(f, q, ctx):
    k, tps = num(f.get("draft_tokens")), num(f.get("headline_tps"))
    if k is None or tps is None:
        return None
    ladder = _climbing_cached(ctx.ladder)
    if not ladder or int(k) != ladder[-1][0] or tps < ladder[-1][1]:
        return None
    bottom = ladder[0][1]
    return {
        "numbers": {"draft_tokens": int(k), "headline_tps": tps,
                    "ladder": [{"draft_tokens": w, "tps": t} for w, t in ladder],
                    "rungs": len(ctx.ladder), "top_over_bottom": r2(tps / bottom) if bottom else None},
        "explanation": f"The headline {tps:,.1f} tok/s is the top rung (draft {int(k)}) of a {len(ladder)}-width "
                       f"ladder that climbs from {bottom:,g} tok/s at draft {ladder[0][0]}.",
        "quotes": [quote(f, q, "headline_tps"), quote(f, q, "draft_tokens")],
    }


_SETTING_AFTER_MAX = r"(?!\s+(?:output\s+|new\s+)?(?:tokens?|model\s+len(?:gth)?|len(?:gth)?|context|seq(?:uence)?s?|batch|concurrency)\b)"
# ("Max Output Tokens/Request: 1024", "Max Model Length": a setting's limit, not a peak figure)
# ("M3 Max", "Ryzen AI Max+ 395", "iPhone 16 Pro Max": a chip's name, not a peak figure)
_CHIP_BEFORE_MAX = r"(?<![Mm]\d\s)(?<![Mm]\d\d\s)(?<!\bAI\s)(?<!\bPro\s)(?<!\bpro\s)"
_BEST = re.compile(r"(?:\b|(?<=_))(?:peak|" + _CHIP_BEFORE_MAX + r"max(?:imum)?" + _SETTING_AFTER_MAX +
                   r"|best(?:[- ]of)?|fastest|top speed|highest|record)(?:\b|(?=_))|"
                   r"最高|最大(?!(?:与|和|と|、)?最小|差)|峰值|最快", re.I)   # (Chinese: highest, maximum, peak, fastest)
# a spread of runs named by both ends ("min 31.0, max 31.8", "最大与最小差 0.4"): statistics, not a best run
_SPREAD = re.compile(r"\bmin(?:imum)?\b[^,;]{0,20}[,;/]?\s*\bmax(?:imum)?\b|\bslowest\b.{0,30}\bfastest\b|"
                     r"\bfastest\b.{0,30}\bslowest\b|最大(?:与|和|と)最小|最小(?:与|和|と)最大", re.I)
_UP_TO = re.compile(r"\b(?:up to|as (?:high|fast) as|peak(?:s|ed)? at|tops? out at)\s*(?:~|≈|\*\*)?\s*(\d[\d,.]*)", re.I)
# (not "reach 241 tok/s" or "hits 3 tok/s": a result stated plainly, not a ceiling)


def _up_to_figure(f):
    """"up to 800 tok/s" in the sentence the figure came from: a maximum, not a typical speed."""
    tps = num(f.get("headline_tps"))
    if tps is None:
        return None
    for name in ("label", "headline_label"):
        for m in _UP_TO.finditer(text(f, name)):
            try:
                value = float(m.group(1).replace(",", "").rstrip("."))
            except ValueError:
                continue
            if abs(value - tps) <= 0.005 * tps:
                return name, m
    return None
_BEST_FIELDS = ("headline_label", "label", "test")
_BEST_CAPTION = re.compile(r"\b(?:peak|max(?:imum)?|best|fastest|highest|top)\s+(?:throughput|tok(?:en)?s?/s|t/s|speed|"
                           r"performance|decode|generation|output(?!\s+(?:tokens?|len(?:gth)?)\b))\b", re.I)
_AVERAGED = re.compile(r"\b(?:averag\w*|mean|median|avg)\b", re.I)
_TYPICAL = re.compile(r"\b(?:median|mean|average|avg)\b(?:\s+of\s+\d+)?", re.I)
_BEST_NOTES = re.compile(
    r"\b(?:peak|max(?:imum)?|best|fastest|highest)\s+(?:of\s+\d+\s+)?(?:runs?|tok/?s|t/s|throughput|speed|"
    r"figure|result|decode|generation)\b|\bbest\s+of\s+\d+\b", re.I)


@rule("best_of", "high",
      "The figure is a peak, maximum or best run, not a typical one: a reader quoting it quotes the lucky run.")
def best_of(f, q, ctx):
    own = search(f, ("notes",), _BEST_NOTES) or _up_to_figure(f)
    hit = own or search(f, _BEST_FIELDS, _BEST)
    if not hit and num(f.get("concurrency")) != 1:
        # a table titled "Max throughput" holds the best of a batch sweep; its batch-1 rows (the "min
        # latency" half of "Max Throughput & Min Latency") are no sweep's maximum
        hit = search(f, ("caption",), _BEST_CAPTION)
    if hit and not own and _TYPICAL.search(text(f, "notes")):
        hit = None   # "Fastest" over the column, but the row's own notes give a median or mean of its runs
    if hit and _SPREAD.search(text(f, hit[0])) and _AVERAGED.search(text(f, hit[0])):
        hit = None   # "averaged 31.4 over 5 runs (min 31.0, max 31.8)": the runs' spread beside their mean
    if hit:
        name, m = hit
        return {"numbers": {"phrase": m.group(0), "field": name}, "quotes": [quote(f, q, name, m)]}
    tps = num(f.get("headline_tps"))
    samples = [s for s in (num(x) for x in (f.get("samples") or [])) if s is not None]
    if tps and len(samples) >= 2:
        mean = sum(samples) / len(samples)
        if abs(tps - max(samples)) <= 0.005 * tps and max(samples) > mean * 1.01:
            return {"numbers": {"headline_tps": tps, "samples": samples, "mean": round(mean, 2)},
                    "explanation": f"The headline {tps:g} is the maximum of {len(samples)} runs whose mean is "
                                   f"{mean:.1f}.",
                    "quotes": [quote(f, q, "headline_tps"), quote(f, q, "samples")]}
    return None


_SINGLE_WORDS = re.compile(r"\bsingle[- ]stream\b|\bsingle[- ]user\b|\bper[- ]user\b|\bbatch(?: size)?\s*(?:=|:)?\s*1\b|"
                           r"\bbs\s*=?\s*1\b|\bc1\b", re.I)


_MANY_LEVELS = re.compile(r"\bc(?:[2-9]|\d\d+)\b|\bbatch(?: size)?\s*(?:=|:)?\s*(?:[2-9]|\d\d+)\b", re.I)


@rule("aggregate_as_single_stream", "high",
      "The figure adds up many concurrent streams but sits beside single-stream figures, so it reads as one "
      "user's speed.")
def aggregate_as_single_stream(f, q, ctx):
    conc = num(f.get("concurrency"))
    if conc is None or conc <= 1 or f.get("scope") == "per_user":
        return None  # one stream, or a per-user figure read at that concurrency
    hit = search(f, ("headline_label", "label", "notes"), _SINGLE_WORDS)
    if hit and _MANY_LEVELS.search(text(f, hit[0])) and not re.search(r"single|per[- ]user", hit[1].group(0), re.I):
        hit = None  # "C1 / C4 / C8": a compound header that names this figure's level too, not a per-user label
    singles = ctx.page_singles if ctx.page_singles is not None else \
        sum(1 for c in ctx.page_concurrency if c is None or c <= 1)
    # Beside single-stream figures, an aggregate reads as one user's speed only when the page does not
    # say its scope or show its concurrency with it (a concurrency quoted from the row is shown).
    shown = f.get("scope") == "aggregate" or bool(q.get("concurrency"))
    if not hit and (not singles or shown):
        return None
    quotes = [quote(f, q, "concurrency"), quote(f, q, "headline_tps")]
    if hit:
        quotes.append(quote(f, q, hit[0], hit[1]))
    return {"numbers": {"concurrency": int(conc), "single_stream_neighbours": singles,
                        "labelled_single": hit[1].group(0) if hit else None},
            "explanation": f"The figure is measured at concurrency {int(conc)} but shown "
                           + (f'under "{hit[1].group(0)}"' if hit else f"beside {singles} single-stream figure(s)")
                           + ": it is an aggregate, not one user's speed.",
            "quotes": quotes}
