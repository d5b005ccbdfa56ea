"""Rules about how the run was set up: one run, an unpinned build, a proposer missing from the
command, lossy settings, short shapes, and changed clocks or power."""

from __future__ import annotations

import re

from app.audit.rules.base import num, quote, rule, search, text


@rule("single_run", "medium",
      "One run with no spread: nothing shows how much the figure moves between runs.")
def single_run(f, q, ctx):
    n = num(f.get("n_runs"))
    samples = [s for s in (num(x) for x in (f.get("samples") or [])) if s is not None]
    if n is not None and n <= 1:
        return {"numbers": {"n_runs": int(n)}, "explanation": "The figure comes from a single run.",
                "quotes": [quote(f, q, "n_runs")]}
    extra = f.get("_extra") if isinstance(f.get("_extra"), dict) else {}
    if extra.get("range_high") is not None:
        return None     # "~15-17 tok/s": a stated range is how the figure moved between runs
    if n is None and f.get("spread") is None and len(samples) < 2:
        return {"numbers": {"n_runs": None, "spread": None, "samples": len(samples)},
                "explanation": "No spread, no per-run samples and no run count: the figure may be one run.",
                "quotes": [quote(f, q, "headline_tps")]}
    return None


_UNPINNED = re.compile(r"\bnightl(?:y|ies)\b|(?<=\w)-dev(?=[:@/])|\bdev(?:elopment)?[- ]build\b|\.dev\d*\b|\blocal(?:ly)?[- ]patch(?:es|ed)?\b|"
                       r"\bpatched\b|\bunmerged\b|\bsource patch(?:es)?\b|\b(?:main|master)[- ]branch\b|\bHEAD\b")
_IMAGE_VERSION = re.compile(r":v?\d+\.\d+[\w.+-]*$")     # an image tagged with a version: intel/vllm:0.10.2-xpu
_DIGEST = re.compile(r"@sha256:[0-9a-f]{12,}|\bsha256:[0-9a-f]{12,}", re.I)


_PIN_TEXT = re.compile(
    r"\bbuild[:\s]+\d{3,6}\s*\(\s*[0-9a-f]{7,40}\s*\)|\bb\d{3,5}-[0-9a-f]{7,40}\b|@sha256:[0-9a-f]{12,}|"
    r"\b(?:vllm|sglang|llama\.cpp|tensorrt-llm|trt-llm|tgi|lmdeploy|exllamav2|ollama|mlc-llm)[\s:=v-]+v?\d+\.\d+(?:\.\d+)?"
    r"(?:\.post\d+|rc\d+)?\b|\bcommit\s+[0-9a-f]{7,40}\b", re.I)


def pinned_by(f: dict) -> list[str]:
    """The fields of an entry that pin its build: a version, a commit or build number, an image digest,
    or one of those written in its notes, command or label."""
    pinned = [n for n in ("engine_version", "engine_commit", "page_pin") if text(f, n).strip()]
    if _DIGEST.search(text(f, "engine_image")) or _IMAGE_VERSION.search(text(f, "engine_image")):
        pinned.append("engine_image")
    for name in ("notes", "command", "label"):  # a build number, version string or image digest stated there
        if _PIN_TEXT.search(text(f, name)):
            pinned.append(name)
    return pinned


@rule("unpinned_build", "medium",
      "The build cannot be reproduced: no engine version, commit or image digest, or a nightly, dev or "
      "locally patched build.")
def unpinned_build(f, q, ctx):
    if _DIGEST.search(text(f, "engine_image")):
        return None     # an image pinned by digest is those exact bytes, whatever build it holds
    hit = search(f, ("engine_version", "engine_image", "engine_commit", "notes", "command", "page_pin"), _UNPINNED)
    if hit:
        name, m = hit
        return {"numbers": {"phrase": m.group(0), "field": name},
                "explanation": f'The build is not a release: {name} says "{m.group(0)}".',
                "quotes": [quote(f, q, name, m)]}
    if pinned_by(f):
        return None
    return {"numbers": {"engine": f.get("engine"), "engine_version": None, "engine_commit": None,
                        "engine_image": f.get("engine_image")},
            "explanation": "No engine version, commit or image digest is given, so the build cannot be reproduced.",
            "quotes": [quote(f, q, "engine"), quote(f, q, "engine_image")]}


_STOP = {"the", "and", "with", "draft", "drafter", "proposer", "method", "model", "based", "decoding",
         "speculative", "spec", "tokens", "token", "for", "via", "using"}


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _keywords(name: str) -> list[str]:
    words = [re.sub(r"^\d+", "", _norm(w)) for w in re.split(r"[\s/,()+]+", name)]
    out = []
    for w in words:
        if w.endswith("gram"):
            out.append("gram")
        elif len(w) >= 3 and w not in _STOP:
            out.append(w)
    return out


@rule("proposer_not_in_command", "medium",
      "A proposer or draft method is named in the notes but not in the published command, so the command "
      "alone does not reproduce the figure.")
def proposer_not_in_command(f, q, ctx):
    command = text(f, "command")
    if not command.strip():
        return None
    cmd = _norm(command)
    for field_name in ("proposer", "spec_method"):
        name = text(f, field_name).strip()
        if not name:
            continue
        if field_name == "spec_method" and ("specul" in cmd or "draft" in cmd):
            continue  # a speculative method is configured; engines name methods differently
        keys = _keywords(name)
        if keys and not any(k in cmd for k in keys):
            return {"numbers": {field_name: name, "looked_for": keys},
                    "explanation": f'The {field_name.replace("_", " ")} "{name}" does not appear in the published '
                                   "command line; it must come from an environment setting or an unpublished patch.",
                    "quotes": [quote(f, q, field_name), quote(f, q, "command")]}
    return None


_LOSSY = re.compile(
    r"\blossy\b|\blenient\b|\bexpert[_-]used[_-]count\b|\brelaxed\s+acceptance\b|\btypical\s+acceptance\b|\baccept(?:ance)?[-_ ]threshold\b|"
    r"(?:kv[-_ ]?cache[-_ ]?dtype|cache[-_]type[-_][kv]|-ct[kv])[\s=:]+\"?(?:q[2-6]_\w+|fp4\w*|nvfp4\w*|int4|"
    r"int[2-6]|iq\w+|4[- ]?bit)\b|\bkv\s*(?:cache)?\s*(?:in|at|quanti[sz]ed\s+to)?\s*(?:fp4|nvfp4|int4|q4|4[- ]?bit)\b",
    re.I)
_KV_COLUMN = re.compile(r"^(?:type[_-]?[kv]|cache[_-]?type[_-]?[kv]|kv[_-]?cache[_-]?dtype|ct[kv]|kv[_-]?cache)$", re.I)
_LOW_BIT = re.compile(r"^(?:q[2-6](?:_[01k]\w*)?|iq\w+|fp4\w*|nvfp4\w*|int[2-6]|[2-6][- ]?bit)$", re.I)
_NEGATED = re.compile(r"\b(?:disabled|turned off|not used|not enabled|without|off\b|never)", re.I)


@rule("lossy_setting", "medium",
      "A setting trades correctness for speed (lenient acceptance, KV cache below 8 bit, or what the page calls "
      "lossy): the output is not what the model would produce.")
def lossy_setting(f, q, ctx):
    hit = search(f, ("command", "notes", "quantization", "label"), _LOSSY, negation=_NEGATED)
    if not hit and text(f, "lossy_note").strip():
        note = text(f, "lossy_note")
        return {"numbers": {"lossy_note": note},
                "explanation": f"A quality-for-speed setting: {note}.", "quotes": [quote(f, q, "lossy_note")]}
    kv = text(f, "kv_cache").strip()
    if not hit and kv and _LOW_BIT.match(kv):
        return {"numbers": {"kv_cache": kv}, "explanation": f"The KV cache is stored below 8 bit ({kv}).",
                "quotes": [quote(f, q, "kv_cache")]}
    if not hit:
        extra = f.get("_extra") if isinstance(f.get("_extra"), dict) else {}
        for key, value in extra.items():  # a KV cache type column: llama-bench's type_k / type_v, ...
            if _KV_COLUMN.search(str(key)) and _LOW_BIT.match(str(value).strip()):
                return {"numbers": {"column": key, "value": value},
                        "explanation": f"The KV cache is stored below 8 bit: {key} is {value}.",
                        "quotes": []}
        return None
    name, m = hit
    return {"numbers": {"phrase": m.group(0), "field": name},
            "explanation": f'A lossy setting is in use: {name} says "{m.group(0)}".',
            "quotes": [quote(f, q, name, m)]}


_TG = re.compile(r"\btg\s?(\d+)\b", re.I)
_PP = re.compile(r"\bpp\s?(\d+)\b", re.I)


BURST_TOKENS = 64


@rule("short_shape", "low",
      "The run is short (128 generated tokens or fewer, or 8k context or less): short runs flatter speculative "
      "decoding and warm caches.")
def short_shape(f, q, ctx):
    gen, gen_field = None, "gen_tokens"
    m = _TG.search(text(f, "test"))      # the test's own size wins over a length stated around it
    if m:
        gen, gen_field = float(m.group(1)), "test"
    if gen is None and num(f.get("tokens_stated")) and num(f.get("seconds_stated")):
        gen, gen_field = num(f.get("tokens_stated")), "tokens_stated"   # "100 tokens in 1.822 seconds"
    if gen is None:
        gen = num(f.get("gen_tokens"))
        if gen is not None and gen < 2 and f.get("phase") == "decode":
            gen = None      # "--max-tokens 1" is a prefill probe's setting, not a decode run's length
    ctx_len = num(f.get("context_length"))
    ctx_field = "context_length"
    bench_pp = f.get("phase") == "prefill" and _PP.search(text(f, "test"))
    if ctx_len is None and not bench_pp:  # the run's own context: its prompt and generation
        # (a llama-bench ppN test measures prompt processing at that size; it is not a short run)
        m = _PP.search(text(f, "test"))
        prompt = float(m.group(1)) if m else num(f.get("prompt_tokens"))
        if prompt:      # (llama-bench's "-p 0" states no context)
            ctx_len, ctx_field = prompt + (gen or 0), ("test" if m else "prompt_tokens")
    if ctx_len is None and gen is not None and not bench_pp:
        prompt_text = text(f, "prompt").strip()
        if 0 < len(prompt_text) <= 2000:     # a quoted prompt and a generation length: the context is about
            ctx_len, ctx_field = gen + -(-len(prompt_text) // 3), "prompt"   # their sum (3+ characters a token)
    reasons, numbers, quotes = [], {}, []
    if gen is not None and gen <= 128 and (f.get("phase") != "prefill" or gen_field == "test"):
        # (a prefill figure does not depend on how many tokens were generated after it)
        reasons.append(f"{gen:g} generated tokens")
        numbers["gen_tokens"] = int(gen)
        quotes.append(quote(f, q, gen_field))
    if ctx_len is not None and ctx_len <= 8192:
        reasons.append(f"{ctx_len:g}-token context")
        numbers["context_length"] = int(ctx_len)
        quotes.append(quote(f, q, ctx_field))
    if not reasons:
        return None
    out = {"numbers": numbers, "explanation": "A short shape: " + " and ".join(reasons) + ", with no longer run.",
           "quotes": quotes}
    if (gen is not None and 0 < gen <= BURST_TOKENS and gen_field in ("test", "gen_tokens")
            and f.get("phase") not in ("prefill", "e2e")):
        # a burst (ruleset 2026.12.5): 64 generated tokens or fewer blocks the headline, whatever words were used
        out["severity"] = "high"
        out["explanation"] += f" {gen:g} generated tokens is a burst, 64 tokens or fewer: it blocks the headline."
    return out


_CLOCKS = re.compile(r"jetson_clocks|\bmaxim(?:um|i[sz]ed)\b|\block(?:ed)?\b|\braised\b|\boverclock\w*|\bboost\w*|\bfixed\b|\bpinned\b|\bmax\b|"
                     r"\b\d{3,4}\s*MHz\b|-lgc\b|--lock-gpu-clocks", re.I)
_POWER = re.compile(r"\b\d{1,4}\s*W\b|\bMAXN\w*|\bpower[- ]limit\w*|\bunlocked\b|\braised\b|-pl\b", re.I)
_STOCK = re.compile(r"\b(?:stock|default|unchanged|not changed|unmodified)\b", re.I)
_CMD_CLOCKS = re.compile(r"nvidia-smi\s+(?:-lgc|-pl|--lock-gpu-clocks|--power-limit)|\blocked\s+clocks?\b|"
                         r"\bclocks?\s+locked\b|\bpower\s+limit\s+(?:raised|set)\b", re.I)


@rule("clocks_or_power", "low",
      "Clocks were locked or raised, or the power limit changed: a stock card may not reach the figure.")
def clocks_or_power(f, q, ctx):
    for name, pattern in (("clocks", _CLOCKS), ("power", _POWER), ("rig_clocks", _CLOCKS), ("rig_power", _POWER)):
        value = text(f, name)
        if value.strip() and not _STOCK.search(value):
            m = pattern.search(value)
            if m:
                said = (f'The page states for its rig: "{q.get(name) or value}".' if name.startswith("rig_")
                        else f'The run changed the card\'s {name}: "{value}".')
                return {"numbers": {name: value}, "explanation": said, "quotes": [quote(f, q, name, m)]}
    hit = search(f, ("notes", "command"), _CMD_CLOCKS)
    if hit:
        name, m = hit
        return {"numbers": {"phrase": m.group(0), "field": name}, "quotes": [quote(f, q, name, m)]}
    return None
