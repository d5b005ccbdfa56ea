"""Facts a page states once for all its figures: the model in the title, "4x RTX PRO 6000 Blackwell",
"TP4/DCP4, MTP-3", "vLLM 0.11.0". Used by the markdown and text parsers for rows that name no model
or hardware themselves (model cards, posts), never to overwrite what a row says.
"""

from __future__ import annotations

import re

from scrapers import phrases
from scrapers.columns import ENGINE_RE, ENGINES, _NUM_WORDS, find_quant, split_engine

_GPU = (r"(?<![\w-])(?:NVIDIA\s+|AMD\s+|Apple\s+)?(?:GeForce\s+)?(?:RTX\s*(?:PRO\s*)?\d{4}\w*(?:\s+(?:Ti|Ada|Blackwell|Max-Q|"
        r"Workstation|Server|Edition))*|(?-i:[HBA])\d{2,3}(?:[A-Za-z]\w*)?(?!\d)(?:\s+(?:SXM\d?|PCIe|NVL|80GB|SXM))*|L40S?|L4|GB\d{3}|"
        r"MI\d{3}X?|(?:Radeon\s+)?RX\s*\d{4}\s*\w*|M\d\s+(?:Max|Ultra|Pro)|"
        r"Intel\s+Arc\s+(?:Pro\s+)?[AB]\d{2,3}|Arc\s+(?:Pro\s+)?[AB]\d{2,3}|Ryzen\s+AI\s+Max\+?\s*\d{3}|"
        r"Radeon\s+\d{4}[SM]?(?:\s+Graphics)?|Tenstorrent\s+\w+|Raspberry\s+Pi\s+\d|Jetson\s+\w+(?:\s+\w+)?|"
        r"Gaudi\s*\d|TPU\s*v\d\w*|Blackwell|Hopper)")
# a table header that is a bare card number ("3090Ti", "4090", "4090D")
BARE_CARD = re.compile(r"^(?:[1-5]0[5-9]0|[1-5]0[6-8]0)(?:\s?Ti|D|\s?Super)?$", re.I)
_HW = re.compile(r"(?:(?P<n>\d+|" + "|".join(_NUM_WORDS) + r")\s*(?:x|×)?\s*)?(?P<hw>" + _GPU + r")"
                 r"(?:\s+\d+\s*GB)?(?:\s+(?:GPUs?|cards?|boards?))?", re.I)
_MODEL = re.compile(r"\b(?!llama\.cpp|llama[-_]?cpp|llama2\.c\b|llama2\.c-|llama-bench|llama-server|llama-cli|llama-simple|llama-run|llama-perplexity|llamafile)((?-i:[A-Z][A-Za-z]{1,12}-[VK]\d+(?:\.\d+)?)(?:-[A-Za-z][\w.]*)*(?![\w.-])|(?:(?-i:[A-Z][A-Za-z0-9]+)(?:[-.][A-Za-z0-9]+)*[-_]\d+(?:\.\d+)?"
                    r"(?-i:[BM])?(?:x\d+(?:\.\d+)?)?[bBmM](?![\w])(?:-[\w.]+)*)|(?:GLM|Qwen|Llama|DeepSeek|Mistral|Mixtral|gpt-oss|Gemma|Kimi|MiniMax|Phi|Hermes|Command[-\s]R\+?|Vicuna|Falcon|MPT|TinyLlama|CodeLlama|Mixtral|Yi|Phi|OLMo|Granite|Nemotron|InternLM|Baichuan|StarCoder)"
                    r"(?:-[\w.]+|\s(?=[\w.]*\d)[\w.]+(?![\w.])(?!\s*(?:tok|t/s|tps|tokens?\b))|[\w.]*)(?:-[\w.]+)*(?:\s+(?-i:[A-Z][a-z]{2,})(?=\s+\d+(?:\.\d+)?[BM](?![\w-])))?"
                    r"(?:\s+(?:\d+(?:\.\d+)?[BM]|v\d+)(?![\w-]))*(?::[\w][\w.-]*)?)",
                    re.I)   # ":8b" is an Ollama tag   # after a space only a token with a digit continues the name ("Llama 3", not "Llama before")


def find_hardware(text: str) -> tuple[int | None, str, str] | None:
    """(count, name, quote) for the first GPU named in ``text``."""
    m = _HW.search(text)
    if not m:
        return None
    n = m.group("n")
    count = None
    if n:
        count = int(n) if n.isdigit() else _NUM_WORDS.get(n.lower())
    name = re.sub(r"^(?:NVIDIA|AMD)\s+", "", m.group("hw").strip(), flags=re.I)
    return count, name, m.group(0).strip()


_FILE_EXT = re.compile(r"(?i)\.(?:py|sh|json|ya?ml|txt|md|cpp|cc|h|cu|toml|log|csv|png|jpg)$|_v\d+\.py")
_HEADING_MODEL = re.compile(r"^\s*([A-Z][\w.-]*(?:\s+[\w.-]+){0,3}?\s+\d+(?:\.\d+)?[BM](?:\s+v\d+(?:\.\d+)?)?)\s+"
                            r"(?:GGUF|GPTQ|AWQ|EXL[23]|MLX|I?Q\d)", re.I)
_IDENT = re.compile(r"^[a-z]+(?:_[a-z]+)+$")
_SIZED_MODEL = re.compile(r"\bthe\s+(\d+(?:\.\d+)?[BMK])[\s-]+param(?:eter)?s?\s+([A-Z][\w.-]+)\s+model\b")


# A speculative decoder's draft head is named after the model it drafts for ("sglang-EAGLE-LLaMA3-
# Instruct-8B", "EAGLE3-Qwen3-8B", "medusa-vicuna-7b"): that name is the proposer, not the served model.
_DRAFT_HEAD = re.compile(r"(?i)(?:^|[^a-z])(?:eagle\d?|medusa|hydra|draft(?:er)?)(?:[^a-z]|$)")


_DRAFT_BEFORE = re.compile(r"(?i)(?:\bdraft(?:er|ing)?(?:[\s_-]+model)?(?:[\s_-]+path)?|--model-draft|-md)\s*[:=]?\s*[`\"']?$")


def draft_head(text: str, start: int, name: str) -> bool:
    """Whether the model name found at ``start`` in ``text`` is a draft head's (its own words or the
    identifier it is cut from say EAGLE, Medusa, Hydra or draft)."""
    i = start
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "-_."):
        i -= 1
    if _DRAFT_BEFORE.search(text[max(0, i - 24):i]):
        return True     # "draft model qwen3-0.6B", "--model-draft X", "drafter: X"
    return bool(_DRAFT_HEAD.search(text[i:start] + name))


def models_in(text: str) -> list[tuple[int, str]]:
    """(offset, name) of every model named in ``text`` (file names, paths, identifiers and draft heads
    left out)."""
    out = []
    for m in _MODEL.finditer(text):
        name = m.group(1).rstrip(".,;:")
        if _FILE_EXT.search(name) or text[m.end():m.end() + 1] in ("/", "_", ".") or _IDENT.match(name):
            continue
        if draft_head(text, m.start(1), name):
            continue
        out.append((m.start(), name))
    return out


def find_model(text: str) -> str | None:
    sm = _SIZED_MODEL.search(text)      # "the 99M parameter TriLM model" -> "TriLM 99M"
    if sm:
        return f"{sm.group(2)} {sm.group(1)}"
    hm = _HEADING_MODEL.match(text)     # "Home 1B V2 GGUF Q4_K_M RPI5": the words before the format
    if hm:
        return hm.group(1)
    for m in _MODEL.finditer(text):
        name = m.group(1).rstrip(".,;:")
        if _FILE_EXT.search(name) or text[m.end():m.end() + 1] in ("/", "_") or _IDENT.match(name):
            continue      # a source file, a path or a code identifier ("llama_print_timings"), not a model
        if draft_head(text, m.start(1), name):
            continue      # the proposer's weights, named after the model they draft for
        return name
    return None


def facts(title: str, intro: str) -> dict[str, tuple[object, str]]:
    """``{field: (value, quote)}`` from a page's title and opening text."""
    out: dict[str, tuple[object, str]] = {}
    for text in (title, intro):
        if not text:
            continue
        model = find_model(text)
        if model and "model" not in out:
            out["model"] = (model, model)
            q = find_quant(model)
            if q:
                out.setdefault("quantization", (q, q))
        q = find_quant(text)
        if q and "quantization" not in out and text is intro:
            out["quantization"] = (q, q)
        hw = find_hardware(text)
        if hw and ("hardware" not in out or len(hw[1]) > len(out["hardware"][0])):
            count, name, quote = hw
            out["hardware"] = (name, name)
            if count:
                out["gpu_count"] = (count, quote)
        m = ENGINE_RE.search(text)
        if m and "engine" not in out:
            eng, ver = split_engine(text[m.start():m.start() + 60])
            out["engine"] = (eng, eng)
            if ver:
                out["engine_version"] = (ver, ver)
        for f, vq in phrases.extract(text, strict=True).items():
            if f in ("n_runs", "concurrency", "prompt", "tokens_stated", "seconds_stated", "steady_low",
                     "steady_high", "prompt_tokens", "acceptance_rate", "acceptance_length",
                     "accepted_tokens", "drafted_tokens", "spread", "gen_tokens"):
                continue   # these belong to one measurement, not to the page
            out.setdefault(f, vq)
    return out


# -- what pins a page's build -----------------------------------------------------------------------
# An engine named with its version ("TensorRT-LLM v0.5.0", "deepsparse v1.5.2", "SGLang 0.5.4"), a
# release version ("New in v0.1.0", ".../releases/download/v0.0.12/"), an image tagged with a version
# or pinned by digest ("intel/vllm:0.10.2-xpu"), a commit link or "commit abc1234", a llama.cpp build
# line. Base images (cuda, ubuntu, python, pytorch) pin nothing of the engine.
_BASE_IMAGES = r"(?:nvidia/cuda|cuda|ubuntu|debian|python|pytorch/pytorch|rocm/dev-ubuntu[\w-]*|alpine|centos)"
_PIN_PATTERNS = [re.compile(p, re.I) for p in (
    r"/commits?/(?P<v>[0-9a-f]{7,40})\b",
    r"\bcommit\s*[:=]?\s*`?(?P<v>[0-9a-f]{7,40})\b",
    r"\bbuild\s*[:=]?\s*(?P<v>[0-9a-f]{7,40}\s*\(\d+\))",   # "build: 1a2b3c4 (6512)", "(build 62061f910 (9591))"
    r"(?<![\w-])(?P<v>b\d{3,6}-[0-9a-f]{7,40})\b",
    r"(?P<v>(?:[a-z0-9][\w.-]*/)+[a-z0-9][\w.-]*(?::[\w][\w.+-]*)?@sha256:[0-9a-f]{12,64})",
    r"(?<![\w/.-])(?!" + _BASE_IMAGES + r":)(?P<v>(?:[a-z0-9][\w.-]*/)+[a-z0-9][\w.-]*:v?\d+\.\d+[\w.+-]*)",
    r"/releases/(?:download|tag)/(?P<v>v?\d+\.\d+(?:\.\d+)?[\w.+-]*)",
    r"(?<!cuda )(?<!driver )(?<!python )(?<!torch )(?<!pytorch )(?<!rocm )(?<!nccl )\b(?:new\s+in|release[d]?|version)"
    r"\s*:?\s*(?P<v>v?\d+\.\d+\.\d+[\w.+-]*)",
)]
_ENGINE_VERSION = None


def page_pin(text: str, limit: int = 2_000_000) -> tuple[str, int, int] | None:
    """The first thing on the page that pins a build: (quote, start, end), or None. Cheap anchors first
    (a dotted number, ``@sha256:``, an image tag), the expensive patterns only around them."""
    global _ENGINE_VERSION
    if _ENGINE_VERSION is None:
        names = sorted(ENGINES + ["TensorRT", "deepsparse", "vllm-ascend", "ExLlamaV2"], key=len, reverse=True)
        _ENGINE_VERSION = re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in names) +
                                     r")[\s:=@-]*(?:version\s*)?v?$", re.I)
    chunk = text[:limit]
    found = []
    for n, m in enumerate(_DOTTED.finditer(chunk)):      # "SGLang 0.5.4", "TensorRT-LLM v0.5.0"
        if n > 5000:
            break
        if _ENGINE_VERSION.search(chunk, max(0, m.start() - 40), m.start()):
            found.append((m.start(), m.group(0), m.end()))
            break
    lines = []      # lines (cut at 4,000 characters) that can hold an image, commit or build
    for ln in chunk.split("\n", 200_000):
        ln = ln[:4000]
        if _CANDIDATE_LINE.search(ln):
            lines.append(ln)
            if len(lines) >= 2000:
                break
    sub = "\n".join(lines)
    for pat in _PIN_PATTERNS[:4] + _PIN_PATTERNS[6:]:     # the patterns with a literal start
        for k, m in enumerate(pat.finditer(sub)):
            a = chunk.find(m.group("v"))
            if a >= 0:
                found.append((a, m.group("v"), a + len(m.group("v"))))
            if k >= 2:
                break
    for anchor, pat in ((_DIGEST_AT, _PIN_PATTERNS[4]), (_TAG_AT, _PIN_PATTERNS[5])):   # images, near their anchor
        for k, am in enumerate(anchor.finditer(sub)):
            if k >= 20:
                break
            m = pat.search(sub, max(0, am.start() - 160), am.end() + 80)
            if m:
                a = chunk.find(m.group("v"))
                if a >= 0:
                    found.append((a, m.group("v"), a + len(m.group("v"))))
                    break
    if not found:
        return None
    found.sort()
    clean = [x for x in found if not _DEV.search(x[1])]   # a release before a dev or nightly build
    a, v, b = (clean or found)[0]
    return v, a, b


_DIGEST_AT = re.compile(r"@sha256:")
_TAG_AT = re.compile(r":v?\d+\.\d")
_DOTTED = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)?[\w.+-]*")
_CANDIDATE_LINE = re.compile(r"(?i)/|\bcommit\b|\bbuild\b|\bb\d{3,6}-|\brelease|\bversion\b|\bnew\s+in\b")


_DEV = re.compile(r"\.dev\d*|nightl|\bdev\b|snapshot|\bmain\b|\bmaster\b|\blatest\b", re.I)
