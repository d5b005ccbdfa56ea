"""tok/s figures stated in sentences ("~55 tok/s", "hits around 3.2 tok/sec generation",
"Per-user decode (nvfp4): 87.5 / 73.7 / 61.2 tok/s"), one draft per figure with the words around it.

Not figures: ranges written as steady state ("steady state 373-391 tok/s" is the steady state of a
claim, not a claim), deltas ("+10 tok/s", "10 tok/s faster"), targets ("hope to reach 100 tok/s").
"""

from __future__ import annotations

import re

from scrapers import phrases
from scrapers.blocks import Block
from scrapers.meaning import concurrency_of, phase_of, scope_of
from scrapers.numbers import NUMBER, to_float
from scrapers.rows import Builder
from scrapers.tables import Draft

_TPS = re.compile(r"(?P<approx>~|≈|∼|about\s+|around\s+|roughly\s+|over\s+|up\s+to\s+|nearly\s+|almost\s+|>\s*)?"
                  r"(?P<list>(?:" + NUMBER + r"\s*/\s*){1,15})?(?P<n>" + NUMBER + r")(?P<hi>\s*(?:->|→|=>|-|–|to)\s*~?"
                  + NUMBER + r")?\s*(?:\*\*|`)?\s*(?P<ph>(?:decode|prefill|PP|TG|prompt|gen(?:eration)?|output|eval)\s+)?"
                  r"(?:tok(?:en)?s?\s*/\s*s(?:ec(?:ond)?)?|t/s|tokens?[\s-]+per[\s-]+s(?:ec(?:ond)?)?|TPS|"
                  r"tok/sec|t/sec)\b", re.I)   # "tokens-per-sec": mlx_lm's generate
_STEADY_NEAR = re.compile(r"steady[\s-]*state[^.]{0,30}$", re.I)
_DELTA_BEFORE = re.compile(r"(?:[+−]|\bby\s+|\bgains?\s+(?:of\s+)?|\bextra\s+|\badditional\s+)$", re.I)
_DELTA_AFTER = re.compile(r"^\s*(?:faster|slower|more|less|higher|lower|improvement|gain|increase|decrease|boost|"
                          r"better|worse|difference)\b", re.I)
_TARGET = re.compile(r"\b(?:target(?:ing)?|goal|hope|aim(?:ing)?|expect(?:ed)?|should\s+(?:reach|get)|want|"
                     r"would\s+(?:reach|get)|could\s+reach|theoretical|max(?:imum)?\s+possible)\b[^.]{0,40}$", re.I)
_KV_TEST = re.compile(r"\b((?:pp|tg)\d+)\b", re.I)
_SAMPLER = re.compile(r"(?i)\bsampler|\bsampling\s+time|\bsample\s+time")
_PER_SOMETHING = re.compile(r"\s*(?:per|/)\s*(?:active[\s-]*b\b|active\b|b\b|billion|param|\$|dollar|watts?\b|w\b)", re.I)
_LINKS = re.compile(r"!?\[[^\]]*\]\([^)]*\)|https?://\S+")
_CRANGE = re.compile(r"\bC(\d+)\s*(?:-|–|to|\.\.)\s*C(\d+)\b")


def _nearest_model(chunk: str, a: int, b: int, at: int, end: int) -> str | None:
    """When a sentence names several models ("2.5 tok/sec for Llama2-7b and 5 tok/sec for RedPajama-3b"),
    the one nearest the figure, preferring "for <model>" right after it."""
    from scrapers.pagefacts import find_model, models_in

    sent = _LINKS.sub(lambda m: " " * len(m.group(0)), chunk[a:b])
    found = [(i + a, name) for i, name in models_in(sent)]
    if len(found) < 2:
        return None
    ls, le = chunk.rfind("\n", 0, at) + 1, chunk.find("\n", at)
    line = [x for x in found if ls <= x[0] < (le if le >= 0 else len(chunk))]
    if line:      # list items without full stops: the figure's own line names its model
        found = line
    after = re.match(r"\s*(?:for|with|on|using|running)\s+", chunk[end:end + 20])
    best = min(found, key=lambda x: abs(x[0] - at) - (1000 if after and x[0] >= end else 0))
    name = best[1]
    return find_model(name) or name


_HEAD_SPLIT = re.compile(r"[.,;)(，。；（）]|\band\b")


def _models_here(text: str) -> bool:
    from scrapers.pagefacts import models_in

    return bool(models_in(_LINKS.sub(lambda m: " " * len(m.group(0)), text)))


def _last_model_before(chunk: str, a: int) -> str | None:
    """The last model named in the same paragraph before the sentence (within 600 characters)."""
    from scrapers.pagefacts import find_model, models_in

    start = max(0, a - 600, chunk.rfind("\n\n", 0, a) + 2)
    found = models_in(_LINKS.sub(lambda m: " " * len(m.group(0)), chunk[start:a]))
    if not found:
        return None
    name = found[-1][1]
    return find_model(name) or name


_KV_TPS = re.compile(r"^[ \t>*-]*(?:\[[^\]\n]{1,60}\][ \t]*)*(?P<k>(?=[A-Za-z])[^:=：\n]{0,61}?(?:tok(?:en)?s?\s*/\s*s(?:ec(?:ond)?)?|t/s|tokens?[\s-]+per[\s-]+"
                     r"s(?:ec(?:ond)?)?|tps|throughput|speed)[^:=：\n]{0,20}?)\s*[:=：]\s*\**(?P<approx>~|≈)?(?P<v>\d[\d,]*(?:\.\d+)?)\**"
                     r"[ \t]*(?:tok(?:en)?s?\s*/\s*s\w*|t/s)?[ \t]*$", re.M | re.I)


_INLINE_TPS = re.compile(r"(?<![\w.])(?:(?P<k>[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*[_-](?:TPS|tps|tok_?s|toks_?per_?s))"
                         r"\s*[=:]|(?P<k2>(?:[A-Za-z][A-Za-z0-9]*_)*tokens?_per_s(?:ec(?:ond)?)?)(?:\s*[=:]|[ \t]+))"
                         r"\s*(?P<approx>~|≈)?(?P<v>\d[\d,]*(?:\.\d+)?)(?![\d.])")
# "tokens_per_sec 43.09": a snake_case name that is itself the unit may be followed by its value after a
# space alone (TensorRT-LLM's "[BENCHMARK] ... tokens_per_sec 43.09 generation_tokens_per_second 50.379")


def read_kv_lines(blk: Block, *, seen: list | None = None) -> tuple[list[Draft], list[tuple[int, int]]]:
    """``Decode speed (tok/s): 45.2`` / ``Throughput: 1,234 tok/s``: a label naming a speed, then the
    figure (the output of tools nobody here has a module for). Labels that name latencies, requests per
    second, speed-ups or percentages are not speeds."""
    from scrapers.meaning import not_tps

    out, claimed = [], []
    chunk, a0 = blk.text, blk.start
    if ":" not in chunk and "=" not in chunk and "：" not in chunk and "_per_s" not in chunk:
        return out, claimed
    matches = list(_KV_TPS.finditer(chunk))
    lined = [(m.start(), m.end()) for m in matches]
    for m in _INLINE_TPS.finditer(chunk):      # "wall_TPS= 27.17  decode_TPS= 27.61" inside a log line
        if not any(a <= m.start() < b for a, b in lined):
            matches.append(m)
    for m in sorted(matches, key=lambda x: x.start()):
        k = (m.group("k") or m.group("k2")).strip().replace("_", " ")
        if not_tps(k) or re.search(r"(?i)\brequest", k):
            continue
        v = to_float(m.group("v"))
        if v is None or v <= 0:
            continue
        lit = m.group("v")
        b = Builder(context=m.group(0).strip())
        b.put("headline_tps", v, lit)
        b.put("headline_label", k, None)
        ph = phase_of(k)
        if ph:
            b.put("phase", ph, None)
        tm = _KV_TEST.search(k)
        if tm:      # "Prompt processing (pp1024): 294.78 tokens/sec": llama-bench's test named in the label
            b.put("test", tm.group(1).lower(), tm.group(1))
        sc = scope_of(k)
        if sc:
            b.put("scope", sc, None)
        c = concurrency_of(k)
        if c:
            b.put("concurrency", c[0], c[1])
        span = (a0 + m.start("v"), a0 + m.end("v"))
        out.append(Draft(b, [span, (a0 + m.start(), a0 + m.end())], m.group(0), "prose"))
        claimed.append((a0 + m.start(), a0 + m.end()))
    return out, claimed


def _record_header(chunk: str, line_start: int) -> str:
    """The line ending in ":" just above a log record (blank lines between allowed), with a space; ""
    when the line above is another record or there is none."""
    above = chunk[:line_start].rstrip("\n").rsplit("\n", 1)[-1].strip()
    if above.endswith(":") and len(above) <= 120 and not _TPS.search(above):
        return above + " "
    return ""


def read_prose(text: str, blk: Block, *, context_text: str = "", seen: list | None = None) -> list[Draft]:
    """Drafts for the tok/s figures of ``blk``; figures passed over are counted in ``seen`` with why."""
    out: list[Draft] = []
    a0 = blk.start
    chunk = blk.text
    steady = phrases.extract(chunk) if "steady" in chunk.lower() else {}
    for m in _TPS.finditer(chunk):
        before = chunk[max(0, m.start() - 80):m.start()]
        after = chunk[m.end():m.end() + 30]
        # "from 50 to 100 tok/s" and "9.35 -> 11.8 tok/s" are two runs (before and after), not a range
        pair = bool(m.group("hi")) and (re.search(r"\bfrom\s*~?$", before) is not None
                                        or re.match(r"\s*(?:->|→|=>)", m.group("hi")) is not None)
        why = None
        if (m.group("hi") and not pair) or _STEADY_NEAR.search(before):
            why = "in ranges and steady states of sentences"   # "373-391 tok/s"; "from 50 to 100 tok/s" is two runs
        elif _DELTA_BEFORE.search(before) or _DELTA_AFTER.match(after) or (m.group("n") or "").startswith(("+", "-")):
            why = "in differences ('+10 tok/s', '10 tok/s faster')"
        elif _TARGET.search(before):
            why = "in targets and expectations"
        elif _SAMPLER.search(chunk[max(0, chunk.rfind("\n", 0, m.start()) + 1):m.start()]):
            why = "in sampler timings (the sampler's speed, not the model's)"
        elif _PER_SOMETHING.match(after):
            why = "in speeds divided by something ('tok/s per active-B', 'per watt', 'per $')"
        if why:
            if seen is not None:
                seen.append((1, why))
            continue
        stop = chunk.rfind(". ", 0, m.start())   # (none: the sentence starts with the block, at 0)
        sent_a = max(stop + 2 if stop >= 0 else 0, chunk.rfind("\n", 0, m.start()) + 1)
        if blk.in_code:
            # a log or a pasted result: each line is one record, and a line ending in ":" right above it
            # ("EAGLE-3 (num_steps=8):") names the run the record belongs to
            sent_a = chunk.rfind("\n", 0, m.start()) + 1
            nl = chunk.find("\n", m.end())
            sent_b = len(chunk) if nl < 0 else nl
            sentence = _record_header(chunk, sent_a) + chunk[sent_a:sent_b].strip()
        else:
            sent_b = chunk.find(". ", m.end())
            sent_b = len(chunk) if sent_b < 0 else sent_b + 1
            sentence = chunk[sent_a:sent_b].strip()
        window = chunk[max(sent_a, m.start() - 60):min(len(chunk), m.end() + 40)]
        values = []
        if m.group("list"):
            for lm in re.finditer(NUMBER, m.group("list")):
                values.append((lm.group(0), m.start("list") + lm.start()))
        values.append((m.group("n"), m.start("n")))
        if pair:
            hm = re.search(NUMBER, m.group("hi"))
            values.append((hm.group(0), m.start("hi") + hm.start()))
        concs = None
        if len(values) > 1 and not pair:
            cr = _CRANGE.search(context_text + " " + sentence)
            if cr and int(cr.group(2)) - int(cr.group(1)) + 1 == len(values):
                concs = list(range(int(cr.group(1)), int(cr.group(2)) + 1))
            elif not cr:
                values = values[-1:]
        for k, (lit, off) in enumerate(values):
            v = to_float(lit)
            if v is None or v <= 0:
                continue
            b = Builder(context=sentence[:300])
            b.put("headline_tps", v, lit)
            b.put("label", sentence[:200], None)
            tail = re.split(r"[.,;:)(\n，。；：（）]|\band\b", chunk[m.end():m.end() + 40], maxsplit=1)[0]   # its own line
            # the words right before the figure ("output: 128.64", "input = 47.09"), its label's own punctuation aside
            before = chunk[max(sent_a, m.start() - 50):m.start()]
            head = (_HEAD_SPLIT.split(before.rstrip(" \t:=~≈*["))[-1].split(":")[-1]
                    or _HEAD_SPLIT.split(before)[-1])
            ph = (phase_of(m.group("ph") or "") or phase_of(tail) or phase_of(head) or phase_of(sentence)
                  or phase_of(context_text))    # "31.82 decode TPS", "675.6 PP tok/s": the word before the unit
            tm = _KV_TEST.search(before[-40:])
            if tm and "test" not in b.entry.fields:   # "Prompt processing (pp1024): 294.78 tokens/sec"
                b.put("test", tm.group(1).lower(), tm.group(1))
            if ph:
                b.put("phase", ph, None)
            sc = scope_of(window)
            if sc:
                b.put("scope", sc, None)
            if concs:
                b.put("concurrency", concs[k], None)
            else:
                c = concurrency_of(sentence)
                if c:
                    b.put("concurrency", c[0], c[1])
            near = _nearest_model(chunk, sent_a, sent_b, off, m.end())
            if near:
                b.put("model", near, near)     # the model named nearest the figure in its sentence
            elif not _models_here(chunk[sent_a:sent_b]):
                before = _last_model_before(chunk, sent_a)
                if before:     # "I also have Qwen2.5-7B-Instruct handy. With that model ... I get 45 t/s"
                    b.put("model", before, before)
            if m.group("approx") and re.match(r"(?i)up\s+to", m.group("approx")):
                b.entry.extra["peak"] = True
            for f in ("steady_low", "steady_high"):      # the paragraph's stated steady state is its run's
                if f in steady:
                    b.put(f, *steady[f])
            out.append(Draft(b, [(a0 + off, a0 + off + len(lit)), (a0 + sent_a, a0 + sent_b), (a0, blk.end)],
                             sentence, "prose"))
    return out
