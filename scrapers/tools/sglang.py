"""SGLang's benchmarks: ``bench_serving`` JSON (``input_throughput`` prefill, ``output_throughput`` decode,
``total_throughput`` end to end, all aggregate over the run's requests; ``max_concurrency``), the
``request_metrics.throughput.{input,output,total}.tokens_per_second`` of its agentic/trace runs (with
``latency.intvty`` the per-user decode rate: the mean taken, quantiles kept as spread), and the
``bench_one_batch`` lines (``Prefill. latency: … throughput: N token/s``, ``Decode. median latency: …
median throughput: N token/s``, ``Total. …``). The text block of ``bench_serving`` shares vLLM's layout
and is read by ``scrapers.tools.vllm``.
"""

from __future__ import annotations

import re

from scrapers.tools.common import draft, locate

_ONE_BATCH = re.compile(r"(?P<k>Prefill|Decode|Total)\.\s+(?:median\s+)?latency:\s*[\d.]+\s*s,\s*(?:median\s+)?"
                        r"throughput:\s*(?P<v>[\d.]+)\s*token/s", re.I)
_BS = re.compile(r"batch[_ ]size\s*[=:]\s*(\d+)", re.I)


def _scope(conc):
    return "per_user" if conc == 1 else "aggregate"


def read_text(blk, text):
    chunk = blk.text
    if "token/s" not in chunk:
        return [], []
    out, claimed = [], []
    for m in _ONE_BATCH.finditer(chunk):
        k = m.group("k").lower()
        phase = {"prefill": "prefill", "decode": "decode", "total": "e2e"}[k]
        bs = None
        for b in _BS.finditer(chunk, 0, m.start()):
            bs = int(b.group(1))
        lit = m.group("v")
        s = blk.start + m.start("v")
        d = draft(float(lit), lit, (s, s + len(lit)), "sglang bench_one_batch", phase=phase,
                  scope=_scope(bs) if bs else None, concurrency=bs, engine="SGLang", headline_label=m.group(0)[:40])
        d.spans.append((blk.start + m.start(), blk.start + m.end()))
        out.append(d)
        claimed.append((blk.start + m.start(), blk.start + m.end()))
    return out, claimed


def read_json(doc, text):
    if not isinstance(doc, dict):
        return None
    rm = doc.get("request_metrics")
    if isinstance(rm, dict) and isinstance(rm.get("throughput"), dict):
        return _trace_run(doc, rm, text)
    if "output_throughput" not in doc:
        return None
    if not (str(doc.get("backend", "")).lower().startswith("sglang") or "total_throughput" in doc
            or "input_throughput" in doc):
        return None
    conc = doc.get("max_concurrency") if isinstance(doc.get("max_concurrency"), int) else None
    model = doc.get("model_id") or doc.get("model") or doc.get("model_path")
    out = []
    for key, phase in (("input_throughput", "prefill"), ("output_throughput", "decode"), ("total_throughput", "e2e")):
        v = doc.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        loc = locate(text, [key])
        out.append(draft(v, loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "sglang bench_serving",
                         phase=phase, scope=_scope(conc), concurrency=conc, engine="SGLang",
                         model=str(model) if model else None, headline_label=key))
    return out


def _trace_run(doc, rm, text):
    conc = doc.get("conc") or doc.get("max_concurrency") or doc.get("concurrency")
    conc = conc if isinstance(conc, int) else None
    fw = str(doc.get("framework") or doc.get("backend") or "")
    engine = {"sglang": "SGLang", "vllm": "vLLM"}.get(fw.lower(), fw or None)
    common = dict(concurrency=conc, engine=engine, model=doc.get("model"), hardware=doc.get("hw"),
                  gpu_count=doc.get("num_gpus") if isinstance(doc.get("num_gpus"), int) else None,
                  tp=doc.get("tp") if isinstance(doc.get("tp"), int) else None,
                  quantization=doc.get("precision"), engine_image=doc.get("image"),
                  spec_method=str(doc["spec_decoding"]).upper() if doc.get("spec_decoding") not in (None, "", "none")
                  else None)
    out = []
    for part, phase in (("input", "prefill"), ("output", "decode"), ("total", "e2e")):
        v = (rm["throughput"].get(part) or {}).get("tokens_per_second")
        if not isinstance(v, (int, float)):
            continue
        loc = locate(text, ["request_metrics", "throughput", part, "tokens_per_second"])
        out.append(draft(v, loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "trace benchmark",
                         phase=phase, scope=_scope(conc), headline_label=f"throughput.{part}.tokens_per_second",
                         **common))
    # interactivity: one request's tokens per second (the mean; quantiles kept as spread)
    for key, phase in (("intvty", "decode"), ("full_response_intvty", "decode"), ("e2e_norm_intvty", "e2e")):
        inter = (rm.get("latency") or {}).get(key)
        if not (isinstance(inter, dict) and isinstance(inter.get("mean"), (int, float))):
            continue
        loc = locate(text, ["request_metrics", "latency", key, "mean"])
        d = draft(inter["mean"], loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "trace benchmark",
                  phase=phase, scope="per_user", headline_label=f"latency.{key}.mean", **common)
        d.builder.entry.extra["quantiles"] = {k: v for k, v in inter.items() if k != "mean"}
        out.append(d)
    return out
