"""Reading a quantization (bits per weight) from a name: GGUF types, FP8, AWQ, EXL2 "6.5bpw"..."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .data import Reference, load_reference

_BOUND = r"(?<![a-z0-9]){}(?![a-z0-9])"
_STATED_BPW = re.compile(r"(?<![\d.])(\d{1,2}(?:\.\d+)?)\s*[-_ ]?\s*bpw\b|\bbpw\s*[-_ ]?\s*(\d{1,2}(?:\.\d+)?)\b")
_N_BIT = re.compile(r"(?<![a-z0-9])([2-8])_?bit(?![a-z0-9])")
_LLAMA_BENCH_SIZE = re.compile(r"\b(q[2-6]_k)\s*-\s*(small|medium|large)\b")


@dataclass(frozen=True)
class QuantResult:
    bits_per_weight: float
    key: str
    source: str
    note: str
    matched: str


def normalize(text: str) -> str:
    """Lower case with every run of other characters made one underscore ("Q4_K - Medium" ->
    "q4_k_medium", "UD-Q4_K_XL" -> "ud_q4_k_xl", "mostly Q4_0" -> "q4_0")."""
    t = text.lower()
    t = _LLAMA_BENCH_SIZE.sub(lambda m: f"{m.group(1)}_{m.group(2)[0]}", t)
    t = re.sub(r"\bmostly\s+", "", t)
    return re.sub(r"[^a-z0-9]+", "_", t).strip("_")


def _table_match(text: str, ref: Reference) -> QuantResult | None:
    haystack = normalize(text)
    best = None  # (length of the alias, row, alias)
    for row in ref.quant_formats:
        for alias in row.aliases:
            needle = normalize(alias)
            longer = best is None or len(needle) > best[0]
            if needle and longer and re.search(_BOUND.format(re.escape(needle)), haystack):
                best = (len(needle), row, alias)
    if best is None:
        return None
    _, row, alias = best
    return QuantResult(row.bits_per_weight, row.key, row.source, row.note, alias)


def _mlx_match(text: str, ref: Reference) -> QuantResult | None:
    haystack = normalize(text)
    if not re.search(_BOUND.format("mlx"), haystack):
        return None
    width = _N_BIT.search(haystack)
    row = ref.quant_format(f"mlx-{width.group(1)}bit") if width else None
    if row is None:
        return None
    return QuantResult(row.bits_per_weight, row.key, row.source, row.note, f"MLX {width.group(1)}bit")


def _stated_bpw(text: str) -> QuantResult | None:
    match = _STATED_BPW.search(text.lower())
    if not match:
        return None
    bits = float(match.group(1) or match.group(2))
    if not 1.0 <= bits <= 32.0:
        return None
    lowered = text.lower()
    key = "exl3" if "exl3" in lowered else "exl2" if "exl2" in lowered else "stated-bpw"
    return QuantResult(bits, key, "stated in the text", f"{bits:g} bits per weight as the name states",
                       match.group(0))


def resolve_quant(text: str | None, *, ref: Reference | None = None) -> QuantResult | None:
    """The quantization a text names, with where its width comes from, or None."""
    if not text or not text.strip():
        return None
    ref = ref or load_reference()
    return _mlx_match(text, ref) or _table_match(text, ref) or _stated_bpw(text)


def match_quant(text: str | None, *, ref: Reference | None = None) -> tuple[float, str] | None:
    """(bits per weight, row key) for a quantization name, or None when it names none.

    Reads GGUF types in any spelling ("Q4_K_M", "q4_k_m.gguf", "Q4_K - Medium", "mostly Q4_0",
    Unsloth's "UD-Q4_K_XL"), FP8, NVFP4, MXFP4, INT8/INT4, AWQ, GPTQ, bitsandbytes NF4, MLX
    "4bit", BF16/FP16/FP32; and a stated width such as EXL2/EXL3 "6.5bpw" (key "exl2", "exl3",
    or "stated-bpw"), which needs no row. A GGUF type name wins over a stated width.
    """
    found = resolve_quant(text, ref=ref)
    return (found.bits_per_weight, found.key) if found else None
