"""vLLM ``vllm bench serve`` (and the older ``benchmark_serving.py``): the printed result block and the
``--save-result`` JSON.

``Output token throughput`` / ``output_throughput`` is the decode rate summed over the run's concurrent
requests (aggregate; per_user when the run's concurrency is 1), ``Total Token throughput`` /
``total_token_throughput`` is end to end (input + output), ``Peak output token throughput`` /
``max_output_tokens_per_s`` is a peak (best_of). ``Request throughput`` is requests per second and never
a tok/s figure. ``Maximum request concurrency`` / ``max_concurrency`` gives the concurrency.
"""

from __future__ import annotations

import re

from scrapers.tools.common import draft, locate

_LINE = re.compile(r"^[ \t]*(?P<k>[A-Za-z][\w ()/%.,-]*?)\s*:\s*(?P<v>-?[\d,]+(?:\.\d+)?|inf|None)[ \t]*$", re.M)
_BLOCK = re.compile(r"=+\s*Serving Benchmark Result\s*=+", re.I)
_SPEC = {"acceptance rate (%)": ("acceptance_rate", 0.01), "acceptance length": ("acceptance_length", 1),
         "draft tokens": ("drafted_tokens", 1), "accepted tokens": ("accepted_tokens", 1)}
_METRICS = {"output token throughput (tok/s)": ("decode", False, "output_throughput"),
            "total token throughput (tok/s)": ("e2e", False, "total_token_throughput"),
            "total throughput (tok/s)": ("e2e", False, "total_throughput"),
            "peak output token throughput (tok/s)": ("decode", True, "max_output_tokens_per_s"),
            "input token throughput (tok/s)": ("prefill", False, "input_throughput")}


_CMD = re.compile(r"(?:vllm\s+bench\s+serve|benchmark_serving\.py|sglang\.bench_serving)")
# "--model M", "--model $MODEL", "--model <your-model>": a placeholder, not a model
_PLACEHOLDER = re.compile(r"^(?:\$.*|<.*>|\{.*\}|[A-Z]{1,2}|MODEL(?:_\w+)?|model(?:[_-]?(?:name|path|id))?|\.{3}|X+)$")
_FLAG = re.compile(r"--(max-concurrency|model|tokenizer)[= ]+[\"']?([^\s\"'\\]+)")


def _scope(conc):
    if conc is None:
        return None      # unknown: the entry's concurrency (from its context) decides
    return "per_user" if conc == 1 else "aggregate"


def _command_before(text: str, at: int) -> dict:
    """The flags of the nearest ``vllm bench serve`` command before a result block (same page)."""
    starts = [m.start() for m in _CMD.finditer(text, max(0, at - 20000), at)]
    if not starts:
        return {}
    s = starts[-1]
    end = text.find("```", s)
    cmd = text[s:end if 0 <= end < at else min(at, s + 2000)]
    out = {}
    for m in _FLAG.finditer(cmd):
        if m.group(1) == "max-concurrency" and m.group(2).isdigit():
            out["concurrency"] = int(m.group(2))
        elif m.group(1) == "model" and not _PLACEHOLDER.match(m.group(2)):
            from scrapers.tools.common import model_from_path

            out.setdefault("model", model_from_path(m.group(2)))   # a local path: the checkpoint's folder name
        elif m.group(1) == "tokenizer" and "/" in m.group(2) and not m.group(2).startswith("$"):
            out["tokenizer"] = m.group(2).rstrip("/").rsplit("/", 1)[-1]
    if "tokenizer" in out:      # --model is often a served alias; the tokenizer path names the checkpoint
        out["model"] = out.pop("tokenizer")
    return out


def per_request_gen(lines: dict) -> tuple[int, str] | None:
    """The mean generated tokens per request of a result block: total generated / successful requests."""
    n, gen = lines.get("successful requests"), lines.get("total generated tokens")
    try:
        nv = float(n.group("v").replace(",", "")) if n else 0
        gv = float(gen.group("v").replace(",", "")) if gen else 0
    except ValueError:
        return None
    if nv >= 1 and gv > 0:
        return round(gv / nv), gen.group(0).strip()
    return None


def read_text(blk, text):
    chunk = blk.text
    if "token throughput" not in chunk.lower():
        return [], []
    out, claimed = [], []
    for bm in (_BLOCK.finditer(chunk) if _BLOCK.search(chunk) else [None]):
        a = bm.start() if bm else 0
        nxt = _BLOCK.search(chunk, bm.end()) if bm else None
        b = nxt.start() if nxt else len(chunk)
        lines = {m.group("k").strip().lower(): m for m in _LINE.finditer(chunk, a, b)}
        if not any(k in lines for k in _METRICS):
            continue
        conc = None
        for k in ("maximum request concurrency", "max concurrency", "max_concurrency"):
            if k in lines and lines[k].group("v") not in ("None", "inf"):
                conc = int(float(lines[k].group("v").replace(",", "")))
        cmd = _command_before(text, blk.start + a) if conc is None else {}
        if conc is None and cmd.get("concurrency") is not None:
            conc = cmd["concurrency"]
        is_sglang = "sglang" in chunk[a:b].lower() or "input token throughput (tok/s)" in lines
        per_req = per_request_gen(lines)
        for k, (phase, peak, _key) in _METRICS.items():
            m = lines.get(k)
            if not m:
                continue
            lit = m.group("v")
            s = blk.start + m.start("v")
            d = draft(float(lit.replace(",", "")), lit, (s, s + len(lit)), "sglang bench_serving" if is_sglang else
                      "vllm bench serve", phase=phase, scope=_scope(conc), concurrency=conc,
                      engine="SGLang" if is_sglang else None, headline_label=m.group("k").strip(),
                      model=cmd.get("model"))
            if peak:
                d.builder.entry.extra["peak"] = True
            if per_req:
                d.builder.put("gen_tokens", per_req[0], per_req[1])
            retok, gen_all = lines.get("total generated tokens (retokenized)"), lines.get("total generated tokens")
            if retok and gen_all and phase != "prefill":
                try:
                    d.builder.put("tokens_generated", int(float(gen_all.group("v").replace(",", ""))), gen_all.group("v"))
                    d.builder.put("tokens_retokenized", int(float(retok.group("v").replace(",", ""))), retok.group("v"))
                except ValueError:
                    pass
            for sk, (f, mul) in _SPEC.items():
                if sk in lines and phase == "decode":
                    v = float(lines[sk].group("v").replace(",", ""))
                    d.builder.put(f, v * mul if mul != 1 else (int(v) if f.endswith("tokens") else v), lines[sk].group(0).strip())
            d.spans.append((blk.start + m.start(), blk.start + m.end()))
            d.local = m.group(0)
            out.append(d)
        claimed.append((blk.start + a, blk.start + b))
    return out, claimed


def read_json(doc, text):
    if not isinstance(doc, dict) or "output_throughput" not in doc:
        return None
    if "total_token_throughput" not in doc and "max_output_tokens_per_s" not in doc and \
            str(doc.get("backend", "")).lower() not in ("vllm", "openai", "openai-chat"):
        return None
    if str(doc.get("backend", "")).lower() == "sglang" or "total_throughput" in doc:
        return None   # SGLang's bench_serving (scrapers.tools.sglang)
    conc = doc.get("max_concurrency") if isinstance(doc.get("max_concurrency"), int) else None
    model = doc.get("model_id") or doc.get("model")
    out = []
    for key, phase, peak in (("output_throughput", "decode", False), ("total_token_throughput", "e2e", False),
                             ("max_output_tokens_per_s", "decode", True)):
        v = doc.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        loc = locate(text, [key])
        d = draft(v, loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "vllm bench serve",
                  phase=phase, scope=_scope(conc), concurrency=conc, engine="vLLM",
                  model=str(model) if model else None, headline_label=key)
        if peak:
            d.builder.entry.extra["peak"] = True
        done, total_out = doc.get("completed"), doc.get("total_output_tokens")
        if isinstance(done, int) and done > 0 and isinstance(total_out, (int, float)) and total_out > 0:
            d.builder.put("gen_tokens", round(total_out / done), None)   # mean generated tokens per request
        if phase == "decode" and not peak:
            for k, f in (("spec_decode_acceptance_length", "acceptance_length"),
                         ("spec_decode_accepted_tokens", "accepted_tokens"),
                         ("spec_decode_draft_tokens", "drafted_tokens")):
                if isinstance(doc.get(k), (int, float)):
                    d.builder.put(f, doc[k], None)
            if isinstance(doc.get("spec_decode_acceptance_rate"), (int, float)):
                d.builder.put("acceptance_rate", doc["spec_decode_acceptance_rate"] / 100.0, None)
        rates = doc.get("spec_decode_per_position_acceptance_rates")
        if isinstance(rates, list) and rates:
            d.builder.put("draft_tokens", len(rates), None)
            d.builder.put("per_position_rates", [float(x) for x in rates if isinstance(x, (int, float))], None)
        out.append(d)
    return out
