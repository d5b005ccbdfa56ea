"""llama-bench (llama.cpp) results in every output format: the markdown table
(``| model | size | params | backend | ngl | test | t/s |``), and the records of ``-o csv``, ``-o json``,
``-o jsonl`` and ``-o sql`` (``build_commit``, ``build_number``, ``gpu_info``, ``model_filename``,
``model_type``, ``n_prompt``, ``n_gen``, ``n_depth``, ``avg_ts``, ``stddev_ts``, ``samples_ts``).

Each row is one run of one test: ``pp512`` is prefill, ``tg128`` decode, ``pp512+tg128`` end to end; one
sequence at a time, so scope per_user and concurrency 1. ``± x`` and ``stddev_ts`` give the spread,
``samples_ts`` the per-repetition figures. The ``build: <commit> (<number>)`` line under a table pins it.
"""

from __future__ import annotations

import json
import re

from scrapers.columns import split_hardware
from scrapers.pagefacts import find_hardware

_COMPUTE = {"vulkan", "rocm", "cuda", "metal", "sycl", "cpu", "opencl", "hip", "blas", "cann", "musa", "kompute",
            "rpc", "blas,rpc"}
from scrapers.meaning import cell_figure
from scrapers.tools.common import draft, locate, model_from_path, split_quant_tail

_SIZE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?[BMK](?![\w])|\d+x\d+B", re.I)
_BUILD = re.compile(r"build:\s*([0-9a-f]{7,40})\s*\((\d+)\)")
_TEST = re.compile(r"^(?:pp\s*\d+|tg\s*\d+|pp\s*\d+\s*\+\s*tg\s*\d+)(?:\s*@\s*d\s*\d+)?$", re.I)
_SQL = re.compile(r"INSERT\s+INTO\s+\w+\s*\(([^)]*)\)\s*VALUES\s*\(([^;]*)\)\s*;", re.I)


def phase_of_test(test: str) -> str:
    t = test.lower().replace(" ", "")
    if "+tg" in t:
        return "e2e"
    return "prefill" if t.startswith("pp") else "decode"


def _test_name(n_prompt, n_gen, n_depth) -> str | None:
    try:
        p, g, d = int(n_prompt or 0), int(n_gen or 0), int(n_depth or 0)
    except (TypeError, ValueError):
        return None
    if p and g:
        t = f"pp{p}+tg{g}"
    elif p:
        t = f"pp{p}"
    elif g:
        t = f"tg{g}"
    else:
        return None
    return t + (f" @ d{d}" if d else "")


def is_record(obj) -> bool:
    return isinstance(obj, dict) and ("avg_ts" in obj or "samples_ts" in obj) and ("n_prompt" in obj or "n_gen" in obj)


def record_draft(rec: dict, text: str = "", start: int = 0):
    """One llama-bench record (from JSON, JSONL, CSV or SQL) -> draft; spans point into ``text``."""
    test = (str(rec["test"]) if _TEST_CELL.match(str(rec.get("test") or "")) else
            _test_name(rec.get("n_prompt"), rec.get("n_gen"), rec.get("n_depth")))
    try:
        value = float(rec.get("avg_ts"))
    except (TypeError, ValueError):
        return None
    if test is None:
        return None
    loc = locate(text, ["avg_ts"], start) if text else None
    lit = loc[0] if loc else str(rec.get("avg_ts"))
    span = (loc[1], loc[2]) if loc else None
    path = rec.get("model_filename") or ""
    model = model_from_path(path) if path else split_quant_tail(str(rec.get("model_type") or ""))[0]
    mtype = str(rec.get("model_type") or "")
    quant = split_quant_tail(mtype)[1] if mtype else None
    hw_count, hw = (None, None)
    gi = rec.get("gpu_info")
    if gi:
        names = [x.strip() for x in str(gi).split(",") if x.strip()]
        hw = names[0] if names else None
        hw_count = len(names) if len(names) > 1 else 1
        c2, name = split_hardware(hw) if hw else (None, hw)
        if c2:
            hw_count, hw = c2, name
    d = draft(value, lit, span, "llama-bench", phase=phase_of_test(test), scope="per_user", concurrency=1,
              test=test, engine="llama.cpp", model=model or None, quantization=quant, hardware=hw,
              gpu_count=hw_count, engine_commit=rec.get("build_commit") and str(rec.get("build_commit")),
              engine_version=rec.get("build_number") and str(rec.get("build_number")),
              headline_label="avg_ts")
    if rec.get("stddev_ts") not in (None, ""):
        try:
            d.builder.put("spread", float(rec["stddev_ts"]), None)
        except (TypeError, ValueError):
            pass
    s = rec.get("samples_ts")
    if isinstance(s, list) and s:
        d.builder.put("samples", [float(x) for x in s if isinstance(x, (int, float))], None)
        d.builder.put("n_runs", len(s), None)
    kv = [str(rec.get(k) or "").strip() for k in ("type_k", "type_v")]
    if any(kv):      # the KV cache types the run used ("q4_0", "f16"): the lower-precision one if they differ
        low = next((v for v in kv if v and not re.match(r"(?i)^(?:f16|bf16|f32|fp16)$", v)), None)
        d.builder.put("kv_cache", low or next(v for v in kv if v), None)
    if rec.get("label"):
        d.builder.put("label", str(rec["label"]), None)
    d.local = str(rec.get("label") or "")
    return d


def _align(head: list[str], row) -> tuple[dict, dict]:
    """Map a CSV row to the header; a row of an older schema (fewer or more columns) is aligned from the
    left for its first half and from the right for the rest, where llama-bench keeps n_prompt..avg_ts."""
    n, m = len(head), len(row)
    if n == m:
        return {h: row[i].value for i, h in enumerate(head)}, {h: i for i, h in enumerate(head)}
    rec, where = {}, {}
    if m and _TEST_CELL.match(row[-1].value) and head[-1] != "test":
        rec["test"], where["test"] = row[-1].value, m - 1     # a schema that ends with the test's name
        row = row[:-1]
        m -= 1
    k = min(n, m) // 2
    for i in range(m):
        j = i if i < k else n - m + i
        if 0 <= j < n:
            rec.setdefault(head[j], row[i].value)
            where.setdefault(head[j], i)
    # the columns in the middle moved between schemas: find the model file and the GPUs by their values
    for i, c in enumerate(row):
        v = c.value
        if v.lower().endswith(".gguf"):
            rec["model_filename"], where["model_filename"] = v, i
        elif _GPU_CELL.search(v) and "gpu_info" in head:
            rec["gpu_info"], where["gpu_info"] = v.replace("/", ", "), i
    return rec, where


_TEST_CELL = re.compile(r"^(?:pp|tg)\d+(?:\+tg\d+)?(?:\s*@\s*d\d+)?$", re.I)
_GPU_CELL = re.compile(r"(?i)\b(?:tesla|rtx|gtx|radeon|geforce|quadro|instinct|a100|h100|h200|l40s?|mi\d{3}|arc\s)")


def read_json(doc, text):
    items = doc if isinstance(doc, list) else [doc]
    recs = [x for x in items if is_record(x)]
    if not recs:
        return None
    out, pos = [], 0
    for rec in recs:
        d = record_draft(rec, text, pos)
        if d:
            if d.spans:
                pos = d.spans[0][1]
            out.append(d)
    return out


def read_table(blk, text):
    tbl = blk.table
    if tbl is None:
        return None
    head = [c.value.strip().lower() for c in tbl.header]
    if "avg_ts" in head and ("n_prompt" in head or "n_gen" in head):
        out = []
        for row in tbl.rows:
            rec, where = _align(head, row)
            d = record_draft(rec)
            if d:
                i = where.get("avg_ts")
                if i is not None and i < len(row):
                    c = row[i]
                    d.builder.entry.quotes["headline_tps"] = c.text
                    d.spans = [(c.start, c.end)]
                out.append(d)
        return out
    if not ({"test", "t/s"} <= set(head) and ("model" in head or "backend" in head or "ngl" in head)):
        return None
    out = []
    i_test, i_ts = head.index("test"), head.index("t/s")
    i_model = head.index("model") if "model" in head else None
    after = text[blk.end:blk.end + 400]
    build = _BUILD.search(after)
    for row in tbl.rows:
        if max(i_test, i_ts) >= len(row):
            continue
        test = row[i_test].value
        fig = cell_figure(row[i_ts].value)
        if fig is None or not _TEST.match(test.strip()):
            continue
        c = row[i_ts]
        k = c.text.find(fig.quote)
        span = (c.start + k, c.start + k + len(fig.quote)) if k >= 0 else (c.start, c.end)
        model, quant = (split_quant_tail(row[i_model].value) if i_model is not None and i_model < len(row)
                        else (None, None))
        sized = bool(model and _SIZE.search(model))
        d = draft(fig.value, fig.quote, span, "llama-bench", phase=phase_of_test(test), scope="per_user",
                  concurrency=1, test=(re.sub(r"\s+", " ", test.strip()), test.strip()), engine="llama.cpp",
                  model=(model, model) if model and sized else None,
                  quantization=(quant, quant) if quant else None, headline_label="t/s")
        if model and not sized:
            # "IQ2_BN - 2.06 bpw TriLM" names a quantization, not a sized model: the page's words decide,
            # the cell only when they name none
            d.builder.entry.extra["model_type"] = model
        if fig.spread is not None:
            d.builder.put("spread", fig.spread, None)
        if build:
            d.builder.put("engine_commit", build.group(1), build.group(1))
            d.builder.put("engine_version", build.group(2), build.group(2))
            d.spans.append((blk.end + build.start(), blk.end + build.end()))
        for j, h in enumerate(head):
            if j < len(row) and h not in ("model", "test", "t/s") and row[j].value:
                d.builder.entry.extra[tbl.header[j].value] = row[j].value
        if "backend" in head and head.index("backend") < len(row):
            be = row[head.index("backend")].value
            if be and be.split()[0].lower().strip(",") not in _COMPUTE and (re.search(r"\d", be) or find_hardware(be)):
                d.builder.put("hardware", be, be)     # a results table that put the machine in "backend"
        d.spans.append((row[0].start, row[-1].end))
        d.local = " ".join(x.value for x in row)
        out.append(d)
    return out


def read_code(blk, text):
    """A code block holding llama-bench ``-o json`` / ``jsonl`` / ``sql`` output."""
    body = blk.text.strip()
    if "avg_ts" not in body:
        return None
    a = text.find(body, blk.start) if body else blk.start
    a = blk.start if a < 0 else a
    if body.startswith(("[", "{")):
        try:
            doc = json.loads(body)
            return read_json(doc, text[a:a + len(body)]) or None
        except ValueError:
            out = []
            for line in body.splitlines():
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    d = record_draft(rec)
                    if d:
                        out.append(d)
            return out or None
    ms = list(_SQL.finditer(body))
    if ms:
        out = []
        for m in ms:
            cols = [c.strip() for c in m.group(1).split(",")]
            vals = [v.strip().strip("'\"") for v in re.findall(r"'[^']*'|[^,]+", m.group(2))]
            if len(cols) == len(vals):
                d = record_draft(dict(zip(cols, vals)))
                if d:
                    out.append(d)
        return out or None
    return None
