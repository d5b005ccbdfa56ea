"""Recognisers for known benchmark tool outputs, one module per tool (as TextFSM / ntc-templates keep one
template per command): each knows exactly what its figures mean (decode per user, aggregate output
throughput, prefill, end to end) and claims the text it read, so no generic reader reads it again.

A module offers any of:

    read_text(block, text) -> (drafts, claimed spans)   lines of pasted output in a text or code block
    read_table(block, text) -> drafts | None             a table the tool printed (None: not this tool's)
    read_json(doc, text) -> drafts | None                a saved result document (None: not this tool's)

Adding a tool is adding one module here and its test pages.
"""

from __future__ import annotations

import importlib
import json

MODULES = ("vllm", "sglang", "llamacpp", "llamabench", "llmperf", "ollama", "mlx", "koboldcpp", "jsonmetrics")
_loaded = None


def modules():
    global _loaded
    if _loaded is None:
        _loaded = [importlib.import_module(f"scrapers.tools.{m}") for m in MODULES]
    return _loaded


def read_text(blk, text):
    drafts, claimed = [], []
    for mod in modules():
        fn = getattr(mod, "read_text", None)
        if fn is None:
            continue
        d, c = fn(blk, text)
        drafts += d
        claimed += c
    return drafts, claimed


def read_table(blk, text):
    for mod in modules():
        fn = getattr(mod, "read_table", None)
        if fn is None:
            continue
        d = fn(blk, text)
        if d is not None:
            return d
    return None


def read_code(blk, text):
    """A code block whose whole content one tool owns (a saved JSON result, llama-bench CSV/JSON/SQL)."""
    for mod in modules():
        fn = getattr(mod, "read_code", None)
        if fn is None:
            continue
        d = fn(blk, text)
        if d is not None:
            return d
    body = blk.text.strip()
    if body[:1] in ("{", "[") and len(body) < 5_000_000:
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            return None
        base = text.find(body, blk.start)
        if base < 0:
            return None
        drafts, _tool = read_json(doc, text[base:base + len(body)])
        if drafts:
            for d in drafts:
                d.spans = [(base + a, base + b) for a, b in d.spans] + [(base, base + len(body))]
            return drafts
    return None


def read_json(doc, text):
    for mod in modules():
        fn = getattr(mod, "read_json", None)
        if fn is None:
            continue
        d = fn(doc, text)
        if d is not None:
            return d, mod.__name__.rsplit(".", 1)[-1]
    return None, None
