"""Prose claims, in plain text or in an HTML article.

One entry per distinct tok/s figure stated in the text ("100 tokens in 1.822 seconds = ~55 tok/s",
"~57 tok/s single request"); later mentions of the same figure add what they say (a prompt, a token
count) but make no new entry. The entry keeps the sentence as ``context`` and as ``label``, the prompt
described in the paragraphs that mention it, and the model/hardware/engine the post names in its title
and opening paragraphs. Figures in "steady state ..." phrases become the steady state of the nearest
claim, not claims of their own.
"""

from __future__ import annotations

import re

from scrapers import pagefacts, phrases
from scrapers.fields import ParseResult
from scrapers.numbers import NUMBER, to_float
from scrapers.rows import Builder

_TPS = re.compile(r"(?P<approx>~|≈|about\s+|around\s+|roughly\s+)?(?P<n>" + NUMBER + r")(?P<hi>\s*(?:-|–|to)\s*"
                  + NUMBER + r")?\s*(?:tok(?:en)?s?\s*/\s*s(?:ec)?|t/s|tokens?\s+per\s+second|TPS)\b", re.I)
_SENT = re.compile(r"(?<=[.!?])[\"”)]?\s+(?=[A-Z\"“(\[~0-9])")
_STEADY_NEAR = re.compile(r"steady[\s-]*state[^.]{0,30}$", re.I)


def blocks_from_html(body: bytes | str, result: ParseResult) -> tuple[str, list[str]]:
    from scrapers.html import load_tree

    tree = load_tree(body, result)
    if tree is None:
        return "", []
    for bad in tree.xpath("//script|//style|//nav|//footer|//header//nav"):
        bad.drop_tree()
    title_el = tree.xpath("//h1") or tree.xpath("//title")
    title = re.sub(r"\s+", " ", title_el[0].text_content()).strip() if title_el else ""
    blocks = []
    for el in tree.xpath("//p|//li|//blockquote[not(.//p)]|//pre|//h2|//h3|//td"):
        t = re.sub(r"\s+", " ", el.text_content()).strip()
        if t:
            blocks.append(t)
    return title, blocks


def blocks_from_text(text: str) -> tuple[str, list[str]]:
    paras = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    if len(paras) <= 2:
        paras = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not paras:
        return "", []
    first = paras[0].lstrip("# ").strip()
    title = first if len(first) < 200 and not first.endswith(".") else ""
    return title, paras[1:] if title else paras


def sentences(block: str) -> list[str]:
    return [s for s in _SENT.split(block) if s.strip()]


def parse_text(body: bytes | str, *, is_html: bool, result: ParseResult | None = None) -> ParseResult:
    result = result or ParseResult(kind="text")
    if is_html:
        title, blocks = blocks_from_html(body, result)
    else:
        title, blocks = blocks_from_text(body if isinstance(body, str) else body.decode("utf-8", "replace"))
    if not blocks and not title:
        if not result.warnings:
            result.warnings.append("the document has no text; nothing parsed")
        return result
    page = pagefacts.facts(title, " ".join(blocks[:3])[:3000])
    for f, vq in pagefacts.facts("", " ".join(blocks[3:])[:20000]).items():
        if f not in ("model", "hardware", "gpu_count", "quantization"):
            page.setdefault(f, vq)
    claims: dict[float, dict] = {}
    acc_fields = ("acceptance_rate", "acceptance_length", "accepted_tokens", "drafted_tokens")
    order: list[float] = []
    for bi, block in enumerate(blocks):
        for sent in sentences(block):
            for m in _TPS.finditer(sent):
                if m.group("hi") or _STEADY_NEAR.search(sent[:m.start()]):
                    continue
                v = to_float(m.group("n"))
                if v is None or v <= 0:
                    continue
                c = claims.get(v)
                if c is None:
                    c = claims[v] = {"quote": m.group(0).strip(), "sentence": sent.strip(), "sentences": [], "blocks": []}
                    order.append(v)
                c["sentences"].append(sent.strip())
                c["blocks"].append(bi)
    for v in order:
        c = claims[v]
        b = Builder(context=c["sentence"])
        b.put("headline_tps", v, c["quote"])
        b.put("label", c["sentence"], c["sentence"])
        for s in c["sentences"]:
            found = phrases.extract(s, strict=True)
            had_tokens = "tokens_stated" in b.entry.fields
            for f, (val, q) in found.items():
                if f in ("tokens_stated", "seconds_stated") and had_tokens:
                    continue
                if f in ("tp", "pp", "gen_tokens"):   # (a count of generated tokens is tokens_stated's)
                    continue
                b.put(f, val, q)
        near = set(c["blocks"])
        tq = b.entry.quotes.get("tokens_stated")
        sq = b.entry.quotes.get("seconds_stated")
        if tq and sq:
            tn, sn = tq.split()[0], sq.split()[0]
            near.update(i for i, blk in enumerate(blocks) if tn in blk and f"in {sn} s" in blk)
        for bi in sorted(near):
            if 0 <= bi < len(blocks):
                found = phrases.extract(blocks[bi], strict=True)
                if "prompt" in found:
                    b.put("prompt", *found["prompt"])
                for f in ("prompt_tokens", "steady_low", "steady_high", "n_runs"):
                    if f in found:
                        b.put(f, *found[f])
        for f, (val, q) in page.items():
            b.put(f, val, q)
        if len(order) == 1:   # one claim on the page: the acceptance figures it states are that run's
            for blk in blocks:
                for f, (val, q) in phrases.extract(blk, strict=True).items():
                    if f in acc_fields:
                        b.put(f, val, q)
        result.entries.append(b.finish())
    if not result.entries:
        result.warnings.append("no tok/s figure found in the text; nothing parsed")
    return result
