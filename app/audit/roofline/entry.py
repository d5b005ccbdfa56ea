"""The bound of one parsed entry: which figure it applies to, the setup it is computed for, cached.

An entry is a dict of canonical fields (``scrapers/fields.py``). The bound applies to a per-user decode
figure (``phase`` decode or a ``tgN`` test, ``scope`` not aggregate); it is computed from ``hardware``,
``gpu_count`` (else ``tp``), ``model`` and ``quantization``. Computing it is cached on those four
values, so a page of 10,000 rows with a handful of setups computes a handful of bounds.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from .bound import Roofline, compute_bound

SPEC_FIELDS = ("spec_method", "draft_tokens", "proposer")
_TG = re.compile(r"\s*tg\s*\d+\s*", re.IGNORECASE)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return None
    return float(v)


def _count(fields: dict) -> int | None:
    for name in ("gpu_count", "tp"):
        v = fields.get(name)
        if type(v) is int and v >= 1:     # not a bool (a subclass of int)
            return v
    return None


def _text(v: Any) -> str | None:
    return v.strip() or None if isinstance(v, str) else None


@lru_cache(maxsize=4096)
def _bound(hardware: str | None, gpu_count: int | None, model: str | None, quantization: str | None) -> Roofline:
    return compute_bound(hardware=hardware, gpu_count=gpu_count, model=model, quantization=quantization)


def bound_for(fields: dict) -> Roofline:
    """The entry's decode ceiling (``bound_tps`` None and ``missing`` naming what is unknown). Shared and
    cached: do not change the object returned."""
    get = fields.get
    return _bound(_text(get("hardware")), _count(fields), _text(get("model")), _text(get("quantization")))


def is_decode(fields: dict) -> bool:
    phase = fields.get("phase")
    if phase is not None:
        return phase == "decode"
    return bool(_TG.fullmatch(str(fields.get("test") or "")))


def per_user_decode(fields: dict) -> float | None:
    """The figure the bound applies to: the headline of a per-user decode entry, else None."""
    if fields.get("scope") == "aggregate" or not is_decode(fields):
        return None
    tps = _num(fields.get("headline_tps"))
    return tps if tps is not None and tps > 0 else None


def speculation(fields: dict) -> dict:
    """The speculation the entry states: {field: value} of spec_method, draft_tokens, proposer."""
    out = {}
    for name in SPEC_FIELDS:
        v = fields.get(name)
        if v is None or v is False or (isinstance(v, str) and not v.strip()) or (isinstance(v, (int, float)) and v <= 0):
            continue
        out[name] = v
    return out


def batching(fields: dict) -> int | None:
    """The concurrency (batch size or concurrent requests) the entry states, when above 1."""
    c = _num(fields.get("concurrency"))
    return int(c) if c is not None and c > 1 else None


def ratio_for(fields: dict) -> float | None:
    """The per-user decode figure over its bound (None when either is unknown)."""
    figure = per_user_decode(fields)
    if figure is None:
        return None
    return bound_for(fields).ratio(figure)


def roofline_json(fields: dict) -> dict:
    """The ``roofline`` object served with an entry: bound_tps, the ratio of its per-user decode figure
    (None for prefill, end-to-end or aggregate figures), inputs with sources, assumptions, missing,
    version."""
    r = bound_for(fields)
    figure = per_user_decode(fields)
    ratio = r.ratio(figure)
    return {"bound_tps": round(r.bound_tps, 1) if r.bound_tps else None,
            "ratio": round(ratio, 3) if ratio is not None else None,
            "figure": figure, "applies": figure is not None,
            "inputs": r.inputs_copy(), "assumptions": list(r.assumptions), "missing": list(r.missing),
            "version": r.version}
