"""KoboldCpp's ``--benchmark`` CSV: ``Timestamp,Backend,Layers,Model,MaxCtx,GenAmount,ProcessingTime,
ProcessingSpeed,GenerationTime,GenerationSpeed,TotalTime,...`` then one row per run. ProcessingSpeed is
prompt processing and GenerationSpeed decode, in tokens per second, one request (per_user); MaxCtx is
the context, GenAmount the generated tokens, Model the weights' name (its quantization tail split off)."""

from __future__ import annotations

import csv
import re

from scrapers.tools.common import draft, model_from_path

_HEAD = re.compile(r"^[ \t]*Timestamp,Backend,Layers,Model,MaxCtx,GenAmount,ProcessingTime,ProcessingSpeed,"
                   r"GenerationTime,GenerationSpeed\b[^\n]*$", re.M)
_QUANT_TAIL = re.compile(r"(?i)[._-](q\d(?:_[a-z0-9]+)*|f16|bf16|fp16)$")


def read_text(blk, text):
    chunk = blk.text
    if "ProcessingSpeed" not in chunk:
        return [], []
    out, claimed = [], []
    for h in _HEAD.finditer(chunk):
        names = h.group(0).strip().split(",")
        pos = h.end() + 1
        while pos < len(chunk):
            end = chunk.find("\n", pos)
            end = len(chunk) if end < 0 else end
            line = chunk[pos:end]
            cells = next(csv.reader([line]), [])
            if len(cells) < 10 or not re.match(r"\d{4}-\d{2}-\d{2}", cells[0].strip()):
                break
            row = dict(zip(names, cells))
            model_raw = (row.get("Model") or "").strip()
            model = model_from_path(model_raw) if model_raw else None
            quant = None
            if model:
                m = _QUANT_TAIL.search(model)
                if m:
                    quant, model = m.group(1), model[:m.start()]
            for key, phase in (("ProcessingSpeed", "prefill"), ("GenerationSpeed", "decode")):
                lit = (row.get(key) or "").strip()
                try:
                    v = float(lit)
                except ValueError:
                    continue
                if v <= 0:
                    continue
                at = pos + _offset(line, names.index(key))
                s = blk.start + at
                d = draft(v, lit, (s, s + len(lit)), "koboldcpp --benchmark", phase=phase, scope="per_user",
                          engine="KoboldCpp", model=(model, model if model in text else None) if model else None,
                          quantization=quant, headline_label=key)
                ctx = (row.get("MaxCtx") or "").strip()
                if ctx.isdigit():
                    d.builder.put("context_length", int(ctx), ctx)
                gen = (row.get("GenAmount") or "").strip()
                if gen.isdigit() and phase == "decode":
                    d.builder.put("gen_tokens", int(gen), gen)
                d.spans.append((blk.start + pos, blk.start + end))
                d.local = line
                out.append(d)
            claimed.append((blk.start + pos, blk.start + end))
            pos = end + 1
        claimed.append((blk.start + h.start(), blk.start + h.end()))
    return out, claimed


def _offset(line: str, index: int) -> int:
    """Where the ``index``-th comma-separated cell of ``line`` starts (cells here hold no quoted commas)."""
    at = 0
    for _ in range(index):
        at = line.index(",", at) + 1
    return at
