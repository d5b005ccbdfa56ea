"""Claims written in words: notes fields, command lines, captions and prose.

``extract(text)`` returns ``{field: (value, quote)}`` where ``quote`` is the exact substring of
``text`` the value was read from. It recognises, among others: "steady state 373-391 tok/s",
"steady-state ~380 t/s", "acceptance 64/1.00", "acceptance rate = 0.564 (282 accepted / 500
generated)", "Accept length: 3.2", "mean acceptance length 5.00", "64 draft tokens", "n-gram proposer",
"32-gram cyclic tiling", "MTP-3", "EAGLE-3", "block draft", "tp 2" / "TP4/DCP4" / "--tensor-parallel-size 2",
"batch 1", "concurrency 8", "single stream", "8k context", "--max-model-len 8192", "403-token prompt",
'prompt "Count from 1 to 50"', "locked clocks", "450 W", "5 runs", "n = 1", "build: 1a2b3c4 (1234)",
"commit abc1234", an image reference with its digest.
"""

from __future__ import annotations

import re

from scrapers.numbers import NUMBER, parse_rate, parse_tokens, to_float

_N = NUMBER
_I = re.I


def _c(p: str) -> re.Pattern:
    return re.compile(p, _I)


_STEADY = _c(r"steady[\s-]*state[^0-9~≈]{0,24}?(?P<a>~|≈)?\s*(?P<lo>" + _N + r")(?:\s*(?:-|–|—|to)\s*~?(?P<hi>"
             + _N + r"))?(?![\d.]*(?:\s*(?:-|–|—|to)\s*~?[\d.]+)?\s*(?:times|x\b|×|fold))(?:\s*(?:tok(?:en)?s?/s(?:ec(?:ond)?)?|t/s|tps|tokens?\s+per\s+second))?")
_ACC_COUNTS = _c(r"accept(?:ance|ed)?\s*(?:rate)?\s*[=:]?\s*(?P<r>" + _N + r")\s*%?\s*\(\s*(?P<a>\d+)\s*accepted\s*/\s*"
                 r"(?P<d>\d+)\s*(?:generated|drafted|proposed)\s*\)")
_ACC_RATIO = _c(r"accept(?:ance|ed)?(?:\s*rate)?\s*[=:]?\s*(?P<k>\d+)\s*/\s*(?P<r>[01](?:\.\d+)?)(?![\d/])")
_ACC_LEN = _c(r"(?:mean\s+)?accept(?:ance|ed)?\s*(?:length|len)\s*(?:\(mean\))?\s*[=:]?\s*(?P<v>" + _N + r")")
_ACC_RATE = _c(r"accept(?:ance)?\s*rate\s*(?P<pct>\(%\))?\s*[=:]?\s*(?P<v>" + _N + r")\s*(?P<pc2>%)?")
_ACC_COUNT_ONLY = _c(r"(?P<a>\d+)\s*accepted\s*/\s*(?P<d>\d+)\s*(?:generated|drafted|proposed)")
_VLLM_ACCEPTED = _c(r"accepted\s+tokens\s*:\s*(?P<v>[\d,]+)")
_VLLM_DRAFTED = _c(r"(?<!num-)(?<!num_)draft\s+tokens\s*:\s*(?P<v>[\d,]+)")
_DRAFT = _c(r"(?:speculative[-_]num[-_]draft[-_]tokens|num[-_]speculative[-_]tokens|spec[-_]draft[-_]tokens|"
            r"draft[-_]tokens|draft[-_]max|draft\s+width|draft\s+tokens?|draft\s+length|--draft)\s*[=:]?\s*(?P<v>\d+)"
            r"|(?P<w>\d+)\s*(?:draft(?:ed)?\s+tokens?|-token\s+draft|\s*tokens?\s+drafted)")
# SGLang's EAGLE depth ("--speculative-num-steps 5", "EAGLE-3 (num_steps=8)"): the rung of its ladder
_STEPS = _c(r"(?:--speculative[-_]num[-_]steps|\bspeculative[-_]num[-_]steps|\bnum[-_]steps)\s*[=:]?\s*(?P<v>\d+)\b")
_MTP = _c(r"\bMTP(?:[-\s]?(?P<n>\d+)(?![\d.]))?\b")
_SPEC = _c(r"\b(?P<m>EAGLE[-\s]?\d?|block[-_\s]draft|Medusa|lookahead\s+decoding|DFlash|suffix\s+decoding|"
           r"prompt[-\s]lookup(?:\s+decoding)?|draft[-\s]model)\b")
# The draft width written right after the method: "EAGLE-3, 6 tokens", "Medusa (4 draft tokens)",
# "EAGLE3 / 5 steps", "EAGLE-3 with k=6 tokens".
_SPEC_WIDTH = _c(r"\s*(?:[,;:/(]\s*|with\s+|at\s+)?(?:k\s*=\s*)?(?P<n>\d{1,3})\s*(?:draft(?:ed)?\s+|speculative\s+)?"
                 r"(?:tokens?|toks?|steps?)\b")
_PROPOSER = _c(r"\b(?P<p>\d+-gram(?:\s+(?:cyclic|tiling|lookup|cache|replay))*|n-?gram)\b")
_PAR = {
    "tp": _c(r"(?:--tensor[-_]parallel[-_]size|--tp[-_]size|--tp|-tp|\btensor[\s-]parallel(?:ism)?(?:\s+size)?|"
             r"\bTP)\s*[=:]?\s*(?P<v>\d+)\b"),
    "pp": _c(r"(?:--pipeline[-_]parallel[-_]size|--pp[-_]size|--pp|-pp|\bpipeline[\s-]parallel(?:ism)?(?:\s+size)?|"
             r"\bPP(?=\s*[=:]|\s))\s*[=:]?\s*(?P<v>\d+)\b(?![\s-]*t/s)"),   # never llama-bench's test "pp512"
    "ep": _c(r"(?:--expert[-_]parallel[-_]size|--ep[-_]size|--ep|\bexpert[\s-]parallel(?:ism)?(?:\s+size)?|\bEP)"
             r"\s*[=:]?\s*(?P<v>\d+)\b"),
    "dcp": _c(r"(?:--decode[-_]context[-_]parallel[-_]size|--dcp[-_]size|--dcp|-dcp|\bDCP)\s*[=:]?\s*(?P<v>\d+)\b"),
}
_CONC = _c(r"(?:--max[-_]concurrency|--concurrency|--batch[-_]size|\bconcurrency|\bbatch(?:\s+size)?|\bbs|"
           r"--max[-_]num[-_]seqs)\s*[=:]?\s*(?P<v>\d+)\b"
           r"|\b(?P<one>single[\s-](?:stream|request|user)|one\s+request|1\s+concurrent\s+request)\b"
           r"|\bC\s*=\s*(?P<c>\d+)\b|(?P<n>\d+)\s+concurrent\s+(?:requests|users|streams)")
_CTX = _c(r"(?:--max[-_]model[-_]len|--context[-_]length|--ctx[-_]size|-c|\bcontext(?:\s+length)?|\bctx)\s*[=:]?\s*"
          r"(?P<v>\d+(?:,\d{3})*\s*[kK]?)\b|(?P<w>\d+(?:,\d{3})*\s*[kK]?)(?:\s|-)?(?:token\s+)?(?:context|ctx)\b")
_PROMPT_TOK = _c(r"(?P<v>\d[\d,]*)[\s-]*token\s+prompt|prompt\s+(?:of\s+)?(?P<w>\d[\d,]*)\s+tokens")
_PROMPT = re.compile(r"(?:prompt(?:ed)?|asking\s+(?:the\s+model|it)\s+to|asked\s+(?:the\s+model\s+)?to)\**\s*[:=]?\s*\**\s*"
                     r"[\"“'‘](?P<p>[^\"”’\n]{3,240})[\"”’]", _I)
_CLOCKS = _c(r"\bjetson_clocks\b|\bmaxim(?:um|i[sz]ed)\s+clocks?(?:\s+speeds?)?|\b(?:locked\s+clocks?|clocks?\s+(?:locked|raised|pinned)(?:\s+(?:at|to)\s+\d+\s*MHz)?|"
             r"(?:raised|pinned|fixed)\s+clocks?|--lock-gpu-clocks\s*[= ]\s*\d+(?:,\d+)?|\d{3,4}\s*MHz\s+(?:core\s+)?clocks?)")
_POWER = _c(r"(?:power\s*(?:limit|cap)?\s*(?:of|at|=|:)?\s*|-pl\s*|\bat\s+)?(?P<v>\d{2,4}(?:,\d{3})?\s?W)\b(?!/)")
_POWER_STRICT = _c(r"(?:power[\s-]*(?:limit(?:ed)?|cap(?:ped)?)\s*(?:of|at|to|=|:)?\s*|-pl\s*)(?P<v>\d{2,4}(?:,\d{3})?\s?W)\b"
                   r"|(?P<w>\d{2,4}\s?W)\s+power[\s-]*(?:limit|cap)|\b(?:software|firmware|driver)[\s-]*(?:limited|capped)\s+"
                   r"(?:to|at)\s+(?P<x>\d{2,4}(?:,\d{3})?\s?W)\b|\bTGP\s*(?:of|=|:)?\s*(?P<y>\d{3,4}\s?W)\b|"
                   r"(?P<z>\d{3,4}\s?W)\s+TGP\b|(?P<j>\d{1,3}\s?W)\s+power\s+mode\b|\b(?P<m>MAXN(?:_SUPER)?)\b")
# (Jetson boards: "25W power mode", "MAXN_SUPER" are power modes chosen for the run)
_KV_CACHE = _c(r"(?:--kv[-_]cache[-_]dtype|kv[-_]cache[-_]dtype|--cache[-_]type[-_][kv]|(?<![\w-])-ct[kv]|"
               r"cache[-_]type[-_][kv]|\bKV[- ]cache(?:\s+(?:dtype|type|quantization|precision))?)\s*[=:]?\s*[\"'`]?"
               r"(?P<v>(?:nv)?fp[48]\w*|q[2-8]_\w+|int[48]|bf16|f16|fp16|e[45]m\d\w*|auto)\b")
_GEN_TOK = _c(r"(?:--random[-_]output(?:[-_]len)?|--(?:sharegpt|prefix[-_]repetition|sonnet|fixed)[-_]output[-_]len|"
              r"--output[-_]len|--max[-_]tokens|--max[-_]new[-_]tokens|--n[-_]predict|(?<![\w-])-n|\boutput\s+(?:length|len|tokens)|"
              r"\b(?:random_)?output_len)\s*[=:]?\s*(?P<v>\d{1,6})\b"
              r"|(?P<w>\d{1,6})\s*(?:new\s+|generated\s+|output\s+|completion\s+)tokens\b"
              r"|(?P<x>\d{1,6})\s+tokens\s+(?:per|each)\s+(?:prompt|request|response|answer|query)\b"
              r"|\btokens\s+per\s+(?:prompt|request|response)\s*[:=|]\s*(?P<z>\d{1,6})\b"
              r"|\b(?:output|generat(?:e|es|ing|ed)|decod(?:e|es|ing))\s+(?:for\s+|of\s+)?(?P<y>\d{1,6})\s*(?:new\s+)?tokens\b")
_IN_TOK = _c(r"(?:--random[-_]input(?:[-_]len)?|--(?:sharegpt|prefix[-_]repetition|sonnet|fixed)[-_]input[-_]len|--input[-_]len|"
             r"(?<![\w-])-p|\binput\s+(?:length|len|tokens)|\b(?:random_)?input_len)\s*[=:]?\s*"
             r"(?P<v>\d{1,7})\b(?!\s*[\"'])")
_RUNS = _c(r"\b(?P<v>\d+)\s+(?:runs|repetitions|reps|trials|repeats)\b|\bn\s*=\s*(?P<n>\d+)\b|best\s+of\s+(?P<b>\d+)"
           r"|(?:-r|--repetitions)\s+(?P<r>\d+)\b"
           r"|\b(?P<one>(?:a|one)\s+(?:single\s+)?(?:timed|test|benchmark)\s+(?:request|run)|single\s+(?:timed\s+)?run|ran\s+once)\b")
_BUILD = _c(r"\bbuild\s*[:=]\s*(?P<c>[0-9a-f]{7,40})\s*\((?P<n>\d+)\)")
_BTAG = _c(r"(?<![\w-])b(?P<n>\d{3,6})-(?P<c>[0-9a-f]{7,40})\b")
_COMMIT = _c(r"\b(?:commit|sha|rev(?:ision)?|@)\s*[:=]?\s*(?P<c>[0-9a-f]{7,40})\b(?!:)")   # (not root@1a2b3c4d:)
_IMAGE = _c(r"(?P<i>(?:[a-z0-9][\w.-]*/)+[a-z0-9][\w.-]*:[\w][\w.+-]*(?:@sha256:[0-9a-f]{8,64}…?)?|"
            r"(?:[a-z0-9][\w.-]*/)+[a-z0-9][\w.-]*@sha256:[0-9a-f]{8,64})")
_TOKS_SECS = _c(r"(?P<t>\d[\d,]*(?:\.\d+)?)\s+(?:completion\s+|output\s+|generated\s+)?tokens\s+in\s+(?P<s>\d+(?:\.\d+)?)"
                r"\s*(?:s\b|sec\b|secs\b|seconds\b)")
_SUBMITTER = _c(r"(?:thanks\s+to|submitted\s+by|contributed\s+by|reported\s+by|courtesy\s+of)\s+(?P<v>@?[\w.-]+)")


def _put(out: dict, field: str, value, quote: str) -> None:
    if value is not None and field not in out:
        out[field] = (value, quote)


def extract(text: str | None, *, strict: bool = False) -> dict[str, tuple[object, str]]:
    """Fields stated in a short text. ``strict`` (for long prose) demands more context for bare figures."""
    out: dict[str, tuple[object, str]] = {}
    if not text:
        return out
    low = text.lower()
    if "steady" in low:
        m = _STEADY.search(text)
        if m:
            lo = to_float(m.group("lo"))
            hi = to_float(m.group("hi")) if m.group("hi") else lo
            _put(out, "steady_low", lo, m.group(0))
            _put(out, "steady_high", hi, m.group(0))
    if "accept" in low:
        m = _ACC_COUNTS.search(text)
        if m:
            _put(out, "acceptance_rate", parse_rate(m.group("r")), m.group(0))
            _put(out, "accepted_tokens", int(m.group("a")), m.group(0))
            _put(out, "drafted_tokens", int(m.group("d")), m.group(0))
        m = _ACC_RATIO.search(text)
        if m:
            _put(out, "acceptance_rate", float(m.group("r")), m.group(0))
        m = _ACC_LEN.search(text)
        if m:
            _put(out, "acceptance_length", to_float(m.group("v")), m.group(0))
        m = _ACC_RATE.search(text)
        if m:
            v = to_float(m.group("v"))
            if v is not None and (m.group("pct") or m.group("pc2")):
                v = v / 100.0
            elif v is not None and v > 1:
                v = v / 100.0 if v <= 100 else None
            _put(out, "acceptance_rate", v, m.group(0))
        m = _ACC_COUNT_ONLY.search(text)
        if m:
            _put(out, "accepted_tokens", int(m.group("a")), m.group(0))
            _put(out, "drafted_tokens", int(m.group("d")), m.group(0))
        m = _VLLM_ACCEPTED.search(text)
        if m:
            _put(out, "accepted_tokens", int(m.group("v").replace(",", "")), m.group(0))
            m2 = _VLLM_DRAFTED.search(text)
            if m2:
                _put(out, "drafted_tokens", int(m2.group("v").replace(",", "")), m2.group(0))
    if "draft" in low:
        for m in _DRAFT.finditer(text):
            if "drafted_tokens" in out and out["drafted_tokens"][1] in m.group(0):
                continue
            _put(out, "draft_tokens", int(m.group("v") or m.group("w")), m.group(0))
            break
    if "steps" in low and ("eagle" in low or "spec" in low):
        m = _STEPS.search(text)
        if m:
            _put(out, "draft_tokens", int(m.group("v")), m.group(0))
    m = _MTP.search(text)
    if m:
        _put(out, "spec_method", "MTP", m.group(0))
        if m.group("n"):
            _put(out, "draft_tokens", int(m.group("n")), m.group(0))
    m = _SPEC.search(text)
    if m:
        raw = m.group("m")
        val = re.sub(r"[-_\s]+", " ", raw).strip()
        if raw.lower().startswith("eagle"):
            val = "EAGLE" + ("-" + raw[-1] if raw[-1].isdigit() else "")
        elif val.lower() in ("block draft",):
            val = "block draft"
        _put(out, "spec_method", val, raw)
        w = _SPEC_WIDTH.match(text, m.end())
        if w and "draft_tokens" not in out and 0 < int(w.group("n")) <= 64:
            _put(out, "draft_tokens", int(w.group("n")), text[m.start():w.end()])
    if "gram" in low:
        m = _PROPOSER.search(text)
        if m:
            _put(out, "proposer", m.group("p"), m.group("p"))
    for f, pat in _PAR.items():
        m = pat.search(text)
        if m:
            _put(out, f, int(m.group("v")), m.group(0))
    m = _CONC.search(text)
    if m:
        v = m.group("v") or m.group("c") or m.group("n")
        _put(out, "concurrency", int(v) if v else 1, m.group(0))
    if "ctx" in low or "context" in low or "model-len" in low or "model_len" in low or "-c " in low:
        m = _CTX.search(text)
        if m:
            _put(out, "context_length", parse_tokens((m.group("v") or m.group("w")).replace(" ", "")), m.group(0))
    if "prompt" in low:
        m = _PROMPT_TOK.search(text)
        if m:
            _put(out, "prompt_tokens", int((m.group("v") or m.group("w")).replace(",", "")), m.group(0))
    if "prompt" in low or "ask" in low:
        m = _PROMPT.search(text)
        if m:
            _put(out, "prompt", m.group("p"), m.group("p"))
    if "clock" in low or "mhz" in low:      # "jetson_clocks", "locked clocks", "1980 MHz clocks"
        m = _CLOCKS.search(text)
        if m:
            _put(out, "clocks", m.group(0), m.group(0))
    m = (_POWER_STRICT if strict else _POWER).search(text)
    if m:
        v = next(g for g in m.groups() if g)
        _put(out, "power", v, v)
    if "cache" in low or "-ct" in low:
        m = _KV_CACHE.search(text)
        if m:
            _put(out, "kv_cache", m.group("v"), m.group(0))
    m = _GEN_TOK.search(text)
    if m:
        _put(out, "gen_tokens", int(next(g for g in m.groups() if g)), m.group(0))
    m = _IN_TOK.search(text)
    if m:
        _put(out, "prompt_tokens", int(m.group("v")), m.group(0))
    m = _RUNS.search(text)
    if m:
        _put(out, "n_runs", 1 if m.group("one") else int(m.group("v") or m.group("n") or m.group("b") or m.group("r")),
             m.group(0))
    if "build" in low:
        m = _BUILD.search(text)
        if m:
            _put(out, "engine_commit", m.group("c"), m.group("c"))
            _put(out, "engine_version", m.group("n"), m.group("n"))
    m = _BTAG.search(text)
    if m:      # llama.cpp release tags: b7522-849d02110
        _put(out, "engine_version", "b" + m.group("n"), "b" + m.group("n"))
        _put(out, "engine_commit", m.group("c"), m.group("c"))
    m = _COMMIT.search(text)
    if m:
        _put(out, "engine_commit", m.group("c"), m.group("c"))
    if "/" in text and ":" in text:
        m = _IMAGE.search(text)
        if m and not m.group("i").lower().startswith(("http", "www.")):
            _put(out, "engine_image", m.group("i"), m.group("i"))
    if "tokens in" in low:
        m = _TOKS_SECS.search(text)
        if m:
            _put(out, "tokens_stated", to_float(m.group("t")), m.group(0).split(" in ")[0])
            _put(out, "seconds_stated", float(m.group("s")), m.group(0)[m.group(0).index(m.group("s"), len(m.group("t"))):])
    m = _SUBMITTER.search(text)
    if m:
        _put(out, "submitter", m.group("v"), m.group("v"))
    return out
