"""Generic tables read by meaning (any shape ``scrapers.segment`` found).

- Orientation: entries as rows (a tok/s column, or columns named after GPUs, engines, concurrencies or
  quantiles under a tok/s caption), or metrics as rows (``| Decode C1 / C4 / C8 (tok/s) | 87.5 / 219.3 /
  308.1 |``, ``| Output token throughput | 151.04 tok/s |``, two-column key/value tables).
- Group rows (one filled cell) name the configuration of the rows under them.
- Compound cells pair with a compound label (``C1 / C4 / C8``, ``8k / 64k / 128k``).
- The unit comes from the header, the cells, the caption or the section heading; ratios, percentages,
  deltas, req/s, ms and GB/s are never throughput; quantile columns give the mean (else the median).

Each entry comes back as a ``Draft``: the builder, the spans its values were read from (for the quote
selectors) and the narrowest words that describe it (row label and column header), which the scoped
context reads first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scrapers import meaning
from scrapers.blocks import Block, Cell, Table
from scrapers.columns import ENGINE_RE, Column, classify, split_engine
from scrapers import phrases
from scrapers.meaning import Figure, cell_figure, concurrency_of, phase_of, says_tps, scope_of
from scrapers.pagefacts import BARE_CARD, find_hardware
from scrapers.numbers import parse_range
from scrapers.rows import Builder, size_column_as_model

_STEADY_ROW = re.compile(r"steady[\s-]*state", re.I)

_LIST = re.compile(r"((?:(?:C|c|bs|BS)?\d+[kK]?|[A-Za-z][\w.-]{0,12})(?:\s*/\s*(?:(?:C|c|bs|BS)?\d+[kK]?|[A-Za-z][\w.-]{0,12})){1,15})")
_INT = re.compile(r"^\d{1,5}$")
_RANK_HEAD = re.compile(r"(?i)^(?:#|no\.?|nr\.?|rank(?:ing)?|pos\.?|position|place|index|idx)$")
_NOT_SPEED_HEADER = re.compile(r"(?i)size|param|cost|price|\$|mem|vram|\bgb\b|gib|ngl|layers|^#|rank|^id$|year|date|"
                               r"ctx|context|len(?:gth)?|tokens$|^n$|count|score|acc|ppl|perplex|loss|bpw|bits|temp|"
                               r"top[-_ ]?[pk]|min|p-min|max|ratio|%|watt|power|time|latency|ms$|sec|duration|"
                               r"bleu|rouge|mmlu|gsm8k|humaneval|\bf1\b|\bem\b|pass@|win|elo|kld|kl\b|bench\b|"
                               r"quality|rate$|ratio|speed[\s-]?up|x$")
_CNUM = re.compile(r"^(?:c|C|bs|BS|batch\s*|conc\s*)(\d{1,5})$")
# a row named just "prompt" (or "prompt (16 toks)") beside a "generation" row: the prompt's processing
_PROMPT_ROW = re.compile(r"^\s*prompt(?:\s+processing)?\s*(?:\(\s*\d[\d,]*\s*tok\w*\s*\))?\s*$", re.I)
# benchmark datasets and workloads a table's rows may be named after ("HumanEval (75)", "MT-Bench")
_DATASET = re.compile(r"(?i)^(?:human[\s-]?eval(?:\+|[\s-]plus)?|mbpp(?:\+)?|gsm[\s-]?8k|mt[\s-]?bench|terminal[\s-]?bench|"
                      r"swe[\s-]?bench(?:[\s-](?:verified|lite))?|sharegpt|alpaca(?:[\s-]?eval)?|long[\s-]?bench|mmlu(?:[\s-]pro)?|"
                      r"cnn(?:[\s/_-]?daily[\s-]?mail|dm)?|sonnet|arena[\s-]?hard|live[\s-]?code[\s-]?bench|aime(?:\s?\d+)?|"
                      r"math(?:[\s-]?500)?|gpqa(?:[\s-]diamond)?|c[\s-]?eval|xsum|narrative[\s-]?qa|bbh|hellaswag|"
                      r"spec[\s-]?bench|lmsys[\s-]?chat|wildchat|needle[\s-]in[\s-]a[\s-]haystack)$")
_WORKLOAD_HEAD = re.compile(r"(?i)^(?:datasets?|workloads?|tasks?|categor(?:y|ies)|benchmarks?|subsets?|scenarios?|"
                            r"prompt[\s_-]*(?:type|set|category)s?|domains?)$")   # a first column naming each row's workload
_COUNT_TAIL = re.compile(r"\s*\(\s*n?\s*=?\s*\d+\s*\)\s*$")
_SIZE = re.compile(r"^(?:\d+\s?[x×]\s?)?\d+(?:\.\d+)?\s?[BM]$")  # "70B", "1.5 B", MoE "16x17B"
_TPS_IN_CELL = re.compile(r"(?P<n>~?\d[\d,]*(?:\.\d+)?)\s*(?:tok(?:en)?s?\s*/\s*s(?:ec(?:ond)?)?|t/s|tokens?\s+per\s+second)\b", re.I)
_GENERIC_TPS_HEADER = re.compile(r"^(?:(?:avg|average|mean)\s+)?(?:tok(?:en)?s?\s*/\s*s(?:ec(?:ond)?)?|t/s|tps|throughput|"
                                 r"speed|tokens?\s+per\s+second)(?:\s*\(.*\))?$", re.I)


@dataclass
class Draft:
    builder: Builder
    spans: list[tuple[int, int]] = field(default_factory=list)
    local: str = ""                 # row label + column header: the narrowest scope
    source: str = "table"           # table | prose | tool name
    block: Block | None = None
    inferred: dict = field(default_factory=dict)   # field -> value set without a quote (not overridable)

    @property
    def fields(self) -> dict:
        return self.builder.entry.fields


def put_figure(b: Builder, fig: Figure, label: str | None = None) -> None:
    b.put("headline_tps", fig.value, fig.quote)
    if label:
        b.put("headline_label", label, None)
    if fig.spread is not None:
        b.put("spread", fig.spread, None)
    if fig.high is not None:
        b.entry.extra.setdefault("range_high", fig.high)


def _cell_fig(cell: Cell) -> tuple[Figure | None, tuple[int, int] | None]:
    fig = cell_figure(cell.value)
    if fig is None:
        m = _TPS_IN_CELL.search(cell.value)
        if not m:
            return None, None
        fig = cell_figure(m.group(0))
        if fig is None:
            return None, None
    i = cell.text.find(fig.quote)
    span = (cell.start + i, cell.start + i + len(fig.quote)) if i >= 0 else (cell.start, cell.end)
    return fig, span


def _label_list(text: str) -> list[str] | None:
    m = _LIST.search(text or "")
    if not m:
        return None
    items = [x.strip() for x in m.group(1).split("/")]
    return items if len(items) >= 2 else None


def _apply_item_label(b: Builder, item: str) -> None:
    m = re.fullmatch(r"(?:C|c|bs|BS)(\d+)", item)
    if m:
        b.put("concurrency", int(m.group(1)), item)
        return
    m = re.fullmatch(r"(\d+)([kK])", item)
    if m:
        b.put("context_length", int(m.group(1)) * 1024, item)
        return
    b.put("label", item, item)


_SPEC_HEAD = re.compile(r"(?i)eagle|medusa|\bmtp\b|lookahead|n-?gram|prompt[\s-]lookup|spec(?:ulative)?\b|draft")
_UNIT_TAIL = re.compile(r"\s*\(\s*(?:tps|tok(?:en)?s?\s*/\s*s(?:ec)?|t/s|tokens?/sec)\s*\)\s*$", re.I)
_WA = re.compile(r"(?i)w\d+a\d+")
_BARE_QUANT = re.compile(r"(?i)(?:float|fp|bf|int|f)(?:4|8|16|32)|bfloat16|nvfp4|mxfp4|I?Q\d(?:_[A-Z0-9]+)*|awq|gptq")
_BARE_TEST = re.compile(r"(?i)\s*((?:pp|tg)\d+(?:\s*\+\s*tg\d+)?)\s*")


def _header_meaning(b: Builder, header: str, has: set[str]) -> None:
    """A column header that names a configuration: a GPU, an engine, a concurrency, a test."""
    h = header.strip()
    if not h:
        return
    col = classify(h)
    test = col.test
    if not test:   # "| Backend | pp512 | tg128 |" with the unit in the cells: the header is the test
        t = _BARE_TEST.fullmatch(h)
        test = t.group(1).replace(" ", "").lower() if t else None
    if test:
        b.set_text("test", test, h)
    m = _CNUM.match(h)
    if m:
        b.put("concurrency", int(m.group(1)), h)
    c = concurrency_of(h)
    if c and "concurrency" not in has:
        b.put("concurrency", c[0], c[1])
    if "engine" not in has:
        em = ENGINE_RE.search(h)
        if em:
            eng, ver = split_engine(h[em.start():em.start() + 40])
            b.put("engine", eng, em.group(0))
            if ver:
                b.put("engine_version", ver, ver)
    if "spec_method" not in has and _SPEC_HEAD.search(h):
        st = phrases.extract(h)     # "| Baseline tok/s | Eagle3 tok/s |": the column's own decoding method
        if "spec_method" in st:
            b.put("spec_method", *st["spec_method"])
            if "draft_tokens" in st:
                b.put("draft_tokens", *st["draft_tokens"])
    hq = _UNIT_TAIL.sub("", h)
    if "quantization" not in has and (_BARE_QUANT.fullmatch(hq) or _WA.fullmatch(hq)):
        b.put("quantization", hq, hq)     # "| Engine | float32 | float16 | int8 |", "| W8A16 (TPS) |": a column per precision
    if "hardware" not in has and BARE_CARD.match(h):
        b.put("hardware", h, h)           # "| 3090Ti | 4090 |": columns named after cards
    elif "hardware" not in has and ":" in h:
        tail = h.rsplit(":", 1)[1].strip()
        if BARE_CARD.match(tail):         # "| V1: 3090Ti | V2: 4090 |": a variant, then the card
            b.put("hardware", tail, tail)
            b.entry.extra.setdefault("variant", h.rsplit(":", 1)[0].strip())
    if "hardware" not in has:
        hw = find_hardware(h)
        if hw and hw[1]:
            b.put("hardware", hw[1], hw[1] if hw[1] in h else None)
            if hw[0]:
                b.put("gpu_count", hw[0], hw[2])


def _is_group_row(row: list[Cell], width: int) -> bool:
    filled = [c for c in row if not c.empty]
    return width >= 3 and len(filled) == 1 and row and not row[0].empty and cell_figure(row[0].value) is None


def _unit_context(*texts: str) -> bool:
    return any(says_tps(t) or re.search(r"\bthroughput\b|\bspeed\b", t or "", re.I) for t in texts)


def read_table(tbl: Table, *, caption: str = "", heading: str = "", warnings: list[str] | None = None,
               seen: list | None = None) -> list[Draft]:
    """Entries from one table. ``seen`` collects (figures, reason) for cells that looked like figures but
    gave no entry, for the page's 'not read' count."""
    if not tbl.header and not tbl.rows:
        return []
    if tbl.shape == "panel":
        return []
    H = [c.value for c in tbl.header]
    rows = [r for r in tbl.rows if any(not c.empty for c in r)]
    if not rows:
        return []
    ctx_unit = _unit_context(caption, tbl.title, heading)
    metric = _metric_rows(H, rows, ctx_unit)
    if metric:
        out = _read_metric_rows(tbl, H, rows, caption, heading)
    else:
        out = _read_entry_rows(tbl, H, rows, caption, heading, ctx_unit, seen)
    title = " ".join((tbl.title or caption or "").split())[:200]
    if title:        # what the table calls itself ("H200 FP8 Max throughput"): the rules read it
        for d in out:
            d.builder.put("caption", title, None)
    return out


# --- entries as rows --------------------------------------------------------------------------------

# a figure with decimals, perhaps with its spread ("13.12 ± 0.85") or a note in brackets
_DECIMAL_CELL = re.compile(r"[_*~]*\d[\d,]*\.\d+[_*]*(?:\s*(?:±|\+/-|\+-)\s*\d[\d,]*(?:\.\d+)?)?(?:\s*\(.*\))?")


def _tps_columns(H: list[str], rows: list[list[Cell]], ctx_unit: bool) -> list[int]:
    out = []
    first_conc = bool(re.search(r"conc|batch|users|streams|^c$|ctx", H[0] if H else "", re.I))
    for j, h in enumerate(H):
        col = classify(h) if h else None
        cells = [r[j] for r in rows if j < len(r)]
        figs = sum(1 for c in cells if cell_figure(c.value) is not None or _TPS_IN_CELL.search(c.value))
        numeric = figs >= max(1, 0.5 * len([c for c in cells if not c.empty]))
        cell_unit = any(says_tps(c.value) for c in cells)
        if meaning.not_tps(h) and not (says_tps(h) and not re.search(r"req|ms\b|GB/s|%|\bx\b|\bper\s+(?:active|b\b|billion|"
                                                                     r"param|\$)", h, re.I)):
            continue
        if col and col.field and col.field not in ("label", "notes") and not says_tps(h) and not cell_unit:
            continue
        if says_tps(h) or (col and col.role == "tps"):
            out.append(j)
        elif cell_unit and numeric:
            out.append(j)
        elif ctx_unit and numeric and j > 0:
            hh = h.strip()
            if (meaning.is_quantile(hh) or _CNUM.match(hh) or (_INT.match(hh) and first_conc) or find_hardware(hh)
                    or BARE_CARD.match(hh)
                    or ENGINE_RE.search(hh) or phase_of(hh)):
                out.append(j)
            elif (col is None or col.role == "extra" or col.field == "label") and hh and not _NOT_SPEED_HEADER.search(hh):
                # a workload or variant named in the header ("python", "TS", "swift") under a tok/s caption:
                # a speed column when its cells are speeds (mostly with decimals, not counts)
                dec = sum(1 for c in cells if _DECIMAL_CELL.fullmatch(c.value))
                if dec >= max(1, 0.5 * len([c for c in cells if not c.empty])):
                    out.append(j)
    return out


def _quantile_pick(H: list[str], cols: list[int]) -> list[int]:
    """Among quantile columns keep the mean, else the median; other columns stay."""
    q = {j: meaning.is_quantile(H[j]) for j in cols}
    qs = [j for j in cols if q[j]]
    if len(qs) < 2:
        return cols
    keep = [j for j in qs if q[j] in ("mean", "avg", "average")] or [j for j in qs if q[j] in ("median", "p50")]
    return [j for j in cols if not q[j]] + keep[:1]


def _unit_pairs(tbl, H, rows) -> list[Draft]:
    """Rows that write the unit in one cell and the figure in the next (``| Tokens/s | 4202.3 |``, MLPerf
    results): one entry per pair; the model from a model column, the scenario from the header above."""
    out: list[Draft] = []
    cols = [classify(h) for h in H]
    model_col = next((j for j, c in enumerate(cols) if c.field == "model"), None)
    for row in rows:
        for i in range(len(row) - 1):
            u, v = row[i].value, row[i + 1]
            if not (says_tps(u) and not re.search(r"\d", u) and len(u) < 24):
                continue
            fig, span = _cell_fig(v)
            if fig is None:
                continue
            b = Builder(context=" | ".join(c.value for c in row))
            put_figure(b, fig, u)
            if model_col is not None and model_col < len(row) and not row[model_col].empty:
                b.set_text("model", row[model_col].value, H[model_col])
            # the scenario: the header cell over the pair (headers lose their colspan in text renderings)
            k = sum(1 for x in row[:i] if says_tps(x.value) and not re.search(r"\d", x.value))
            heads = [h for h in H[2:] if h] if len(H) > 2 else []
            if k < len(heads):
                b.put("label", heads[k], heads[k])
            out.append(Draft(b, [span, (row[0].start, row[-1].end)], f"{u} {b.entry.fields.get('label', '')}", "table"))
    return out


# columns whose empty cell under a filled one repeats it (a merged cell): names and lengths, never figures
_DITTO = ("model", "hardware", "engine", "quantization", "prompt_tokens", "gen_tokens", "context_length", "io_tokens")


def _read_entry_rows(tbl, H, rows, caption, heading, ctx_unit, seen) -> list[Draft]:
    tps = _tps_columns(H, rows, ctx_unit)
    if not tps:
        pairs = _unit_pairs(tbl, H, rows)
        if pairs:
            return pairs
        n = sum(1 for r in rows for c in r if cell_figure(c.value) is not None)
        if seen is not None and n and ctx_unit:
            seen.append((n, f"in a table under '{(caption or heading)[:40]}' with no tok/s column"))
        return []
    tps = _quantile_pick(H, tps)
    cols = [classify(h) for h in H]
    sized = size_column_as_model(cols, lambda i: [r[i].value for r in rows if i < len(r) and not r[i].empty])
    if sized is not None and sized not in tps:
        cols[sized] = Column(cols[sized].header, field="model")
    field_cols = {j for j, c in enumerate(cols) if c.field and j not in tps}
    rank0 = bool(H) and bool(_RANK_HEAD.match(H[0].strip(" *")))    # "| # | Model |": a rank, never the label
    extra_cols = [j for j, c in enumerate(cols) if c.role == "extra" and j not in tps and (j > 0 or rank0) and H[j].strip()]
    has = {cols[j].field for j in field_cols}
    size_col = next((j for j, h in enumerate(H) if re.fullmatch(r"(?i)(?:size|params|parameters|model\s*size)(?:\s*\((?:b|billions?)\))?",
                                                                 h.strip())
                     and j not in tps), None)
    out: list[Draft] = []
    group = ""
    group_span = None
    skipped = 0
    steady = None
    ditto: dict[int, Cell] = {}
    workload_rows = 0 not in tps and 0 not in field_cols and (bool(H and _WORKLOAD_HEAD.match(H[0].strip(" *"))) or sum(
        1 for r in rows if r and _DATASET.match(_COUNT_TAIL.sub("", r[0].value).strip(" *"))) >= 2)
    for row in rows:
        if _is_group_row(row, len(H)):
            group, group_span = row[0].value, (row[0].start, row[0].end)
            continue
        for k in field_cols:      # an empty model/GPU cell under a filled one repeats it (a merged cell)
            if cols[k].field in _DITTO and k < len(row):
                if row[k].empty and k in ditto:
                    row = row[:k] + [ditto[k]] + row[k + 1:]
                elif not row[k].empty:
                    ditto[k] = row[k]
        if row and _STEADY_ROW.search(row[0].value):
            # "| Entry's stated steady state | 373 to 391 |": the steady state of the table's runs, not a run
            for j in tps:
                if j < len(row):
                    rng = parse_range(row[j].value.replace(" tok/s", ""))
                    if rng:
                        steady = (rng, row[j])
                        break
            continue
        label_cell = row[0] if row and 0 not in tps and not rank0 else None
        for j in tps:
            if j >= len(row):
                continue
            cell = row[j]
            if cell.empty:
                continue
            fig, span = _cell_fig(cell)
            items = None
            if fig is not None and not fig.value > 0:
                continue     # "0.00": no speed was measured (an empty phase, a failed run)
            if fig is None:
                items = _compound(cell, H[j], label_cell.value if label_cell else "")
                if not items:
                    if re.search(r"\d", cell.value):
                        skipped += 1
                    continue
            for fig_i, span_i, item in (items or [(fig, span, None)]):
                b = Builder(context=" | ".join(c.value for c in row))
                put_figure(b, fig_i, H[j] or None)
                if item:
                    _apply_item_label(b, item)
                for k in sorted(field_cols):
                    if k < len(row) and not row[k].empty:
                        b.set_text(cols[k].field, row[k].value, H[k])
                        if cols[k].field == "engine_version" and len(row[k].value) <= 40:
                            # a version column names each row's build or kernel ("ROCm 7.2", "GEMV"): a
                            # configuration of the row, kept for its recipe
                            b.entry.extra.setdefault(H[k].strip(), row[k].value)
                for k in extra_cols:      # the row's other columns (draft-min, grpsz, act, n_ubatch), verbatim
                    if k < len(row) and not row[k].empty and len(row[k].value) <= 40:
                        b.entry.extra.setdefault(H[k].strip(), row[k].value)
                if size_col is not None and size_col < len(row) and "model" in b.entry.fields:
                    sz = row[size_col].value
                    if re.fullmatch(r"\d+(?:\.\d+)?", sz.strip()) and re.search(r"(?i)\((?:b|billions?)\)", H[size_col]):
                        sz = sz.strip() + "B"       # "| Size (B) | ... | 1.5 |": the unit is in the header
                    if _SIZE.match(sz) and sz.replace(" ", "").lower() not in b.entry.fields["model"].replace(" ", "").lower():
                        b.entry.fields["model"] = f"{b.entry.fields['model']} {sz.replace(' ', '')}"  # "1.5 B": 1.5B
                        b.entry.quotes.pop("model", None)
                _header_meaning(b, H[j], has)
                if _INT.match(H[j].strip()) and re.search(r"(?i)conc|batch|users|streams|^c$", H[0]):
                    b.put("concurrency", int(H[j].strip()), H[j].strip())
                row_text = " ".join(row[k].value for k in range(len(row)) if k not in tps)
                local = f"{row_text} {H[j]} {cell.value} {group}"
                ph = (phase_of(H[j]) or phase_of(cell.value)
                      or ("prefill" if row and _PROMPT_ROW.match(row[0].value) else None)
                      or phase_of(row_text) or phase_of(caption) or phase_of(heading) or None)
                if ph:
                    b.put("phase", ph, None)
                sc = scope_of(H[j]) or scope_of(cell.value) or scope_of(caption) or scope_of(tbl.title)
                if sc:
                    b.put("scope", sc, None)
                if "concurrency" not in b.entry.fields:
                    c = concurrency_of(row_text)
                    if c:
                        b.put("concurrency", c[0], c[1])
                if meaning.is_peak(H[j]):
                    b.entry.extra["peak"] = True
                if group:
                    b.put("label", group, group)
                elif label_cell is not None and not label_cell.empty and 0 not in field_cols:
                    b.put("label", label_cell.value, label_cell.value)
                    if workload_rows:     # rows named after benchmark datasets: each row's dataset is its test
                        name = _COUNT_TAIL.sub("", label_cell.value).strip(" *")
                        if name:
                            b.put("test", name, name if name in label_cell.value else None)
                if not _GENERIC_TPS_HEADER.match(H[j].strip()) and H[j].strip() and "label" not in b.entry.fields:
                    b.put("label", H[j].strip(), None)
                spans = [span_i] + [(c.start, c.end) for c in row] + ([group_span] if group_span else [])
                out.append(Draft(b, spans, local, "table"))
    if steady is not None:
        (lo, hi), cell = steady
        for d in out:
            d.builder.put("steady_low", lo, cell.text)
            d.builder.put("steady_high", hi, cell.text)
            d.spans.append((cell.start, cell.end))
    if skipped and seen is not None:
        seen.append((skipped, "in cells under a tok/s column that hold no readable figure"))
    return out


def _compound(cell: Cell, header: str, row_label: str):
    """``87.5 / 219.3 / 308.1`` paired with ``C1 / C4 / C8`` in the header or the row label."""
    if "/" not in cell.value:
        return None
    parts = [p.strip() for p in cell.value.split("/")]
    labels = _label_list(header) or _label_list(row_label)
    if not labels or len(labels) != len(parts):
        return None
    out, pos = [], 0
    for part, lab in zip(parts, labels):
        fig = cell_figure(part)
        if fig is None:
            pos = cell.text.find(part, pos) + len(part) if part else pos
            continue
        i = cell.text.find(fig.quote, pos)
        span = (cell.start + i, cell.start + i + len(fig.quote)) if i >= 0 else (cell.start, cell.end)
        pos = i + len(fig.quote) if i >= 0 else pos
        out.append((fig, span, lab))
    return out or None


# --- metrics as rows --------------------------------------------------------------------------------

def _metric_rows(H: list[str], rows: list[list[Cell]], ctx_unit: bool) -> bool:
    if len(H) < 2:
        return False
    head_tps = any(says_tps(h) or classify(h).role == "tps" for h in H[1:])
    first = [r[0].value for r in rows if r]
    label_tps = [x for x in first if (says_tps(x) or re.search(r"\bthroughput\b", x, re.I)) and not meaning.not_tps(x)]
    kv = re.fullmatch(r"(?i)metric|field|key|name|setting|measure|item|stat(?:istic)?|parameter|", H[0].strip() or "") is not None
    if kv and len(H) == 2 and not head_tps:
        return True     # a key/value table: only rows whose key or value says tok/s are figures
    if label_tps and (not head_tps or kv):
        return True
    return False


_PROMPT_HEAD = re.compile(r"^(?:\S{1,12}\s*\(\d[\d,]*\)|\d+(?:\.\d+)?\s*[kK]?(?:\s*tokens?)?)$")
_COLUMN_FIELDS = {"gen_tokens", "prompt_tokens", "context_length", "io_tokens", "concurrency", "n_runs", "hardware",
                  "gpu_count", "engine", "engine_version", "quantization", "kv_cache", "test", "tp"}


def _read_metric_rows(tbl, H, rows, caption, heading) -> list[Draft]:
    """Rows that name a metric; their cells (one per configuration column) hold its figures."""
    out: list[Draft] = []
    group = ""
    # rows that state a field for every configuration column ("| Output length | 10tokens | 300tokens |")
    per_column: dict[int, list[tuple[str, Cell, str]]] = {}
    for row in rows:
        if len(row) < 2 or says_tps(row[0].value) or _is_group_row(row, len(H)):
            continue
        col = classify(row[0].value)
        if col.field in _COLUMN_FIELDS:
            for j in range(1, len(row)):
                if not row[j].empty:
                    per_column.setdefault(j, []).append((col.field, row[j], row[0].value))
    # "| Prompt | hi (2) | 1K (969) | 2K (1930) |": columns that are prompts (lengths), not configurations
    prompt_corner = bool(H) and classify(H[0]).field in ("prompt", "prompt_tokens")
    corner = re.search(r"\((\d[\d,]*)\s*tokens?\)", H[0]) if prompt_corner else None   # "| Prompt (500 tokens) |"
    prompt_axis = prompt_corner and len(H) > 2 and \
        sum(bool(_PROMPT_HEAD.match(h.strip())) for h in H[1:]) >= max(2, (len(H) - 1) * 2 // 3)
    for row in rows:
        if not row:
            continue
        lab = row[0].value
        if _is_group_row(row, len(H)) and not says_tps(lab):
            group = lab          # "**6 experts V0.2.1**": the configuration of the metric rows under it
            continue
        cell_says = any(says_tps(c.value) for c in row[1:])
        if meaning.not_tps(lab) or not (says_tps(lab) or re.search(r"\bthroughput\b", lab, re.I) or cell_says):
            continue
        labels = _label_list(lab)
        for j in range(1, len(row)):
            cell = row[j]
            if cell.empty:
                continue
            head = H[j] if j < len(H) else ""
            items = None
            if labels and "/" in cell.value:
                items = _compound(cell, "", lab)
            if items is None:
                fig, span = _cell_fig(cell)
                if fig is None:
                    continue
                items = [(fig, span, None)]
            for fig, span, item in items:
                b = Builder(context=" | ".join(c.value for c in row))
                put_figure(b, fig, lab)
                if item:
                    _apply_item_label(b, item)
                ph = phase_of(lab) or phase_of(head) or phase_of(cell.value) or phase_of(caption) or phase_of(heading)
                if ph:
                    b.put("phase", ph, None)
                sc = scope_of(lab) or scope_of(cell.value) or scope_of(caption) or scope_of(tbl.title)
                if sc:
                    b.put("scope", sc, None)
                if meaning.is_peak(lab):
                    b.entry.extra["peak"] = True
                for f, c, flab in per_column.get(j, ()):
                    b.set_text(f, c.value, flab)
                if corner:
                    b.set_text("prompt_tokens", corner.group(1), H[0])
                if prompt_axis and head:     # "| Prompt | hi (2) | 1K (969) |": each column's prompt length
                    pm = re.search(r"\((\d[\d,]*)\)\s*$", head) or re.fullmatch(r"(\d+(?:\.\d+)?\s*[kK]?)", head.strip())
                    if pm:
                        b.set_text("prompt_tokens", pm.group(1), H[0])
                if head and prompt_axis:     # the column is a workload (its prompt), the group the configuration
                    b.entry.extra.setdefault("workload", head)
                    if group:
                        b.put("label", group, group)
                elif head and not re.fullmatch(r"(?i)value|result|values?|\s*", head):
                    _header_meaning(b, head, set())
                    b.put("label", f"{group} | {head}" if group else head, None if group else head)
                elif group:
                    b.put("label", group, group)
                out.append(Draft(b, [span, (row[0].start, row[0].end), (cell.start, cell.end)],
                                 f"{lab} {head} {cell.value} {group}", "table"))
    return out
