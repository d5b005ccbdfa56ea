"""Roofline: the memory-bandwidth upper bound of plain batch-1 decode speed.

A pure library (standard library only): reference tables in `data/` (accelerators, quantization
formats, models, each row with its source URL) and the functions that read a leaderboard's
hardware, model and quantization names and turn them into a tokens-per-second ceiling.

    from app.audit.roofline import compute_bound
    r = compute_bound(hardware="H100 SXM", gpu_count=1, model="Llama-3.3-70B-Instruct",
                      quantization="FP8")
    r.bound_tps        # 47.86
    r.ratio(120.0)     # 2.51: the claim is 2.5 times what memory bandwidth allows

See docs/roofline.md.
"""

from .bound import Roofline, compute_bound
from .data import Accelerator, ModelRow, QuantFormat, Reference, load_reference
from .entry import batching, bound_for, per_user_decode, ratio_for, roofline_json, speculation
from .hardware import count_from_text, match_accelerator
from .params import parse_params
from .quant import match_quant

__all__ = [
    "Accelerator",
    "ModelRow",
    "QuantFormat",
    "Reference",
    "Roofline",
    "batching",
    "bound_for",
    "compute_bound",
    "count_from_text",
    "load_reference",
    "match_accelerator",
    "match_quant",
    "parse_params",
    "per_user_decode",
    "ratio_for",
    "roofline_json",
    "speculation",
]
