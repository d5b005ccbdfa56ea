"""The parsing pipeline for any text document, as its stages:

    decode (scrapers.decode) -> segment into typed blocks (scrapers.segment) -> known tool outputs
    (scrapers.tools.*) -> tables read by meaning (scrapers.tables) -> prose (scrapers.prose)
    -> scoped context (scrapers.context) -> entries (classified, de-duplicated, quotes pinned)

Everything a stage saw but did not turn into an entry is counted, so the page's warnings say what was
lost ("12 figures in 2 tables not read: ...").
"""

from __future__ import annotations

import bisect
import re
import time

from scrapers import context, pagefacts, tools
from scrapers.blocks import Block
from scrapers.fields import ParsedEntry, ParseResult
from scrapers.meaning import numbers_in, says_tps
from scrapers.prose import read_kv_lines, read_prose
from scrapers.segment import segment
from scrapers.selectors import pin
from scrapers.tables import Draft, read_table

TIME_BUDGET_S = 20.0      # a document that takes longer stops being read, with a warning
MAX_ENTRIES = 200_000


def _heading(blk: Block) -> str:
    return blk.section[-1] if blk.section else ""


def read_document(text: str, result: ParseResult, *, base: dict | None = None,
                  blocks: list[Block] | None = None) -> ParseResult:
    """Entries from a decoded text document (markdown, plain text, pasted tool output)."""
    t0 = time.monotonic()
    if blocks is None:
        blocks = segment(text, result.warnings)
    if result.segmented is None:
        result.segmented = (text, blocks)
    page = context.Page(text, blocks)
    drafts: list[tuple[Draft, Block | None]] = []
    seen: list[tuple[int, str]] = []
    n_tables = 0
    skipped_tables: list[str] = []
    for blk in blocks:
        if time.monotonic() - t0 > TIME_BUDGET_S:
            result.warnings.append(f"stopped reading after {TIME_BUDGET_S:.0f} s at offset {blk.start} of "
                                   f"{len(text)}; the rest of the document was not read")
            break
        if len(drafts) > MAX_ENTRIES:
            result.warnings.append(f"more than {MAX_ENTRIES} figures; the rest of the document was not read")
            break
        inner = blk.children if blk.kind == "code" else [blk]
        if blk.kind == "code":
            found = tools.read_code(blk, text)
            if found is not None:
                _lead(found, _code_lead(blk))
                drafts += [(d, blk) for d in found]
                continue
        for sub in inner:
            if sub.kind == "table":
                n_tables += 1
                found = tools.read_table(sub, text)
                if found is not None:
                    _lead(found, sub.caption or (blk.caption if blk is not sub else ""))
                if found is None:
                    found = read_table(sub.table, caption=sub.caption or (blk.caption if blk is not sub else ""),
                                       heading=_heading(sub), warnings=result.warnings, seen=seen)
                    if not found and sub.table.shape != "panel":
                        figs = sum(1 for r in sub.table.rows for c in r if re.search(r"\d", c.value))
                        if figs and says_tps(sub.text + " " + sub.caption):
                            skipped_tables.append(f"a {sub.table.shape} table '{sub.caption[:40] or _heading(sub)[:40]}' "
                                                  f"({len(sub.table.rows)} rows): no tok/s column or row")
                            seen.append((figs, "in tables with no tok/s column or row"))
                if sub.table.shape == "panel":
                    found = found or []
                    found += read_prose(text, _panel_block(sub), context_text=_heading(sub))
                for d in found:
                    d.block = d.block or sub
                drafts += [(d, blk) for d in found]
            elif sub.kind == "heading" and says_tps(sub.text):
                for d in read_prose(text, sub, context_text=sub.text):     # "## Starting Point (25.5 tok/s)"
                    d.block = sub
                    drafts.append((d, blk))
            elif sub.kind == "text":
                found, claimed = tools.read_text(sub, text)
                _lead(found, _text_lead(sub, claimed, blk))
                for d in found:
                    d.block = d.block or sub
                drafts += [(d, blk) for d in found]
                for r in _unclaimed(sub, claimed):
                    kv, kv_claimed = read_kv_lines(r)
                    if kv:      # "eval rate: 71.03 tokens/s" under "(the fastest of several tries):"
                        _lead(kv, _text_lead(sub, kv_claimed, blk))
                    for d in kv:
                        d.block = sub
                    drafts += [(d, blk) for d in kv]
                    claimed += kv_claimed
                rest = _unclaimed(sub, claimed)
                for r in rest:
                    for d in read_prose(text, r, context_text=_heading(sub) + " " + sub.caption, seen=seen):
                        d.block = sub
                        drafts.append((d, blk))
    _count_runs(drafts, text)
    _around(drafts, blocks, text)
    entries: list[ParsedEntry] = []
    origins: dict[int, int] = {}
    prose_ids: set[int] = set()
    sole = sole_model(text) if drafts else None
    specific: dict[str, str | None] = {}
    for d, outer in drafts:
        context.apply(d, page, outer)
        for f, (v, q) in (base or {}).items():
            d.builder.put(f, v, q)
        if sole and "model" not in d.builder.entry.fields:
            d.builder.put("model", sole, sole)      # the only model the page names: the weakest scope
        e = _finish(d)
        if e is not None:
            bare = e.fields.get("model")
            if bare and not any(ch.isdigit() for ch in bare):
                better = specific_model(text, bare, cache=specific)
                if better:
                    e.fields["model"] = better
                    e.quotes["model"] = better
            pin(e, text, d.spans)
            entries.append(e)
            origins[id(e)] = d.block.start if d.block is not None else -1
            if d.source == "prose":
                prose_ids.add(id(e))
    kept = dedupe([e for e in entries if id(e) not in prose_ids], origins)
    result.entries += merge_prose(kept, [e for e in entries if id(e) in prose_ids])
    _account(result, seen, n_tables, skipped_tables)
    return result


_SCAN_MODELS = 200_000
_PROMPT_LINE = re.compile(r"^\s*(?:\$|>>>|>|#|❯|PS>)\s*\S.*$", re.M)
LEAD_MAX = 400
_TOOL_LINE = re.compile(r"^\s*[A-Za-z_][\w .()/-]{0,40}:\s*[\d.]")


def _lead(drafts: list, lead: str) -> None:
    """Give a tool output's entries the words that introduce it (read clause by clause by the audit)."""
    lead = lead.strip()
    if lead:
        for d in drafts:
            d.builder.put("lead", lead[-LEAD_MAX:], None)


AROUND_MAX = 600       # characters of one neighbouring paragraph read for conditions
NEIGHBOUR_FIGURES = 3  # neighbouring paragraphs are read only on a page of this many figures or fewer
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n")


def _around(drafts: list, blocks: list[Block], text: str) -> None:
    """Give each figure the words next to it that state no figure of their own, read by the audit for
    conditions only (``around``): in its paragraph, the sentence right before and right after the figure's
    sentence, when they hold no figure and are short ("... gives 38.9 tok/s. I cherry-picked the nicest
    run."); and, on a page of at most ``NEIGHBOUR_FIGURES`` figures, the paragraph right before and right
    after its block when they hold no figure ("(the fastest of several tries):" above a pasted output, "The
    same request twice; this is the second." below). A condition stated there is the run's; what Caveat
    does not understand there is not held against the figure."""
    if not drafts:
        return
    figs = sorted(d.spans[0][0] for d, _o in drafts if d.spans)
    tops = [b for b in blocks if not b.in_code]
    starts = [b.start for b in tops]

    def has_fig(a: int, b: int) -> bool:
        i = bisect.bisect_left(figs, a)
        return i < len(figs) and figs[i] < b

    def neighbour(i: int) -> str:
        if 0 <= i < len(tops) and tops[i].kind in ("text", "heading") and tops[i].end - tops[i].start <= AROUND_MAX \
                and not has_fig(tops[i].start, tops[i].end):
            return tops[i].text.strip()
        return ""

    cache: dict[tuple, str] = {}
    read_neighbours = len(figs) <= NEIGHBOUR_FIGURES   # on a page of many figures, paragraphs are about others too
    for d, outer in drafts:
        if not d.spans:
            continue
        blk = outer if outer is not None else d.block
        if blk is None:
            continue
        parts: list[str] = []
        own = d.block if d.block is not None and d.block.kind == "text" and not d.block.in_code else None
        if own is not None and d.source == "prose" and len(d.spans) > 1:
            sa, sb = d.spans[1]
            i, k = bisect.bisect_left(figs, own.start), bisect.bisect_left(figs, sa)
            n = bisect.bisect_left(figs, sb)
            lo = _sentence_after(text, figs[k - 1], sa) if k > i else own.start
            hi = _sentence_before(text, figs[n], sb) if n < len(figs) and figs[n] < own.end else own.end
            # the sentence right before and right after, when they hold no figure and are short: further
            # on, a post's sentences comment on other things ("the best CPU option", "copy-paste this")
            parts += [x for x in (_last_sentence(text[lo:sa]), _first_sentence(text[sb:hi])) if len(x) <= SENTENCE_MAX]
            eol = text.find("\n", sa, sb)
            end = sb if eol < 0 else eol
            if end - sa > LABEL_MAX:     # the figure's own line past what its label keeps (a long log line)
                cut = text.rfind(" ", sa, sa + LABEL_MAX)
                parts.append(text[cut if cut > sa else sa + LABEL_MAX:min(end, sa + 4 * AROUND_MAX)].strip())
        key = (blk.start, blk.end)
        if not read_neighbours:
            cache[key] = ""
        if key not in cache:
            j = bisect.bisect_left(starts, blk.start)
            cache[key] = "\n".join(x for x in (neighbour(j - 1), neighbour(j + 1 if j < len(starts) and starts[j] == blk.start else j)) if x)
        parts.append(cache[key])
        words = "\n".join(p for p in parts if p)
        if words:
            d.builder.put("around", words[:2 * AROUND_MAX], None)


SENTENCE_MAX = 250
LABEL_MAX = 200        # what scrapers.prose keeps of a figure's sentence as its label


def _first_sentence(words: str) -> str:
    m = _SENTENCE_END.search(words.strip())
    return (words.strip()[:m.start()] if m else words.strip()).strip()


def _last_sentence(words: str) -> str:
    w = words.strip()
    ends = list(_SENTENCE_END.finditer(w))
    return (w[ends[-1].end():] if ends else w).strip()


def _sentence_after(text: str, at: int, limit: int) -> int:
    """Where the sentence after the one holding offset ``at`` starts (at most ``limit``)."""
    m = _SENTENCE_END.search(text, at, limit)
    return m.end() if m else limit


def _sentence_before(text: str, at: int, limit: int) -> int:
    """Where the sentence holding offset ``at`` starts (at least ``limit``)."""
    last = limit
    for m in _SENTENCE_END.finditer(text, limit, at):
        last = m.end()
    return last


def _code_lead(blk: Block) -> str:
    """A code block's caption and the command or prompt lines inside it ("$ ollama run ... 'Recite ...'")."""
    lines = [m.group(0).strip() for m in _PROMPT_LINE.finditer(blk.text[:20_000])][:4]
    return "\n".join(x for x in [blk.caption.strip(), *lines] if x)


def _text_lead(sub: Block, claimed: list[tuple[int, int]], outer: Block) -> str:
    """The words of a text block before the tool output read from it (its last paragraph), else the caption."""
    if not claimed:
        return ""
    first = min(a for a, _b in claimed)
    before = sub.text[: max(0, first - sub.start)] if first >= sub.start else ""
    # the last paragraph that is not all the tool's own lines ("total duration: 9.14s"), blank lines apart
    paras = [p for p in re.split(r"\n\s*\n", before.strip()) if p.strip()]
    para = next((p for p in reversed(paras)
                 if not all(_TOOL_LINE.match(x) and len(x.strip()) <= 60 for x in p.splitlines() if x.strip())), "")
    if para and len(paras) > 1 and para is not paras[-1] and len(para) > LEAD_MAX:
        para = ""            # a long paragraph far above: not this output's introduction
    if not para.strip() and outer is not sub:
        para = outer.caption or ""
    return para


def sole_model(text: str) -> str | None:
    """The one model a page names, when it names exactly one (a command's ``-m .../Qwen3.6-27B-Q4_K_M.gguf``
    and then results in sections of their own that do not repeat it); None when it names several or none.
    Weights file names count as the model they hold; draft heads do not count."""
    from scrapers.tools.common import model_from_path

    chunk = _without_repo_line(text[:_SCAN_MODELS])
    found: dict[str, str] = {}
    for _at, name in pagefacts.models_in(chunk):
        found.setdefault(_model_norm(model_from_path(name)), model_from_path(name))
    for m in context.MODEL_ARG.finditer(chunk):
        name = model_from_path(m.group(1))
        if name and not pagefacts.draft_head(chunk, m.start(1), name):
            found.setdefault(_model_norm(name), name)
    found.pop("", None)
    return next(iter(found.values())) if len(found) == 1 else None


# a line that is one run of several: "Trial 3:", "Run 2 -", "run 1/5:", "#2", "iteration 4"
_RUN_LINE = re.compile(r"(?im)^[ \t>*`-]*(?:\[[^\]\n]{0,30}\][ \t]*)?(?:[\w.-]{1,30}[ \t]+)?(?:trial|run|iteration|sample|repeat|rep|pass)\s*#?\s*"
                       r"(\d{1,3})(?:\s*(?:/|of)\s*(\d{1,3}))?\b")


def _count_runs(drafts: list, text: str) -> None:
    """Figures on lines that number their runs ("Trial 1:" ... "Trial 5:", "run 2/5") are each one of
    several runs of the same thing: each gets the number of runs the page shows (a stated "of N", else
    how many numbered lines of its block give a figure of that kind), unless it states its own."""
    groups: dict[tuple, list] = {}
    for d, _outer in drafts:
        if not d.spans or "n_runs" in d.builder.entry.fields:
            continue
        a = d.spans[0][0]
        line_a = text.rfind("\n", 0, a) + 1
        line_b = text.find("\n", a)
        m = _RUN_LINE.match(text, line_a, line_b if line_b >= 0 else len(text))
        if not m:
            continue
        f = d.builder.entry.fields
        key = (d.block.start if d.block is not None else -1, f.get("phase"), f.get("headline_label"), f.get("test"))
        groups.setdefault(key, []).append((d, int(m.group(2)) if m.group(2) else None))
    for members in groups.values():
        stated = max((n for _d, n in members if n), default=None)
        n = stated or len(members)
        if n >= 2:
            for d, _n in members:
                d.builder.put("n_runs", n, None)


def specific_model(text: str, family: str, *, cache: dict | None = None) -> str | None:
    """A bare family name ("deepseek", "Qwen": no version, no size) made specific: the one model the
    page names that starts with it and has a number in it ("DeepSeek-R1-0528", also when it is first
    said shorter, "DeepSeek R1"); None when the page names none or several different ones."""
    if cache is not None and family in cache:
        return cache[family]
    from scrapers.tools.common import model_from_path

    fam = _model_norm(family)
    found: dict[str, str] = {}
    if fam:
        for _at, name in pagefacts.models_in(_without_repo_line(text[:_SCAN_MODELS])):
            name = model_from_path(name)
            key = _model_norm(name)
            if key.startswith(fam) and key != fam and any(ch.isdigit() for ch in name):
                found.setdefault(key, name)
    out = None
    if found:
        longest = max(found, key=len)      # "DeepSeek R1" and "DeepSeek-R1-0528": one model, said twice
        if all(longest.startswith(k) for k in found):
            out = found[longest]
    if cache is not None:
        cache[family] = out
    return out


def _without_repo_line(text: str) -> str:
    """``text`` with a GitHub page's opening "owner/repo · issue #N" line blanked (same length)."""
    nl = text.find("\n")
    first = text[:nl if nl >= 0 else len(text)]
    return " " * len(first) + text[len(first):] if context.REPO_LINE.match(first.strip()) else text


def _model_norm(name: str) -> str:
    w = _WEIGHTS_FILE.match(name or "")
    base = w.group("m") if w else (name or "")
    return re.sub(r"[\s_.-]+", "", base.lower())


def _panel_block(sub: Block) -> Block:
    """A panel's lines as one text block (its cells keep their offsets through the parent text)."""
    return Block("text", sub.start, sub.end, sub.text, section=sub.section, section_id=sub.section_id,
                 caption=sub.caption, caption_start=sub.caption_start)


def _unclaimed(blk: Block, claimed: list[tuple[int, int]]) -> list[Block]:
    if not claimed:
        return [blk]
    out, pos = [], blk.start
    for a, b in sorted(claimed):
        if a > pos:
            out.append(Block("text", pos, a, blk.text[pos - blk.start:a - blk.start], section=blk.section,
                             section_id=blk.section_id, in_code=blk.in_code))
        pos = max(pos, b)
    if pos < blk.end:
        out.append(Block("text", pos, blk.end, blk.text[pos - blk.start:], section=blk.section,
                         section_id=blk.section_id, in_code=blk.in_code))
    return out


_WEIGHTS_FILE = re.compile(r"(?i)^(?P<m>[\w.-]*?\d[\w.-]*?)(?:\.ggml(?:v\d+)?(?:\.(?P<q>(?:I?Q|F|BF)\d+(?:_[A-Z0-9]+)*))?"
                           r"(?:\.bin)?|[-_.](?P<q2>I?Q\d(?:_[A-Z0-9]+)*)\.gguf|\.gguf|(?:[-_](?P<q3>\d+bit))?\.(?:safetensors|pth?|bin)|"
                           r"\.(?P<q4>I?Q\d_(?:K(?:_[SML])?|\d)|Q8_0|F16|BF16))$")
# (".Q6_K" right after a versioned name: TheBloke-style GGUF file names without their .gguf)


def _finish(d: Draft) -> ParsedEntry | None:
    b = d.builder
    e = b.entry
    if e.fields.get("headline_tps") is None:
        return None
    f = e.fields
    e._stated = {k for k in ("scope", "concurrency", "phase") if k in f}   # what the page said, before defaults
    if "model" not in f and e.extra.get("model_type"):
        f["model"] = e.extra["model_type"]      # a table's model cell, when nothing around it names one
    weights = _WEIGHTS_FILE.match(str(f.get("model") or ""))
    if weights:     # "llama-2-7b-chat.ggmlv3.q2_K", "Qwen3-8B-Q4_K_M.gguf": a weights file names its model
        f["model"] = weights.group("m")
        quant = weights.group("q") or weights.group("q2") or weights.group("q3") or weights.group("q4")
        if quant and "quantization" not in f:
            f["quantization"] = quant
    if "phase" not in f:
        f["phase"] = "decode"
    c = f.get("concurrency")
    if f.get("scope") == "aggregate" and c == 1:
        f["scope"] = "per_user"
    if "scope" not in f:
        f["scope"] = "aggregate" if (c or 0) > 1 else "per_user"
        if c is not None:
            e._stated.add("scope")      # inferred from a stated concurrency: as good as stated
    return b.finish()


def classify_entry(e: ParsedEntry) -> ParsedEntry:
    """Phase and scope for an entry a reader built without them (tables of the html and json readers)."""
    from scrapers.meaning import phase_of, scope_of

    f = e.fields
    if f.get("headline_tps") is None:
        return e
    t = f.get("test")
    if t and not re.match(r"(?i)^(?:pp|tg)\s*\d", str(t)):
        # a benchmark mode, not a llama-bench test: vLLM's offline "Throughput" run counts input + output
        f.pop("test")
        e.quotes.pop("test", None)
        f.setdefault("label", t)
        if re.fullmatch(r"(?i)throughput", str(t)):
            f.setdefault("phase", "e2e")
            f.setdefault("scope", "aggregate")
    label = " ".join(str(x) for x in (f.get("headline_label"), f.get("test")) if x)
    if "phase" not in f:
        f["phase"] = phase_of(label) or "decode"
    if "scope" not in f:
        sc = scope_of(label)
        c = f.get("concurrency")
        f["scope"] = sc or ("aggregate" if (c or 0) > 1 else "per_user")
    if f["scope"] == "aggregate" and f.get("concurrency") == 1:
        f["scope"] = "per_user"
    return e


def finish_drafts(drafts: list[Draft], text: str) -> list[ParsedEntry]:
    out = []
    for d in drafts:
        e = _finish(d)
        if e is not None:
            bare = e.fields.get("model")
            if bare and not any(ch.isdigit() for ch in bare):
                better = specific_model(text, bare, cache=specific)
                if better:
                    e.fields["model"] = better
                    e.quotes["model"] = better
            pin(e, text, d.spans)
            out.append(e)
    return dedupe(out)


def _restates(v: float, exact: float) -> bool:
    """``v`` (from a sentence) restates ``exact``: the same figure, or it rounded/truncated ("219tok/s" for
    219.95)."""
    if round(exact, 3) == v:
        return True
    if exact <= 0 or abs(v - exact) / exact > 0.02:
        return False
    # v is exact at a coarser precision: 219 or 220 for 219.95, 3,800 for 3,803, 8 for 8.13
    for k in (2, 1, 0, -1, -2, -3):
        q = 10.0 ** -k
        if abs(round(exact / q) * q - v) < 1e-9 or abs(int(exact / q) * q - v) < 1e-9:
            return _sig(v) < _sig(exact)
    return False


def _sig(x: float) -> int:
    """Significant digits as written: 3800 -> 2, 3803 -> 4, 8.13 -> 3, 219.95 -> 5."""
    t = f"{x:.10f}".rstrip("0").rstrip(".").replace("-", "")
    digits = t.replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." not in t else len(digits)


def merge_prose(kept: list[ParsedEntry], prose: list[ParsedEntry]) -> list[ParsedEntry]:
    """A figure stated in a sentence that a table or tool output of the page also gives (or an earlier
    sentence already gave) restates it: its words add detail to that entry, they make no new one."""
    out = list(kept)
    added: list[ParsedEntry] = []
    for e in prose:
        f = e.fields
        if f.get("headline_tps") is None:
            out.append(e)
            continue
        v = round(float(f["headline_tps"]), 3)
        same = [k for k in out if k.fields.get("headline_tps") is not None
                and _restates(v, float(k.fields["headline_tps"]))
                and k.fields.get("phase") == f.get("phase")
                and all(k.fields.get(x) is None or x not in getattr(e, "_stated", {x})
                        or k.fields.get(x) == f.get(x) for x in ("scope", "concurrency"))]
        if not same:
            out.append(e)
            added.append(e)
            continue
        tgt = same[0]
        for k, val in f.items():
            if k in ("label", "headline_label") or k in tgt.fields:
                continue
            tgt.fields[k] = val
            if k in e.quotes:
                tgt.quotes[k] = e.quotes[k]
                if k in e.selectors:
                    tgt.selectors[k] = e.selectors[k]
    steady = {round(float(x), 3) for k in out for x in (k.fields.get("steady_low"), k.fields.get("steady_high"))
              if x is not None}
    # a sentence's or title's "380 t/s" that the page states as a run's steady state is that steady state
    drop = {id(e) for e in added if round(float(e.fields["headline_tps"]), 3) in steady
            and e.fields.get("steady_low") is None}
    return [e for e in out if id(e) not in drop]


def _compatible(p: ParsedEntry, e: ParsedEntry) -> bool:
    """Two entries for one figure describe the same configuration: every field both state agrees."""
    pf, ef = p.fields, e.fields
    ps, es = getattr(p, "_stated", None), getattr(e, "_stated", None)
    for x in ("scope", "concurrency"):
        a, b = pf.get(x), ef.get(x)
        stated_a = a is not None and (ps is None or x in ps)
        stated_b = b is not None and (es is None or x in es)
        if stated_a and stated_b and a != b:
            return False
        if not stated_a and not stated_b and a != b:
            return False
    for x in ("model", "test"):
        a, b = pf.get(x), ef.get(x)
        if a is not None and b is not None and str(a).lower() != str(b).lower():
            return False
    h1, h2 = (pf.get("hardware") or "").lower(), (ef.get("hardware") or "").lower()
    if h1 and h2 and not (h1.startswith(h2) or h2.startswith(h1)):
        return False    # "RTX PRO 6000" and "RTX PRO 6000 Blackwell" are one card; H100 and H200 are not
    return True


def dedupe(entries: list[ParsedEntry], origins: dict[int, int] | None = None) -> list[ParsedEntry]:
    """One entry per figure and configuration: a summary restating a figure elsewhere on the page is not a
    second entry (fields one of them leaves unstated do not tell them apart); two rows of one table with
    the same figure but different labels are two runs."""
    keep: dict[tuple, list[ParsedEntry]] = {}
    origins = origins or {}
    out = []
    for e in entries:
        f = e.fields
        key = (round(float(f["headline_tps"]), 3), f.get("phase"))
        prev = None
        for p in keep.get(key, []):
            if origins.get(id(p), -2) == origins.get(id(e), -3):
                continue    # two rows of one table are two runs, even with the same figure
            if not _compatible(p, e):
                continue
            prev = p
            break
        if prev is not None:
            for k, v in f.items():
                if k not in prev.fields:
                    prev.fields[k] = v
                    if k in e.quotes:
                        prev.quotes[k] = e.quotes[k]
                        if k in e.selectors:
                            prev.selectors[k] = e.selectors[k]
            continue
        keep.setdefault(key, []).append(e)
        out.append(e)
    return out


def _account(result: ParseResult, seen: list[tuple[int, str]], n_tables: int, skipped: list[str]) -> None:
    lost = sum(n for n, _ in seen)
    if lost:
        by: dict[str, int] = {}
        for n, r in seen:
            by[r] = by.get(r, 0) + n
        parts = [f"{n} {r}" for r, n in sorted(by.items(), key=lambda x: -x[1])]
        result.warnings.append(f"{lost} figures in {len(seen)} places not read: " + "; ".join(parts[:6])
                               + ("; ..." if len(parts) > 6 else ""))
    if not result.entries:
        what = f"{n_tables} table(s)" if n_tables else "no tables"
        detail = ("; skipped: " + "; ".join(skipped[:5])) if skipped else ""
        result.warnings.append(f"nothing parsed: saw {what} and no tok/s figure in the text{detail}")


def count_figures(text: str) -> int:
    return numbers_in(text)
