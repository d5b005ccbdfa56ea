"""A saved result document no tool module knows, with several tok/s figures in it (a benchmark script's
JSON: ``"tokens_per_second": {"generation_mean": 284.2, "generation_max": 285.5, "processing_mean":
147.3}``): one entry per figure, its phase and peak read from its dotted key path, the run's model,
hardware, engine, run count and concurrency from the document's other keys. The last module asked: a
known tool's reader, and the leaderboard reader for lists of entries, keep what they know."""

from __future__ import annotations

import re

from scrapers.columns import ENGINE_RE, classify, split_engine
from scrapers.meaning import is_peak, phase_of
from scrapers.tools.common import draft, locate, model_from_path

_TPS_PARENT = re.compile(r"(?i)^(?:tokens?[_ -]?per[_ -]?s(?:ec(?:ond)?)?|tok(?:en)?s?[_ -]?(?:per[_ -]?)?s|tps|"
                         r"throughputs?|speeds?)$")
_NOT_RATE = re.compile(r"(?i)(?:^|_)(?:ms|s|sec|secs|seconds|time|latency|ttft|tpot|itl|count|tokens|n|len|length|"
                       r"std|stddev|stdev|var)$")
_MODEL_KEY = re.compile(r"(?i)^(?:model|model[_-]?(?:id|name|path)|checkpoint)$")   # (a value, not an object)
_HW_KEY = re.compile(r"(?i)(?:^|_)(?:gpu|chip|device|hardware|accelerator)(?:[_-]?name)?$")
_ENGINE_KEY = re.compile(r"(?i)^(?:engine|backend|framework|runtime)(?:[_-]?name)?$")
_RUNS_KEY = re.compile(r"(?i)^(?:num[_-]?runs|n[_-]?runs|runs|iterations|repeats|repetitions)$")
_CONC_KEY = re.compile(r"(?i)^(?:(?:client|max)[_-]?)?concurrency$|^batch[_-]?size$")
_MAX_PATHS = 200


def _walk(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, path + (str(k),))
    else:
        yield path, obj


def _is_rate(path: tuple[str, ...]) -> bool:
    leaf = path[-1]
    if _NOT_RATE.search(leaf) and not re.search(r"(?i)per[_-]?s", leaf):
        return False
    if classify(leaf).role == "tps":
        return True
    return len(path) >= 2 and bool(_TPS_PARENT.match(path[-2]))


def _phase(path: tuple[str, ...]) -> str | None:
    words = " ".join(p.replace("_", " ").replace("-", " ") for p in path[-2:])
    ph = phase_of(words)
    if ph is None and re.match(r"(?i)(?:prompt|processing|prefill|encode)", path[-1]):
        ph = "prefill"      # "processing_mean" under tokens_per_second: prompt processing
    if ph is None and re.search(r"(?i)(?:^|_)total(?:$|_)", path[-1]):
        ph = "e2e"          # "throughput_tokens_per_sec_total": input and output together
    return ph


def _row_lists(obj, path=(), depth=0):
    """Lists of objects below the top level whose items carry tok/s figures (a sweep's rows)."""
    if depth > 4 or not isinstance(obj, dict):
        return
    for k, v in obj.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            if depth and any(_is_rate((kk,)) for x in v[:20] for kk in x):
                yield path + (str(k),), v
        elif isinstance(v, dict):
            yield from _row_lists(v, path + (str(k),), depth + 1)


def read_json(doc, text):
    if not isinstance(doc, dict):
        return None
    lists = [v for v in doc.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    if any(_is_rate((k,)) for v in lists for x in v[:20] for k in x):
        return None      # a list of entries with speeds in them is the leaderboard reader's
    from scrapers.json_parser import _find_list

    found = _find_list(doc)
    if found and found != [doc] and any(_is_rate((k,)) for x in found[:20] for k in x):
        return None      # the leaderboard reader finds these entries itself
    leaves = list(_walk(doc))
    rows = list(_row_lists(doc))
    if rows:      # a sweep: one entry per figure of each row, the rest of the document shared by all
        return _sweep(doc, leaves, rows, text)
    rates = [(p, v) for p, v in leaves if p and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
             and _is_rate(p)][:_MAX_PATHS]
    if not rates or (len(rates) < 2 and not lists):
        return None      # one figure and nothing else: the general reader handles it as before
    # (with lists of telemetry beside it, the general reader would take a list for the entries)
    shared = _shared(leaves)
    out = []
    for path, v in rates:
        loc = locate(text, list(path))
        out.append(_draft(path, v, loc, shared))
    return out


def _draft(path, v, loc, shared: dict):
    d = draft(v, loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "a JSON result",
              phase=_phase(path), headline_label=".".join(path), **shared)
    if is_peak(path[-1].replace("_", " ")):
        d.builder.entry.extra["peak"] = True
    return d


def _sweep(doc, leaves, rows, text):
    shared = _shared(leaves)
    out = []
    pos = 0
    for list_path, items in rows:
        for i, item in enumerate(items[:_MAX_PATHS]):
            own = _shared(list(_walk(item)))
            seen_values = set()
            for path, v in _walk(item):
                if not path or not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0 or not _is_rate(path):
                    continue
                if v in seen_values:
                    continue     # "per_chip" equal to the total on one chip: the same figure again
                seen_values.add(v)
                loc = locate(text, list(path), pos)
                if loc:
                    pos = loc[1]
                out.append(_draft(list_path + (str(i),) + path, v, loc, {**shared, **own}))
    return out or None


_NOT_MODEL_PARENT = re.compile(r"(?i)^(?:cpu|cpus|gpu|gpus|chip|device|accelerators?|hardware|environment|system|os|"
                               r"host|machine|platform|tokenizer|draft|drafter|proposer)$")
_ENGINE_VERSION_KEY = re.compile(r"(?i)^(?:engine|backend|framework)[_-]?version$")


def _shared(leaves) -> dict:
    shared: dict = {}
    for p, v in leaves:
        if not p or v is None or isinstance(v, (dict, list, bool)):
            continue
        leaf = p[-1]
        parent = p[-2] if len(p) >= 2 else ""
        if _MODEL_KEY.match(leaf) and isinstance(v, str) and "model" not in shared and not _NOT_MODEL_PARENT.match(parent):
            shared["model"] = model_from_path(v)     # (a CPU's "model" is no model: cpu.model)
        elif (_HW_KEY.search(leaf) or (leaf.lower() == "name" and _HW_KEY.search(parent))) and isinstance(v, str) \
                and len(v) <= 60 and "hardware" not in shared:
            shared["hardware"] = v       # "gpu_name": "H100", "chip": {"name": "MTT S4000"}
        elif _ENGINE_VERSION_KEY.match(leaf) and isinstance(v, (str, int, float)) and "engine_version" not in shared:
            shared["engine_version"] = str(v)
        elif _ENGINE_KEY.match(leaf) and isinstance(v, str) and 0 < len(v) <= 40 and "engine" not in shared:
            eng, ver = split_engine(v) if ENGINE_RE.search(v) else (v, None)   # the key says it: "vllm-musa" too
            shared["engine"] = eng
            if ver:
                shared["engine_version"] = ver
        elif _RUNS_KEY.match(leaf) and isinstance(v, int) and "n_runs" not in shared:
            shared["n_runs"] = v
        elif _CONC_KEY.match(leaf) and isinstance(v, int) and "concurrency" not in shared:
            shared["concurrency"] = v
    return shared
