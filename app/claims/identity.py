"""Stable names for parsed claims: the ``entry_key`` of a row within its source and the ``recipe_id``
shared by every run of one configuration.

Both are hashes of normalised field values, so they come out the same on every re-crawl and
re-parse, whatever the page's capitalisation, spacing or GPU naming ("RTX PRO 6000 Blackwell" and
"rtx pro 6000" name the same card).

- ``entry_key``: the identifying fields below plus an ordinal among rows with the same identity, in
  page order (the seed's ladder has two runs at draft 20: ordinals 0 and 1).
- ``recipe_id``: ``"r-"`` + 12 hex digits over the configuration *without* the draft width, the
  headline, the notes, the steady state or anything else that varies between the runs of a ladder.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any, Iterable

# Fields that tell one row of a page from another and are unlikely to be edited in place. A label is
# hashed without its numbers and a concurrency of 1 like an unstated one, so editing a figure or
# deleting the notes a "batch 1" was read from keeps the entry's identity.
IDENTITY_FIELDS = (
    "model", "hardware", "gpu_count", "engine", "quantization", "draft_tokens", "test",
    "concurrency", "submitter", "label",
)

# The configuration of a recipe: what was run, without the draft width. Only fields that a page gives
# for every row of a ladder: the details a page states once, in one row's notes (context length,
# prompt, clocks, power, proposer, method, engine version), would split the headline rung from its
# ladder, so they stay out. Concurrency counts only above 1 (unstated and 1 are both one stream).
RECIPE_FIELDS = (
    "model", "hardware", "gpu_count", "engine", "quantization", "tp", "pp", "ep", "dcp", "concurrency",
    "test", "submitter",
)
# Also in the key (ruleset 2026.12.2), each only when the row states it, so rows without them keep
# their recipe ids: the phase (decode / prefill / e2e) and scope (per_user / aggregate) of the figure,
# whether speculation is on, the offload (`ngl`) and parallel slots read from the row, and the row's
# label without its numbers (a scenario or configuration name; "draft 8" and "draft 12" stay one ladder).
# The speculative method is left out: pages often name it once, in one row's notes, and it would split
# the headline rung from its ladder; speculation on/off is stated by every rung's draft width.
SCOPE_FIELDS = ("phase", "scope", "label")

# Words that do not change which accelerator is meant.
_HARDWARE_NOISE = {
    "nvidia", "geforce", "blackwell", "hopper", "ampere", "lovelace", "gpu", "gpus",
    "edition", "workstation", "graphics", "card",
}
_SPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^0-9a-z.+]+")
_COUNT_PREFIX = re.compile(r"^\s*\d+\s*[x×]\s*", re.I)


def norm_text(value: Any) -> str | None:
    if value is None:
        return None
    text = _SPACE.sub(" ", str(value)).strip().lower()
    return text or None


def norm_model(value: Any) -> str | None:
    text = norm_text(value)
    if text is None:
        return None
    text = text.rsplit("/", 1)[-1]  # "zai-org/GLM-5.3-Flash" and "GLM-5.3-Flash" are one model
    text = re.sub(r"[\s_]+", "-", text)
    return text.strip("-") or None


# A quantization or packaging written as the tail of a model name ("-AWQ", "-FP8", "-Q4_K_M", "-GGUF",
# "-4.0bpw", "-bnb-4bit"): moved out of the model key (into the recipe's quantization when the row states none)
_QUANT = (r"(?:i?q[1-8](?:_[0-9a-z]{1,2}){0,3}|awq|gptq(?:[-_]int[48])?|fp8(?:[-_]dynamic)?|fp16|bf16|f16|f32|"
          r"int[48]|w[48]a(?:8|16)|nvfp4|mxfp4|fp4|exl2|exl3|gguf|mlx|hqq|marlin|\d(?:\.\d+)?[-_]?bpw|[248][-_]?bits?|"
          r"bnb[-_]4bits?)")
_QUANT_TAIL = re.compile(rf"(?:[\s_.\-]+|^)\(?({_QUANT})\)?$", re.I)
_PACKAGING = {"gguf", "mlx", "exl2", "exl3"}     # a file format, not a precision: dropped, never a quantization
_LETTER_DOT = re.compile(r"\.(?!\d)|(?<!\d)\.")   # a dot that is not a decimal point ("30B.A3B", not "3.1")
# "-Instruct" (and Gemma's "-it" after a size) at the very end: the chat tune of the same weights' architecture
_INSTRUCT_TAIL = re.compile(r"-(?:instruct|(?<=\db-)it)$")


@lru_cache(maxsize=65536)
def split_model(value: Any) -> tuple[str | None, str | None]:
    """``(model_key, quantization tail)`` of a model name (docs/claims.md, "Model keys")."""
    text = norm_text(value)
    if text is None:
        return None, None
    text = text.rsplit("/", 1)[-1]      # the organisation: "Qwen/Qwen3-30B-A3B" is "Qwen3-30B-A3B"
    quant = None
    while True:
        m = _QUANT_TAIL.search(text)
        if not m or m.start() == 0:
            break
        tail = m.group(1)
        if tail.replace("-", "").replace("_", "") not in _PACKAGING and quant is None:
            quant = tail
        text = text[:m.start()]
    text = _LETTER_DOT.sub("-", text)
    text = re.sub(r"[\s_\-]+", "-", text).strip("-")
    text = _INSTRUCT_TAIL.sub("", text)
    return (text or None), quant


def model_key(value: Any) -> str | None:
    """The model a name means, for grouping recipes and looking them up: case, separators (space, ``_``,
    ``-``, a dot between letters), the organisation prefix, a quantization tail and a final ``-Instruct``
    do not matter. ``Qwen3-30B-A3B``, ``qwen3 30B.A3B`` and ``Qwen/Qwen3-30B-A3B-Instruct`` are
    ``qwen3-30b-a3b``; ``Qwen3-30B-A3B-Instruct-2507`` and ``Qwen3-30B-A3B-Base`` are not."""
    return split_model(value)[0]


def norm_hardware(value: Any) -> str | None:
    text = norm_text(value)
    if text is None:
        return None
    text = _COUNT_PREFIX.sub("", text)  # "2x RTX PRO 6000" -> the count lives in gpu_count
    words = [w for w in _NON_WORD.split(text) if w and w not in _HARDWARE_NOISE]
    return " ".join(words) or None


def norm_token(value: Any) -> str | None:
    """Engines, quantizations, tests: case, spaces and punctuation do not matter ("llama.cpp" = "LlamaCPP")."""
    text = norm_text(value)
    if text is None:
        return None
    return re.sub(r"[^0-9a-z]+", "", text) or None


def norm_number(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        f = float(value)
        return int(f) if f.is_integer() else round(f, 6)
    return norm_text(value)


def norm_label(value: Any) -> str | None:
    """Row labels and claim sentences without their numbers: editing a figure keeps the entry."""
    text = norm_text(value)
    if text is None:
        return None
    return re.sub(r"[~≈]?\d[\d.,]*", "#", text)


_NORMALISERS = {
    "label": norm_label,
    "phase": norm_token,
    "scope": norm_token,
    "model": norm_model,
    "hardware": norm_hardware,
    "engine": norm_token,
    "quantization": norm_token,
    "test": norm_token,
    "spec_method": norm_token,
    "engine_version": lambda v: (norm_text(v) or "").lstrip("v") or None,
}


@lru_cache(maxsize=65536)
def _normalise_cached(name: str, value: Any) -> Any:
    fn = _NORMALISERS.get(name)
    if fn is not None:
        return fn(value)
    return norm_number(value)


def normalise(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "concurrency" and value in (0, 1):  # unstated and 1 both mean one stream
        return None
    try:
        return _normalise_cached(name, value)
    except TypeError:  # unhashable (a list): not cached
        pass
    fn = _NORMALISERS.get(name)
    if fn is not None:
        return fn(value)
    return norm_number(value)


# A row's rank, position or index ("1", "#2", "3.", "4th") is never part of its identity: it changes when
# another row moves. Columns headed like this stay out of keys too (unless named with `source add --key`).
_ORDINAL = re.compile(r"^\s*(?:#|no\.?\s*|nr\.?\s*)?\d{1,5}(?:\.|st|nd|rd|th)?\s*$", re.I)
RANK_HEADER = re.compile(r"^\s*(?:#|no\.?|nr\.?|rank(?:ing)?|pos\.?|position|place|index|idx|row)\s*$", re.I)


def ordinal_label(value: Any) -> bool:
    """A label that is only a rank or position number."""
    return value is not None and bool(_ORDINAL.match(str(value)))


def key_values(fields: dict, key_columns: Iterable[str] | None) -> dict:
    """The values of the columns a source names as its rows' identity (``caveat source add --key COL``),
    looked up by header (any case) among the row's other columns, or by field name."""
    if not key_columns:
        return {}
    extra = {str(k).strip().lower(): v for k, v in (fields.get("_extra") or {}).items()}
    out = {}
    for col in key_columns:
        name = str(col).strip().lower()
        value = extra.get(name, fields.get(name))
        if value is None and (name == "label" or RANK_HEADER.match(name)):
            value = fields.get("label")     # a first column read as the row's label
        out[f"k_{name}"] = norm_text(value)
    return out


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def _digest(payload: dict) -> str:
    blob = _ENCODER.encode(payload)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def identity_of(fields: dict, key_columns: Iterable[str] | None = None) -> str:
    """The ordinal-free identity hash of one parsed row (a rank label left out; the source's key
    columns, when it names some, added)."""
    ident = {k: normalise(k, fields.get(k)) for k in IDENTITY_FIELDS}
    if ordinal_label(fields.get("label")):
        ident["label"] = None
    ident.update(key_values(fields, key_columns))
    return _digest(ident)


def entry_keys(rows: Iterable[dict], key_columns: Iterable[str] | None = None) -> list[str]:
    """``entry_key`` for each row, in page order: identity hash (32 hex) + ``:`` + ordinal."""
    seen: dict[str, int] = {}
    keys = []
    key_columns = list(key_columns or ())
    for fields in rows:
        ident = identity_of(fields, key_columns)[:32]
        n = seen.get(ident, 0)
        seen[ident] = n + 1
        keys.append(f"{ident}:{n}")
    return keys


PROPOSAL_FIELDS = ("model", "test", "phase", "headline_tps")


def proposal_keys(rows: Iterable[dict], model_version: Iterable[str | None]) -> list[str]:
    """``entry_key`` of the learned reader's proposals: ``p`` + 31 hex over the figure, its model, test and
    phase and the version of the model that proposed it, + ``:`` + ordinal. Never a key of the rules' rows
    (those are all hex), so a proposal never takes a read entry's place; another model's proposal is
    another proposal (its own entry, its own ``chosen_by``)."""
    seen: dict[str, int] = {}
    keys = []
    for fields, version in zip(rows, model_version):
        ident = "p" + _digest({**{k: normalise(k, fields.get(k)) for k in PROPOSAL_FIELDS}, "by": version})[:31]
        n = seen.get(ident, 0)
        seen[ident] = n + 1
        keys.append(f"{ident}:{n}")
    return keys


def _scenario_label(label: str) -> bool:
    """A row or group label that names a configuration ("fp8 KV", "Estonia suite", "c2, 5 runs"), not
    the sentence a prose figure came from: short, few words, no sentence punctuation."""
    text = " ".join(label.split())
    return 0 < len(text) <= 48 and len(text.split()) <= 6 and not re.search(r"[.!?]\s|[.!?]$|\n", label.strip())


_PARAM = re.compile(r"^[a-z][a-z0-9.]*(?:[-_][a-z0-9]+)*$")    # a setting's name: draft-min, n_ubatch, grpsz, rocm
# single words that name a setting of the row (never a link, a status or a score)
_PARAM_WORDS = {"version", "kernel", "backend", "mode", "method", "grpsz", "act", "split", "fa", "ngl", "mmap", "ubatch",
                "batch", "threads", "sm", "precision", "dtype", "arm", "variant", "build"}
_NOT_PARAM = re.compile(r"^(?:rank|pos|position|no|id|index|row|n|#)$|link|url|href|source|status|verif|vote|like|star|"
                        r"comment|remark|note|user|author|submit|ref|time|date|ms$|_ms|mem|vram|size|ttft|tpot|itl|latency|speed|ratio|rate|score|acc|"
                        r"sample|std|avg|mean|median|p\d\d|tps|tok|throughput|model|gpu|cpu|build|commit", re.I)


def _column_name(fields: dict) -> bool:
    """The row's label is the figure's own column header ("python", "TS", "Decode tokens/s"): the
    workload or metric the column measures, not a configuration of the row."""
    label, head = norm_text(fields.get("label")), norm_text(fields.get("headline_label"))
    return bool(label) and label == head


_RESTATED = re.compile(r"\b(?:c|bs|batch(?:\s+size)?|concurrency|conc)\s*=?\s*\d+\b|\b\d+\s+(?:runs?|repeats?|trials?|samples?)\b|"
                       r"\bn\s*=\s*\d+\b|[,;]")


# MLPerf scenarios and the common serving-benchmark datasets: the load a configuration was run under
_WORKLOADS = {"server", "offline", "single stream", "singlestream", "single-stream", "multistream", "multi-stream",
              "interactive", "sharegpt", "random", "sonnet", "burstgpt", "hf", "prefix repetition", "chat", "coding",
              "summarization", "reasoning"}


def _recipe_label(fields: dict) -> str | None:
    """A scenario label keeps its numbers ("6 experts V0.2.0" is not "8 experts V0.2.1"), except on a
    speculative row, where the numbers may be the draft width that the ladder varies ("draft 8",
    "draft 12" stay one ladder); a figure written into the label never counts."""
    text = norm_text(fields.get("label"))
    if text:     # words that restate fields already in the key (concurrency, run count) name nothing more
        text = _RESTATED.sub(" ", text).strip(" ,;:/|()-")
        kv = norm_text(fields.get("kv_cache"))
        if kv and text == kv:
            return None     # the row is named after its KV cache arm, which the key holds
    if not text or text in _WORKLOADS:
        return None     # a benchmark scenario or dataset names the load, not the configuration
    if fields.get("draft_tokens") or fields.get("spec_method") or fields.get("acceptance_rate") is not None:
        return norm_label(text)
    h = fields.get("headline_tps")
    if text and isinstance(h, (int, float)):
        text = text.replace(f"{h:g}", "#")
    return text or None


def recipe_key(fields: dict, key_columns: Iterable[str] | None = None) -> dict | None:
    """The normalised configuration of a row, or None when it names neither model nor hardware. Its model is
    the ``model_key``; a quantization written as the model name's tail is the quantization when the row
    states none."""
    key = {k: normalise(k, fields.get(k)) for k in RECIPE_FIELDS + SCOPE_FIELDS}
    mkey, quant = split_model(fields.get("model")) if fields.get("model") is not None else (None, None)
    key["model"] = mkey
    if key.get("quantization") is None and quant:
        key["quantization"] = norm_token(quant)
    if ordinal_label(fields.get("label")):
        key["label"] = None     # a rank or position: which row it is today, not what was run
    elif key.get("label") and (not _scenario_label(str(fields.get("label"))) or _column_name(fields)):
        key["label"] = None  # a sentence of prose, or the column's workload: not a row's configuration
    elif key.get("label"):
        key["label"] = _recipe_label(fields)
    if key["model"] is None and key["hardware"] is None:
        return None
    if fields.get("draft_tokens") or fields.get("spec_method") or fields.get("acceptance_rate") is not None:
        key["speculative"] = True
    kv = norm_token(fields.get("kv_cache"))
    if kv:       # the KV cache dtype is a configuration (an fp8 arm and an nvfp4 arm are two recipes)
        key["kv_cache"] = kv
    extra = fields.get("_extra") or {}
    for name in ("ngl", "n_gpu_layers", "parallel", "np"):
        if name in extra:
            key[f"x_{name}"] = norm_number(extra[name])
    for name, value in extra.items():     # the row's own parameter columns (draft-min, draft-p-min, n_ubatch)
        n = str(name).strip().lower()
        v = str(value)
        if n not in ("workload", "peak") and (_PARAM.match(n) or n in _PARAM_WORDS) and \
                (n in _PARAM_WORDS or not _NOT_PARAM.search(n)) and len(v) <= 32 and "://" not in v and f"x_{n}" not in key and isinstance(value, (str, int, float)):
            key[f"x_{n}"] = norm_number(value)
    key.update(key_values(fields, key_columns))
    return {k: v for k, v in key.items() if v is not None}


def recipe_id_for(key: dict) -> str:
    return "r-" + _digest(key)[:12]
