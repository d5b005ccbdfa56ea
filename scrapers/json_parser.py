"""JSON leaderboard responses.

Finds the list of entries (a top-level list; ``entries``/``data``/``results``/``items``/``leaderboard``/
``rows``/``runs``/``submissions``; else the longest list of objects; else one object), flattens each
object's nested keys (``hardware.gpuName``, ``engineFlags.tensorParallel``) and maps them by meaning
(LocalMaxxing ``hfId``/``tokSOut``/``engineFlags.*``, snake_case names, llama-bench's
``avg_ts``/``samples_ts``/``n_gen``/``build_commit``). Keys nobody knows go to ``extra`` under their
dotted path, verbatim. Quotes are the value as written in the document (number literals exactly).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from scrapers.columns import classify
from scrapers.fields import FIELDS, ParsedEntry, ParseResult
from scrapers.rows import Builder

_LIST_KEYS = ("entries", "data", "results", "items", "leaderboard", "rows", "runs", "submissions", "records")


class _F(float):
    __slots__ = ("lit",)


class _I(int):
    pass


def _pf(s):
    v = _F(s)
    v.lit = s
    return v


def _pi(s):
    v = _I(s)
    v.lit = s
    return v


# exact JSON keys (lower-cased, separators removed) -> canonical field; everything else goes through classify()
_KEYS = {
    "hfid": "model", "modelid": "model", "modeltype": "model", "model": "model", "modelname": "model",
    "gpuname": "hardware", "gpuinfo": "hardware", "gpu": "hardware", "accelerator": "hardware",
    "gpucount": "gpu_count", "numgpus": "gpu_count", "ngpus": "gpu_count",
    "enginename": "engine", "engine": "engine", "runtime": "engine",
    "engineversion": "engine_version", "buildnumber": "engine_version",
    "enginecommit": "engine_commit", "buildcommit": "engine_commit", "commit": "engine_commit",
    "engineimage": "engine_image", "image": "engine_image",
    "toksout": "_tps", "avgts": "_tps", "tokspersecond": "_tps", "tokenspersecond": "_tps", "tps": "_tps",
    "decodetps": "_tps", "outputtps": "_tps", "gentps": "_tps", "throughput": "_tps",
    "stddevts": "spread", "samplests": "samples", "samples": "samples",
    "tensorparallel": "tp", "tensorparallelsize": "tp", "pipelineparallel": "pp", "expertparallel": "ep",
    "specdrafttokens": "draft_tokens", "numspeculativetokens": "draft_tokens", "drafttokens": "draft_tokens",
    "specacceptedtokens": "accepted_tokens", "specacceptancerate": "acceptance_rate",
    "specmeanacceptedlength": "acceptance_length", "specmethod": "spec_method", "specproposer": "proposer",
    "commandsnippet": "command", "command": "command", "cmd": "command",
    "concurrency": "concurrency", "batchsize": "concurrency", "nprompt": "prompt_tokens", "ngen": "gen_tokens",
    "inputtokenlength": "prompt_tokens", "inputlen": "prompt_tokens", "inputlength": "prompt_tokens",
    "meaninputtokens": "prompt_tokens", "outputtokenlength": "gen_tokens", "outputlen": "gen_tokens",
    "outputlength": "gen_tokens", "meanoutputtokens": "gen_tokens", "maxtokens": "gen_tokens",
    "randominputlen": "prompt_tokens", "randomoutputlen": "gen_tokens",
    "outputsample": "output_sample", "notes": "notes", "submitter": "submitter", "submittedby": "submitter",
    "user": "submitter", "username": "submitter", "author": "submitter", "contextlength": "context_length",
    "nctx": "context_length", "maxmodellen": "context_length", "ctx": "context_length",
    "nruns": "n_runs", "repetitions": "n_runs", "createdat": "date", "submittedat": "date", "date": "date",
    "powerlimit": "power", "powerlimitw": "power", "clocks": "clocks", "prompt": "prompt",
}
# keys that are known not to be claims fields (kept in extra without a second look)
_KEEP = {"rank", "id", "vramgb", "promptsha256", "modelfilename", "modelsize", "modelnparams", "nbatch", "nubatch",
         "nthreads", "typek", "typev", "ngpulayers", "testtime", "avgns", "stddevns", "samplesns", "cpuinfo",
         "backends", "verified", "url", "flashattn", "splitmode", "mainGpu", "nomap", "embeddings", "tensorsplit"}
_NORM = re.compile(r"[^a-z0-9]")
_CENTRAL = {"average", "avg", "mean", "median", "p50"}   # the statistic that stands for a distribution


@lru_cache(maxsize=4096)
def _field_for(path: str) -> str | None:
    key = _NORM.sub("", path.rsplit(".", 1)[-1].lower())
    if key in _KEEP:
        return None
    f = _KEYS.get(key)
    if f:
        return f
    col = classify(path.rsplit(".", 1)[-1])
    if col.role == "tps":
        return "_tps"
    if col.role == "steady":
        return "_steady"
    parts = path.split(".")
    if len(parts) >= 2 and key in _CENTRAL and classify(parts[-2]).role == "tps":
        return "_tps"        # "tokens_per_second": {"average": 17.2, "p95": 10.4}: the mean is the figure
    return col.field


def _find_list(doc):
    if isinstance(doc, list):
        return [x for x in doc if isinstance(x, dict)]
    if not isinstance(doc, dict):
        return []
    for k in _LIST_KEYS:
        for key in (k, k.capitalize()):
            v = doc.get(key)
            if isinstance(v, list) and any(isinstance(x, dict) for x in v):
                return [x for x in v if isinstance(x, dict)]
            if isinstance(v, dict):
                inner = _find_list(v)
                if inner:
                    return inner
    best = []
    for v in doc.values():
        if isinstance(v, list) and len(v) > len(best) and all(isinstance(x, dict) for x in v):
            best = v
    if best:
        return best
    if any(_field_for(k) for k in doc):
        return [doc]
    return []


def _flatten(obj: dict, prefix: str = "", out: dict | None = None) -> dict:
    out = {} if out is None else out
    for k, v in obj.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            _flatten(v, path + ".", out)
        else:
            out[path] = v
    return out


def _plain(v):
    if isinstance(v, _F):
        return float(v)
    if isinstance(v, _I):
        return int(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _quote(v, doc: str) -> str | None:
    """The value's text as written in the document."""
    if isinstance(v, (_F, _I)):
        return v.lit
    if isinstance(v, str):
        if v.isascii() and '"' not in v and "\\" not in v and "/" not in v and "\n" not in v:
            return v
        for form in (json.dumps(v, ensure_ascii=False)[1:-1], json.dumps(v)[1:-1], v):
            if form in doc:
                return form
    return None


def _entry(obj: dict, doc: str, llama_bench: bool, where: str) -> ParsedEntry:
    flat = _flatten(obj)
    b = Builder(context=where)
    e = b.entry
    texts = []
    for path, v in flat.items():
        f = _field_for(path)
        if f is None or v is None or v == "" or v == []:
            if f is None and v is not None:
                e.extra[path] = _plain(v)
            continue
        q = _quote(v, doc)
        if f == "_tps":
            if "headline_tps" in e.fields:
                e.extra[path] = _plain(v)
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                b.put("headline_tps", float(v), q)
                b.put("headline_label", path, None)
            else:
                from scrapers.columns import Column
                b.set_tps(Column(path, role="tps"), str(v), label=path)
            continue
        if f == "_steady":
            b.set_steady(path, str(v))
            continue
        kind = FIELDS.get(f)
        if f in ("samples", "per_position_rates") and isinstance(v, list):
            vals = [float(x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)]
            b.put(f, vals, None)
            if f == "samples":
                b.put("n_runs", len(vals), None)
            continue
        if f == "samples" and isinstance(v, int) and not isinstance(v, bool):
            b.put("n_runs", int(v), q)   # LocalMaxxing: "samples": N counts the runs
            continue
        if isinstance(v, bool) or isinstance(v, (list, dict)):
            e.extra[path] = _plain(v)
            continue
        if kind in (int, float) and isinstance(v, (int, float)) and f != "acceptance_rate":
            if kind is int and float(v) != int(v):
                b.warn(path, str(v), "a whole number")
                continue
            b.put(f, kind(v), q)
            continue
        if f == "acceptance_rate" and isinstance(v, (int, float)):
            b.put(f, float(v) if v <= 1 else float(v) / 100.0, q)
            continue
        if isinstance(v, (int, float)) and kind is str:
            b.put(f, str(_plain(v)), q)
            continue
        if f == "engine_commit" and path.lower().endswith("commit"):
            b.put(f, str(v), q)
            continue
        before = set(e.fields)
        b.set_text(f, str(v), path)
        for nf in set(e.fields) - before:
            if nf in e.quotes and q is None:
                e.quotes.pop(nf)   # an escaped string: the decoded text is not in the document verbatim
        if f in ("notes", "command"):
            texts.append(f)
    if llama_bench:
        n_prompt, n_gen = e.fields.get("prompt_tokens"), e.fields.get("gen_tokens")
        for f, n in (("prompt_tokens", n_prompt), ("gen_tokens", n_gen)):
            if n == 0:
                e.fields.pop(f)
                e.quotes.pop(f, None)
        if n_prompt is not None and n_gen is not None:
            test = f"pp{n_prompt}" if not n_gen else (f"tg{n_gen}" if not n_prompt else f"pp{n_prompt}+tg{n_gen}")
            b.put("test", test, None)
        b.put("engine", "llama.cpp", None)
    for f, q in list(e.quotes.items()):
        if q and not q.isascii() and q not in doc:
            e.quotes.pop(f)
    return b.finish()


def parse_json(text: str, *, result: ParseResult | None = None) -> ParseResult:
    result = result or ParseResult(kind="json")
    try:
        doc = json.loads(text, parse_float=_pf, parse_int=_pi)
    except (ValueError, RecursionError) as exc:
        result.warnings.append(f"not valid JSON ({exc}); nothing parsed - check the capture, or add the source "
                               "with the right --kind")
        return result
    items = _find_list(doc)
    if not items:
        result.warnings.append("no list of entries found in the JSON (looked for a top-level list and for "
                               + ", ".join(_LIST_KEYS) + "); nothing parsed")
        return result
    lb = all("avg_ts" in x or "samples_ts" in x for x in items[:5])
    for i, obj in enumerate(items):
        result.entries.append(_entry(obj, text, lb, f"item {i}"))
    return result
