"""From table rows (html or markdown) to ParsedEntry objects, through the shared recognisers.

``Builder`` sets one canonical field from one piece of text, keeping the exact quote and turning an
unreadable value into a per-field warning (the raw text is kept in ``extra``). ``table_entries``
turns a header row and body rows into entries: one per row, or one per throughput column when the
columns are llama-bench tests ("pp512 t/s", "tg128 t/s").
"""

from __future__ import annotations

import re
from functools import lru_cache

from scrapers import phrases
from scrapers.columns import (ENGINE_RE, Column, classify, engine_at_commit, find_quant, split_engine, split_hardware,
                              test_sizes)
from scrapers.fields import FIELDS, ParsedEntry
from scrapers.numbers import NUMBER_RE, parse_int, parse_number, parse_range, parse_rate, parse_tokens, read

EMPTY = {"", "-", "—", "–", "n/a", "na", "none", "?", "null", "tbd", "…", "--"}
_STRIP = " \t*`_\u00a0"
_WS = re.compile(r"\s+")
_COMPUTE_BACKENDS = {"vulkan", "rocm", "cuda", "metal", "sycl", "cpu", "opencl", "hip", "blas", "cann", "musa", "kompute"}
_INT_TOKENS = {"context_length", "prompt_tokens", "gen_tokens"}


def clean(text: str) -> str:
    t = text.strip(_STRIP)
    if "  " in t or "\n" in t or "\t" in t or "\r" in t or "\u00a0" in t:
        t = _WS.sub(" ", t).strip(_STRIP)
    return t


@lru_cache(maxsize=65536)
def _effects(field: str, text: str, label: str, decimal_comma: bool) -> tuple:
    """What setting ``field`` from ``text`` does to an empty entry (cached: leaderboards repeat cells)."""
    b = Builder(decimal_comma=decimal_comma)
    b._set_text(field, text, label)
    e = b.entry
    return tuple(e.fields.items()), tuple(e.quotes.items()), tuple(e.warnings), tuple(e.extra.items())


class Builder:
    """Accumulates one entry; the first value set for a field wins (explicit columns go first)."""

    __slots__ = ("entry", "decimal_comma")

    def __init__(self, context: str = "", decimal_comma: bool = False):
        self.entry = ParsedEntry(context=context)
        self.decimal_comma = decimal_comma

    def put(self, field: str, value, quote: str | None) -> None:
        e = self.entry
        if value is None or field in e.fields:
            return
        e.fields[field] = value
        if quote:
            e.quotes[field] = quote

    def warn(self, label: str, text: str, what: str) -> None:
        self.entry.warnings.append(f"{label}: could not read {what} from {text!r}; kept the text in extra")
        self.entry.extra.setdefault(label, text)

    def set_text(self, field: str, text: str, label: str) -> None:
        """Set ``field`` from a cell/value text; unreadable numbers become warnings (raw text kept in extra)."""
        fields, quotes, warnings, extra = _effects(field, text, label, self.decimal_comma)
        e = self.entry
        quotes = dict(quotes)
        for f, v in fields:
            if f not in e.fields:
                e.fields[f] = list(v) if isinstance(v, list) else v
                if f in quotes:
                    e.quotes[f] = quotes[f]
        e.warnings.extend(warnings)
        for k, v in extra:
            e.extra.setdefault(k, v)

    def _set_text(self, field: str, text: str, label: str) -> None:
        t = clean(text)
        if t.lower() in EMPTY:
            return
        kind = FIELDS.get(field)
        if field == "hardware":
            if t.lower() in ("single", "dual", "quad", "multi", "multiple", "cpu only"):
                self.entry.extra.setdefault(label, t)
                return
            n, name = split_hardware(t)
            self.put("hardware", name, name)
            if n is not None:
                self.put("gpu_count", n, t)
        elif field == "gpu_count":
            n = parse_int(t)
            if n is None:
                n2, name = split_hardware(t)
                if n2 is None:
                    return self.warn(label, t, "a GPU count")
                self.put("gpu_count", n2, t)
                self.put("hardware", name, name)
            else:
                self.put("gpu_count", n, t)
        elif field == "engine":
            if t.lower() in _COMPUTE_BACKENDS:   # a compute backend of llama.cpp & co, not an engine
                self.entry.extra.setdefault(label, t)
                return
            if norm(label) in ("backend", "backends") and not ENGINE_RE.search(t):
                self.entry.extra.setdefault(label, t)   # "Backend: Triton" / "Container (kyuz0)": not an engine
                return
            eng, ver = split_engine(t)
            commit = engine_at_commit(t)
            if commit:
                self.put("engine_commit", commit, commit)
            self.put("engine", eng, eng if eng in t else None)
            if ver:
                self.put("engine_version", ver, ver)
        elif field == "engine_version":
            self.put(field, t[1:] if re.fullmatch(r"v\d[\w.+-]*", t) else t, t)
        elif field == "test":
            self.put("test", t, t)
            pp, tg = test_sizes(t)
            if pp:
                self.put("prompt_tokens", pp, t)
            if tg:
                self.put("gen_tokens", tg, t)
        elif field == "io_tokens":     # an "Input/Output" column: "1024/1024", "128 / 2048"
            m = re.fullmatch(r"(\d[\d,]*\s*[kK]?)\s*/\s*(\d[\d,]*\s*[kK]?)", t)
            if not m:
                return self.warn(label, t, "input and output lengths")
            self.put("prompt_tokens", parse_tokens(m.group(1).replace(" ", "")), t)
            self.put("gen_tokens", parse_tokens(m.group(2).replace(" ", "")), t)
        elif field == "acceptance_rate":
            v = parse_rate(t)
            if v is None:
                return self.warn(label, t, "an acceptance rate")
            self.put(field, v, t)
        elif field == "samples" or field == "per_position_rates":
            vals = [float(x) for x in (parse_number(p) for p in NUMBER_RE.findall(t.replace(", ", " ; ")))
                    if x is not None]
            if not vals:
                return self.warn(label, t, "a list of numbers")
            self.put(field, vals, t)
            if field == "samples":
                self.put("n_runs", len(vals), t)
        elif field in ("notes", "command"):
            self.put(field, t, t)
            self.phrases(t)
        elif field == "spec_method" and "draft_tokens" in (st := phrases.extract(t)) and "spec_method" in st:
            self.put("spec_method", *st["spec_method"])   # "EAGLE-3, 6 tokens": the method, then its draft width
            self.put("draft_tokens", *st["draft_tokens"])
        elif kind is int:
            v = parse_tokens(t) if field in _INT_TOKENS else parse_int(t)
            if v is None:
                m = re.match(r"^(\d+)\s*(?:\(.*\)|\[.*\]|tokens?|toks?)$", t, re.I)    # "20 (second run)", "10tokens"
                v = int(m.group(1)) if m else None
            if v is None:
                return self.warn(label, t, "a whole number")
            self.put(field, v, t)
        elif kind is float:
            v = parse_number(t, decimal_comma=self.decimal_comma)
            if v is None:
                return self.warn(label, t, "a number")
            self.put(field, v, t)
        else:
            self.put(field, t, t)

    def set_tps(self, col: Column, text: str, label: str | None = None) -> None:
        t = clean(text)
        if t.lower() in EMPTY:
            return
        r = read(t, decimal_comma=self.decimal_comma)
        if r.form in ("one", "pm", "of") and r.value is not None:
            self.put("headline_tps", r.value, t)
            self.put("headline_label", label or col.header, None)
            if r.spread is not None:
                self.put("spread", r.spread, t)
            if col.test:
                self.set_text("test", col.test, col.header)
        elif r.form == "range":
            self.entry.warnings.append(f"{col.header}: a range {t!r} where one figure was expected; kept as steady state")
            self.put("steady_low", r.low, t)
            self.put("steady_high", r.high, t)
        else:
            self.warn(col.header, t, "a tok/s figure")

    def set_steady(self, label: str, text: str) -> None:
        t = clean(text)
        if t.lower() in EMPTY:
            return
        rng = parse_range(t)
        if rng is None:
            return self.warn(label, t, "a steady-state range")
        self.put("steady_low", rng[0], t)
        self.put("steady_high", rng[1], t)

    def phrases(self, text: str, *, strict: bool = False) -> None:
        for f, (v, q) in phrases.extract(text, strict=strict).items():
            self.put(f, v, q)

    def finish(self) -> ParsedEntry:
        e = self.entry
        model = e.fields.get("model")
        if isinstance(model, str) and (model[:1] in "`'\"" or not any(ch.isalnum() for ch in model)):
            bare = model.strip("`'\" ")
            if any(ch.isalnum() for ch in bare):
                e.fields["model"] = model = bare        # "`Gemma-4-E4B-it-GGUF`": inline code around the name
                if e.quotes.get("model"):
                    e.quotes["model"] = bare
            else:                                       # "+": a diff marker, not a model
                e.fields.pop("model")
                e.quotes.pop("model", None)
                model = None
        if isinstance(model, str) and model.endswith(")"):
            m = _PAREN_FORMAT.search(model)     # "Qwen3-0.6B (BF16)", "Llama-3.2-3B (GGUF)": a weights format
            if m and m.start() > 0:
                e.fields["model"] = model[:m.start()].rstrip()
                if e.quotes.get("model") == model:
                    e.quotes["model"] = e.fields["model"]
                q = find_quant(m.group(1))
                if q and "quantization" not in e.fields:
                    self.put("quantization", q, q)
        if "quantization" not in e.fields and "model" in e.fields:
            q = find_quant(e.fields["model"])
            if q:
                self.put("quantization", q, q)
        return e


_PAREN_FORMAT = re.compile(r"\s*\(\s*((?:UD-)?I?Q\d(?:_[A-Z0-9]+)*|BF16|FP16|F16|FP32|F32|FP8|FP4|NVFP4|MXFP4|"
                           r"W\d+A\d+|AWQ|GPTQ|GGUF|MLX|EXL[23]|\d+(?:\.\d+)?[- ]?bits?|\d+(?:\.\d+)?\s?bpw|"
                           r"\d+(?:\.\d+)?\s?[kK]?\s*(?:ctx|context|tokens?)|\d+\s?px|\d+(?:\.\d+)?\s?s)\s*\)$", re.I)
# (also a run condition in parentheses: "(1K ctx)", "(256px)", "(30s)")


def _is_test_table(tps_cols: list[Column]) -> bool:
    """One entry per tok/s column: llama-bench test columns (pp512 | tg128), or columns of different
    phases (Prompt processing t/s | Generation t/s): each is a figure of its own (issue 11)."""
    if len(tps_cols) < 2:
        return False
    if all(c.test for c in tps_cols):
        return True
    phases = [c.phase for c in tps_cols]
    return all(phases) and len(set(phases)) == len(phases)


def pick_headline(tps_cols: list[tuple[int, Column]]) -> int | None:
    """Index of the throughput column the page puts forward: decode/unspecified before prefill."""
    if not tps_cols:
        return None
    for want in ("decode", ""):
        for i, c in tps_cols:
            if c.phase == want:
                return i
    return tps_cols[0][0]


_SIZE_HEAD = re.compile(r"^(?:model\s*)?(?:size|params|parameters|param\s*count)$", re.I)
_PARAM_COUNT = re.compile(r"^~?(?:\d+\s?[x×]\s?)?\d+(?:\.\d+)?(?:\s*[-–]\s*\d+(?:\.\d+)?)?\s*[BM]$")


def size_column_as_model(cols: list[Column], column_values) -> int | None:
    """A table that names no model but has a "Model Size" column of parameter counts ("3B", "7-8B",
    "32-34B"): those counts are what tells its rows apart, so they are the rows' model; the column's
    index, else None. (llama-bench's "size" column holds the weights' bytes, "3.56 GiB": a detail.)
    ``column_values(i)`` gives the cells of column ``i`` as text."""
    if any(c.field == "model" for c in cols):
        return None
    for i, c in enumerate(cols):
        if c.role == "extra" and _SIZE_HEAD.match(norm(c.header) or ""):
            vals = [v.strip("*").strip() for v in column_values(i) if v and v.strip("*").strip()]
            if vals and sum(1 for v in vals if _PARAM_COUNT.match(v)) >= max(2, 0.8 * len(vals)):
                return i
    return None


def _sizes_as_models(cols: list[Column], rows: list[list[str]]) -> list[Column]:
    i = size_column_as_model(cols, lambda i: [clean(r[i]) for r in rows if i < len(r)])
    if i is None:
        return cols
    return [*cols[:i], Column(cols[i].header, field="model"), *cols[i + 1:]]


def table_entries(headers: list[str], rows: list[list[str]], *, row_notes: list[list[str]] | None = None,
                  defaults: dict | None = None, llama_bench: bool = False,
                  decimal_comma: bool = False, warnings: list[str] | None = None) -> list[ParsedEntry]:
    """Entries from one table. ``row_notes[i]`` holds extra text for row i (details row, title attribute)."""
    cols = [classify(h) for h in headers]
    if llama_bench:
        cols = [Column(c.header, role="extra") if c.field == "engine" and norm(c.header) == "backend" else c
                for c in cols]
    cols = _sizes_as_models(cols, rows)
    tps = [(i, c) for i, c in enumerate(cols) if c.role == "tps"]
    per_test = _is_test_table([c for _, c in tps])
    head_idx = pick_headline(tps)
    out: list[ParsedEntry] = []
    n_head = len(headers)
    group: dict = {}
    for r, cells in enumerate(rows):
        filled = [c for c in cells if clean(c).lower() not in EMPTY]
        if n_head >= 3 and len(filled) == 1 and cells and clean(cells[0]) and parse_number(clean(cells[0])) is None:
            # a group row ("H100" over the rows measured on it): the configuration of the rows below
            from scrapers.pagefacts import find_hardware

            g = clean(cells[0])
            hw = find_hardware(g)
            group = {"hardware": (hw[1], hw[1])} if hw else {"label": (g, g)}
            if hw and hw[0]:
                group["gpu_count"] = (hw[0], hw[2])
            continue
        targets = [i for i, _ in tps] if per_test else [head_idx]
        for target in targets:
            b = Builder(context=" | ".join(clean(c) for c in cells), decimal_comma=decimal_comma)
            if len(cells) != n_head:
                b.entry.warnings.append(f"row has {len(cells)} cells where the header has {n_head}; "
                                        "cells were matched to headers from the left")
            for i, cell in enumerate(cells[:n_head]):
                col = cols[i]
                if col.role == "tps":
                    if i == target:
                        b.set_tps(col, cell)
                    elif not per_test and clean(cell).lower() not in EMPTY:
                        b.entry.extra[col.header] = clean(cell)
                elif col.role == "steady":
                    b.set_steady(col.header, cell)
                elif col.role == "extra":
                    t = clean(cell)
                    if t and t.lower() not in EMPTY:
                        b.entry.extra[col.header] = t
                else:
                    b.set_text(col.field, cell, col.header)
            if target is None and not b.entry.warnings:
                b.entry.warnings.append("no tok/s column in this table; the entry has no headline figure")
            for text in (row_notes[r] if row_notes else ()):
                if "notes" not in b.entry.fields:
                    b.put("notes", clean(text), clean(text))
                b.phrases(clean(text))
            if llama_bench:
                b.put("engine", "llama.cpp", None)
            for f, (v, q) in group.items():      # the group row, after the row's own cells
                b.put(f, v, q)
            for f, (v, q) in (defaults or {}).items():
                b.put(f, v, q)
            e = b.finish()
            if e.fields:
                out.append(e)
    return out


def norm(h: str) -> str:
    return clean(h).lower()


def is_entry_table(headers: list[str]) -> bool:
    """A table of claims has a tok/s column, or a model/hardware column beside other known columns."""
    cols = [classify(h) for h in headers]
    if any(c.role in ("tps", "steady") for c in cols):
        return True
    known = {c.field for c in cols if c.field}
    return bool(known & {"model", "hardware"}) and len(known) >= 3


def looks_llama_bench(headers: list[str]) -> bool:
    h = {norm(x) for x in headers}
    return {"model", "test", "t/s"} <= h or ({"test", "t/s"} <= h and ("backend" in h or "ngl" in h))
