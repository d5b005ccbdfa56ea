"""Helpers the tool recognisers share: a draft from a figure, a JSON value's literal and span, model
names from file paths."""

from __future__ import annotations

import re

from scrapers.columns import QUANT_RE
from scrapers.rows import Builder
from scrapers.tables import Draft

_LIT = re.compile(r'\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"[^"]*")')


def locate(text: str, path: list[str], start: int = 0) -> tuple[str, int, int] | None:
    """The literal of the JSON value at ``path`` (keys, outermost first) and its span, searching forward."""
    pos = start
    for i, key in enumerate(path):
        k = text.find(f'"{key}"', pos)
        if k < 0:
            return None
        pos = k + len(key) + 2
        if i == len(path) - 1:
            m = _LIT.match(text, pos)
            if not m:
                return None
            lit = m.group(1)
            a = m.start(1)
            if lit.startswith('"'):
                return lit[1:-1], a + 1, a + len(lit) - 1
            return lit, a, a + len(lit)
    return None


def draft(value: float, quote: str | None, span: tuple[int, int] | None, source: str, **fields) -> Draft:
    b = Builder(context=source)
    b.put("headline_tps", float(value), quote)
    for f, v in fields.items():
        if v is None:
            continue
        if isinstance(v, tuple):
            b.put(f, v[0], v[1])
        else:
            b.put(f, v, None)
    return Draft(b, [span] if span else [], "", source)


_GGUF_TAIL = re.compile(r"(?i)[-_.](?:UD-)?(?:I?Q\d(?:_[A-Z0-9]+)*|F16|BF16|F32|FP16|FP8|MXFP4|NVFP4|AWQ|GPTQ|"
                        r"(?:quantized[-_.])?w\d+a\d+|\d+bit)(?:[-_.]\d+of\d+)?$")


def model_from_path(path: str) -> str:
    """``/root/Qwen3.8-27B-UD-Q6_K_M.gguf`` -> ``Qwen3.8-27B``; ``org/Model-FP8`` stays as given."""
    s = str(path).strip()
    base = s.rsplit("/", 1)[-1] if ("/" in s and (s.startswith(("/", ".", "~")) or s.endswith(".gguf"))) else s
    base = re.sub(r"(?i)(?:-\d{5}-of-\d{5})?\.gguf$", "", base)
    if base != s and "___" in base:          # ModelScope's downloads spell "." as "___": Qwen2___5-VL-72B
        base = base.replace("___", ".")
    if "--" in base and "/" not in base:     # the hub cache's "models--Qwen--Qwen3-30B-A3B": org--name
        base = base.rsplit("--", 1)[-1]
    if base != s or s.endswith(".gguf"):
        while True:
            nb = _GGUF_TAIL.sub("", base)
            if nb == base:
                break
            base = nb
    return base


def split_quant_tail(model: str) -> tuple[str, str | None]:
    """``gemma3 12B Q8_0`` -> (``gemma3 12B``, ``Q8_0``); ``llama 7B mostly Q4_0`` likewise."""
    m = re.search(r"(?i)\s+(?:mostly\s+)?((?:I?Q\d(?:_[A-Z0-9]+)*(?:\s*-\s*\w+)?)|F16|BF16|F32|FP16)$", model.strip())
    if not m:
        return model, None
    return model[:m.start()].strip(), m.group(1)


def quant_of(text: str) -> str | None:
    m = QUANT_RE.search(text or "")
    return m.group(1) if m else None
