"""llmperf (ray-project) summaries: ``results_request_output_throughput_token_per_s_mean`` is one
request's decode rate (per_user; the quantiles ``_quantiles_p25`` … ``_p99``, ``_min``, ``_max`` and
``_stddev`` are its spread, never entries of their own), ``results_mean_output_throughput_token_per_s`` the
run's overall output rate (aggregate); ``num_concurrent_requests`` is the concurrency. Also the
per-concurrency sweep layout (``{"1": {"concurrency": 1, "throughput_token_per_s": …}, …}``).
"""

from __future__ import annotations

from scrapers.tools.common import draft, locate


def _int(v):
    return round(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def _scope(conc):
    return "per_user" if conc == 1 else "aggregate"


def read_json(doc, text):
    if not isinstance(doc, dict):
        return None
    if "results_request_output_throughput_token_per_s_mean" in doc or "results_mean_output_throughput_token_per_s" in doc:
        conc = doc.get("num_concurrent_requests") if isinstance(doc.get("num_concurrent_requests"), int) else None
        model = doc.get("model")
        shape = {"prompt_tokens": _int(doc.get("mean_input_tokens")), "gen_tokens": _int(doc.get("mean_output_tokens"))}
        out = []
        key = "results_request_output_throughput_token_per_s_mean"
        if isinstance(doc.get(key), (int, float)):
            loc = locate(text, [key])
            d = draft(doc[key], loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "llmperf",
                      phase="decode", scope="per_user", concurrency=conc, model=model, headline_label=key, **shape)
            sd = doc.get("results_request_output_throughput_token_per_s_stddev")
            if isinstance(sd, (int, float)):
                d.builder.put("spread", float(sd), None)
            d.builder.entry.extra["quantiles"] = {k.rsplit("_", 1)[-1]: v for k, v in doc.items()
                                                  if k.startswith("results_request_output_throughput_token_per_s_q")}
            out.append(d)
        key = "results_mean_output_throughput_token_per_s"
        if isinstance(doc.get(key), (int, float)):
            loc = locate(text, [key])
            out.append(draft(doc[key], loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "llmperf",
                             phase="decode", scope=_scope(conc), concurrency=conc, model=model, headline_label=key,
                             **shape))
        return out
    vals = [(k, v) for k, v in doc.items() if isinstance(v, dict) and "throughput_token_per_s" in v]
    if len(vals) >= 1 and len(vals) == len(doc):
        out, pos = [], 0
        for k, v in vals:
            conc = v.get("concurrency") if isinstance(v.get("concurrency"), int) else (int(k) if str(k).isdigit() else None)
            loc = locate(text, [str(k), "throughput_token_per_s"], pos)
            if loc:
                pos = loc[2]
            out.append(draft(v["throughput_token_per_s"], loc[0] if loc else None, (loc[1], loc[2]) if loc else None,
                             "llmperf sweep", phase="decode", scope=_scope(conc), concurrency=conc,
                             headline_label="throughput_token_per_s",
                             prompt_tokens=_int(v.get("input_token_length")), gen_tokens=_int(v.get("output_token_length"))))
        return out
    return None
