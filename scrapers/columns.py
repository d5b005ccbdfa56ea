"""Recognise columns and keys by meaning, not by one spelling.

``classify(header)`` maps a table header or JSON key ("Fastest t/s", "Decode (tokens/s)", "tg128 t/s",
"GPU", "Accelerator", "Thanks to", "tokSOut", "engine_name") to a ``Column``: the canonical field it
holds (see ``scrapers.fields``), or ``role="tps"`` for a throughput column, or ``role="extra"`` for a
column nobody here knows (kept verbatim in ``ParsedEntry.extra``).

Also the value splitters shared by all parsers: ``split_hardware("2x RTX PRO 6000")``,
``split_engine("SGLang 0.5.4")``, ``find_quant("llama 7B mostly Q4_0")``, ``test_sizes("pp512+tg128")``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Column:
    header: str
    field: str | None = None      # canonical field, or None for tps/extra columns
    role: str = "field"           # field | tps | steady | extra
    phase: str = ""               # tps columns: decode | prefill | "" (unspecified)
    test: str | None = None       # tps columns named after a llama-bench test: "pp512", "tg128"
    peak: bool = False            # "Fastest", "Peak", "Max", "Best"


_TPS = re.compile(
    r"tok(?:en)?s?\s*/\s*s(?:ec)?\b|\bt/s\b|\btps\b|tokens?[\s_-]*(?:per|/)[\s_-]*s(?:ec(?:ond)?)?\b|\bthroughput\b|"
    r"\bspeed\b|\btoks?out\b|\btok s ?out\b|\bavg ts\b|\btoks?_?s\b|\bavg_ts\b|\btok/sec\b|\btokspersecond\b|\btokens?/sec\b|"
    r"^(?:pp|tg)\s*/\s*s(?:ec)?$",     # "PP/s", "TG/s": prompt processing and token generation per second
    re.I)
_TEST = re.compile(r"\b((?:pp|tg)\d+(?:\s*\+\s*tg\d+)?)\b", re.I)
_BARE_TEST = re.compile(r"((?:pp|tg)\d{2,6}(?:\s*\+\s*tg\d{2,6})?)(?:\s*\((?:avg|mean)\))?", re.I)
_PEAK = re.compile(r"\b(fastest|peak|max(?:imum)?|best|top)\b", re.I)
_PREFILL = re.compile(r"\b(prefill|prompt|pp\d*|pp|input|prompt processing|pre-?fill|ingest)\b", re.I)
_DECODE = re.compile(r"\b(decode|decoding|gen(?:eration)?|output|tg\d*|out|completion)\b", re.I)

# (pattern, field) in order; the first match wins. Patterns run on the normalised header.
_RULES: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), f) for p, f in [
    (r"^(?:#|no\.?|rank|pos(?:ition)?)$", "_extra"),
    (r"steady", "_steady"),
    (r"accept(?:ance|ed)?\s*(?:length|len)|mean\s*accepted|tokens?\s*per\s*(?:verify|step)", "acceptance_length"),
    (r"spec\s*accepted\s*tokens|accepted\s*tokens", "accepted_tokens"),
    (r"accept", "acceptance_rate"),
    (r"per[\s-]*position", "per_position_rates"),
    (r"draft(?:ed)?\s*(?:tokens?|width|len(?:gth)?|size|k|[\s-]*max)?$|^max[\s-]*draft|^k$|spec\s*(?:draft\s*)?tokens|num\s*speculative\s*tokens|"
     r"speculative\s*tokens|num\s*draft", "draft_tokens"),
    (r"propos|drafter|draft\s*model", "proposer"),
    (r"spec(?:ulative)?(?:\s*(?:method|decoding|mode|type|algo(?:rithm)?))?$|spec\s*method", "spec_method"),
    (r"^(?:gpus|#\s*gpus?|n\s*gpus?|num\s*gpus?|gpu\s*count|gpu\s*num|count|gpus?\s*#|cards|n\s*cards)$", "gpu_count"),
    (r"vram|memory|^mem$|\bram\b", "_extra"),
    (r"^(?:size|params|parameters|ngl|n\s*gpu\s*layers|threads|n\s*threads|type\s*k|type\s*v)$|^model\s*(?:size|params)", "_extra"),
    (r"\bhf\s*id\b|^model|model$|model\s*(?:name|id)|^llm$|^checkpoint\s*name$|model\s*type", "model"),
    (r"gpu\s*info|gpu|hardware|accelerator|^chip|chip$|device|^card$|^system$|^machine$|^rig$|^platform$", "hardware"),
    (r"image|container|docker", "engine_image"),
    (r"commit|^build|build\s*(?:number|no\.?)?$|\bsha\b|^git", "engine_commit"),
    (r"(?:engine|runtime|framework|server)\s*version|^version$|^ver\.?$", "engine_version"),
    (r"engine|runtime|framework|^backend|^server$|^stack$|inference\s*(?:engine|server)", "engine"),
    (r"quant|precision|dtype|^format$|weights|checkpoint|bpw", "quantization"),
    (r"^tp$|tensor[\s-]*parallel", "tp"),
    (r"^pp$|pipeline[\s-]*parallel", "pp"),
    (r"^ep$|expert[\s-]*parallel", "ep"),
    (r"^dcp$|decode[\s-]*context[\s-]*parallel", "dcp"),
    (r"concurren|^batch|batch\s*size|^bs$|^c$|^users$|parallel\s*requests|^streams$", "concurrency"),
    (r"^(?:input|in|isl|prompt)\s*/\s*(?:output|out|osl|gen(?:eration)?)(?:\s*(?:len(?:gth)?s?|tokens|seq(?:uence)?\s*len(?:gth)?s?))?$",
     "io_tokens"),
    (r"prompt\s*tok|input\s*tok|^isl\b|n\s*prompt|prompt\s*len|prefill\s*len|input\s*(?:seq(?:uence)?\s*)?len|^input$|^in$",
     "prompt_tokens"),
    (r"gen(?:eration)?\s*tok|output\s*tok|^osl\b|n\s*gen|gen\s*len|decode\s*len|output\s*(?:seq(?:uence)?\s*)?len|"
     r"^output$|^out$|max\s*(?:new\s*)?tokens|tokens\s*per\s*(?:prompt|request|response)", "gen_tokens"),
    (r"context|^ctx|seq(?:uence)?\s*len|max\s*model\s*len|n\s*ctx", "context_length"),
    (r"^prompt|prompt\s*(?:desc|text)|^workload$|^task$", "prompt"),
    (r"^test$|^bench(?:mark)?$", "test"),
    (r"stddev|std\s*dev|^std$|^±$|spread|^sd$|^error$", "spread"),
    (r"^samples|samples\s*ts|per[\s-]*run|^runs\s*\(", "samples"),
    (r"^runs$|^n$|^n\s*runs|repetitions|^reps$|^trials$|^repeats$", "n_runs"),
    (r"clock", "clocks"),
    (r"power|watt|^tdp$|^pl$", "power"),
    (r"submitt|thanks|^user|^by$|author|contributor|^who$|reporter|^handle$", "submitter"),
    (r"date|^when$|submitted\s*at|created|updated|timestamp", "date"),
    (r"command|^cmd|launch|flags|^args|arguments|how\s*to\s*run|reproduce", "command"),
    (r"note|comment|remark|caveat|detail|^info$|description|^conditions$", "notes"),
    (r"output\s*sample|sample\s*output", "output_sample"),
    (r"^label$|^run$|^config(?:uration)?$|^setup$|^variant$|^name$", "label"),
]]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOISE = re.compile(r"[*`_]+|\s+")


def norm_header(text: str) -> str:
    """"Fastest  **t/s**" -> "fastest t/s"; "gpuName" -> "gpu name"; "build_commit" -> "build commit"."""
    s = _CAMEL.sub(" ", text.strip())
    s = s.replace("_", " ").replace("*", "").replace("`", "")
    return _NOISE.sub(" ", s).strip().lower()


@lru_cache(maxsize=4096)
def classify(header: str) -> Column:
    h = norm_header(header)
    if not h:
        return Column(header, role="extra")
    for pat, f in _RULES[:2]:           # rank and steady come before tok/s
        if pat.search(h):
            return Column(header, role="steady") if f == "_steady" else Column(header, role="extra")
    bare = _BARE_TEST.fullmatch(h)
    if bare:     # "pp512 | tg128" with no unit: llama-bench's test names, whose figures are tokens per second
        test = bare.group(1).replace(" ", "").lower()
        return Column(header, role="tps", phase="prefill" if test.startswith("pp") else "decode", test=test)
    if _TPS.search(h) and not re.search(r"accept|ttft|latency|itl|tpot|\bms\b|watt|power|theoretical|\btargets?\b|"
                                        r"\bexpected\b|\bestimated?\b|\bprojected\b|\bper\s+active\b|\bper\s+(?:b|billion|param)", h):
        t = _TEST.search(h)
        test = t.group(1).replace(" ", "").lower() if t else None
        phase = ""
        if test:
            phase = "prefill" if test.startswith("pp") else "decode"
        elif _PREFILL.search(h):
            phase = "prefill"
        elif _DECODE.search(h):
            phase = "decode"
        return Column(header, role="tps", phase=phase, test=test, peak=bool(_PEAK.search(h)))
    for pat, f in _RULES[2:]:
        if pat.search(h):
            if f == "_extra":
                return Column(header, role="extra")
            if f == "_steady":
                return Column(header, role="steady")
            return Column(header, field=f)
    return Column(header, role="extra")


# --- value splitters --------------------------------------------------------------------------

_NUM_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
              "sixteen": 16, "dual": 2, "single": 1, "quad": 4, "twin": 2}
_HW_COUNT_PRE = re.compile(r"^\s*(\d+|" + "|".join(_NUM_WORDS) + r")\s*(?:x|×|\*)?\s+(?=\S)|^\s*(\d+)\s*[x×*]\s*",
                           re.I)
_HW_COUNT_POST = re.compile(r"(?:\s+[x*]\s*(\d+)|\s*×\s*(\d+)|\s*\((\d+)\s*[x×]?\)|\s*,\s*(\d+)\s*gpus?)\s*$", re.I)


def split_hardware(text: str) -> tuple[int | None, str]:
    """"2x RTX PRO 6000 Blackwell" -> (2, "RTX PRO 6000 Blackwell"); "H100 ×8" -> (8, "H100")."""
    s = text.strip()
    m = _HW_COUNT_PRE.match(s)
    if m:
        raw = (m.group(1) or m.group(2)).lower()
        n = int(raw) if raw.isdigit() else _NUM_WORDS[raw]
        rest = s[m.end():].strip()
        if rest and not rest[0].isdigit():
            return n, rest
    m = _HW_COUNT_POST.search(s)
    if m and m.start() > 0:
        return int(next(g for g in m.groups() if g)), s[:m.start()].strip()
    return None, s


ENGINES = ["ik_llama.cpp", "llama.cpp", "llama-server", "SGLang", "vLLM", "TensorRT-LLM", "TRT-LLM", "ExLlamaV3",
           "ExLlamaV2", "exllamav3", "TabbyAPI", "MLX", "mlx-lm", "Ollama", "LM Studio", "KTransformers", "TGI",
           "MLC-LLM", "MLC LLM", "LMDeploy", "Aphrodite", "llamafile", "koboldcpp", "Transformers", "DeepSpeed-MII",
           "TensorRT LLM", "AutoAWQ", "torchao", "ExLlama", "gpt-fast", "deepsparse", "OpenVINO", "ONNX Runtime",
           "CTranslate2", "PowerInfer", "fastllm", "Llamafile", "LocalAI", "text-generation-inference", "SGL"]
# short names a page uses for an engine, and the engine they name
ENGINE_ALIASES = {"sgl": "SGLang"}
ENGINE_RE = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(e) for e in sorted(ENGINES, key=len, reverse=True))
                       + r")(?![\w-])", re.I)
_VERSION_RE = re.compile(r"^[\s:,]*(?:v|version\s*|ver\.?\s*)?(\d+(?:\.\d+)+[\w.+-]*|b\d{3,6}\b|\d+\.\w+|nightly|main)",
                         re.I)


# A number with a unit after an engine's name is a setting, not its version: "ExLlamaV3 4.0bpw" (bits per
# weight), "llama.cpp 4.5bit", "vLLM 0.9x", "SGLang 1.5GB".
_UNIT = r"(?:bpw|bits?|-bit|gi?b|mi?b|x|×|%|w|tok/s|t/s)"
_NOT_VERSION = re.compile(r"\d\s*" + _UNIT + r"$", re.I)
_UNIT_AFTER = re.compile(r"\s*(?:bpw|bits?|-bit|gi?b|mi?b|%|tok/s|t/s)(?![\w/])", re.I)   # not "x 2", "w/ ..."


def split_engine(text: str) -> tuple[str, str | None]:
    """"SGLang 0.5.4" -> ("SGLang", "0.5.4"); "vLLM v0.11.0" -> ("vLLM", "0.11.0"); "llama.cpp" -> (.., None);
    "1 `llama.cpp@51f311e0`" -> ("llama.cpp", None) (the commit is read by ``engine_at_commit``)."""
    s = text.strip().strip("`")
    m = ENGINE_RE.search(s)
    if m and m.start() > 0 and re.fullmatch(r"[\d\s`*x×]*", s[:m.start()]):
        s = s[m.start():]
    m = ENGINE_RE.match(s)
    if m:
        tail = s[m.end():]
        v = _VERSION_RE.match(tail)
        name = ENGINE_ALIASES.get(m.group(1).lower(), m.group(1))
        if v and not _NOT_VERSION.search(v.group(1)) and not _UNIT_AFTER.match(tail, v.end()):
            return name, v.group(1)
        return name, None
    parts = s.rsplit(None, 1)
    if len(parts) == 2 and re.fullmatch(r"v?\d+(?:\.\d+)+[\w.+-]*", parts[1]) and not _NOT_VERSION.search(parts[1]):
        return parts[0], parts[1].lstrip("v")
    return s, None


QUANT_RE = re.compile(
    r"(?<![\w.])(UD-Q\d_K(?:_[A-Z]+)*|I?Q\d(?:_[A-Z0-9]+)*|NVFP4|MXFP4|FP8|FP4|INT4|INT8|W4A16|W8A8|BF16|F16|FP16|F32|"
    r"FP32|float(?:16|32)|bfloat16|"
    r"AWQ|GPTQ|EXL[23](?:\s*TR3)?|\d(?:\.\d+)?\s?bpw|GGUF)(?![\w])", re.I)


def find_quant(text: str) -> str | None:
    m = QUANT_RE.search(text or "")
    return m.group(1) if m else None


_SIZES = re.compile(r"(pp|tg)(\d+)", re.I)


def test_sizes(test: str) -> tuple[int | None, int | None]:
    """"pp512" -> (512, None); "tg128" -> (None, 128); "pp512+tg128" -> (512, 128)."""
    pp = tg = None
    for kind, n in _SIZES.findall(test or ""):
        if kind.lower() == "pp":
            pp = int(n)
        else:
            tg = int(n)
    return pp, tg


_AT_COMMIT = re.compile(r"@([0-9a-f]{7,40})\b")


def engine_at_commit(text: str) -> str | None:
    """``ktransformers@25c5bdd`` -> ``25c5bdd``."""
    m = _AT_COMMIT.search(text or "")
    return m.group(1) if m else None
