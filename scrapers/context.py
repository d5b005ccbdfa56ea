"""Scoped context: a fact applies from the narrowest place that states it.

Scopes, narrowest first: the entry's own row label and column header, the table's caption (and, for a
table inside a code block, the code block's caption), the innermost section (its heading and its text
before the block), each enclosing section in turn, and the page (title and intro). A fact never crosses
into a sibling section. Words such as "baseline", "without speculation", "no MTP" or "MTP off" in a
narrow scope cancel the speculation facts of every wider scope. The page title's model applies only
where nothing narrower names one. Per-measurement facts (concurrency, runs, prompt) come only from the
entry's own words, its caption and its innermost section.
"""

from __future__ import annotations

import re
from functools import lru_cache

from scrapers import pagefacts, phrases
from scrapers.blocks import Block
from scrapers.meaning import concurrency_of

WIDE_FIELDS = ("model", "hardware", "gpu_count", "engine", "engine_version", "engine_commit", "engine_image",
               "quantization", "tp", "pp", "ep", "dcp", "spec_method", "draft_tokens", "proposer")
NARROW_FIELDS = ("concurrency", "n_runs", "prompt")
# Conditions of the run a section or a page states once for all its figures: clocks, power limit, KV
# cache dtype, context and generation lengths (a figure's own words still win).
CONDITION_FIELDS = ("clocks", "power", "kv_cache", "context_length", "gen_tokens", "prompt_tokens")
SPEC_FIELDS = ("spec_method", "draft_tokens", "proposer")
SHAPE_FIELDS = ("gen_tokens", "prompt_tokens")     # per request (a server's context length is not)
CANCEL = re.compile(r"\bbaseline\b|\bwithout\s+(?:spec|MTP|draft|eagle)|\bno[\s-](?:spec|MTP|draft|eagle)|"
                    r"\bMTP[\s:=-]*(?:off|disabled|none)\b|\bspec(?:ulative)?(?:\s+decoding)?[\s:=-]*(?:off|disabled|none)\b|"
                    r"\bw/o\s+(?:spec|MTP)|\bvanilla\b|\bstandard\s+(?:decoding|sglang|vllm)|\bautoregressive\b|"
                    r"\bnon[\s-]spec|\bplain\s+decod", re.I)
_MAX_SCOPE_TEXT = 4000
_MAX_CODE_TEXT = 6000
_MAX_PAGE_SCAN = 400_000     # characters of a page scanned for rig-wide conditions
MODEL_ARG = _MODEL_ARG = re.compile(r"(?:(?:\bMODEL_NAME|\bMODEL_ID|--model(?:-path)?|--served-model-name|"
                        r"(?<=\s)-m(?=\s+\S*\.(?:gguf|ggml|bin)\b)|\bollama\s+run)[= ]|(?im:^[ \t]*model[_ ]name[ \t]*[=:]))"
                        r"\s*[\"']?"
                        r"([a-z][\w.-]*:[\w.-]*\d[\w.-]*|(?:\$?[\w.-]*/)*[\w.-]*\d[\w.-]*|(?<=run )[a-z][\w.-]*(?::[\w.-]+)?)")
# ("model_name = mistral:7b" on a line of its own: a benchmark script printing the model of the runs below)
_ENGINE_LINE = re.compile(r"(?m)^\s*Engine:\s*([A-Za-z][\w.-]*(?:\s+v?\d[\w.+-]*)?)|(?<=\s)Engine:\s*([A-Za-z][\w.-]*\s+v?\d[\w.+-]*)")
_HF_TITLE = re.compile(r"^[\w.-]+/[\w.-]*\d[\w.-]*$")
_SETUP = re.compile(r"(?i)^(?:test\s+|bench(?:mark)?\s+|hardware\s+|software\s+|standard\s+)?(?:settings?|setup|environment|"
                    r"configuration|config|hardware|system|test\s+bed|testbed|specs?|methodology|method|conditions|"
                    r"test|how\s+(?:we|it\s+was)\s+(?:tested|measured|run))\b")
def _bare(title: str) -> str:
    """A heading without its emoji and markers: "🎯 Test Configuration" -> "Test Configuration"."""
    return re.sub(r"^[^\w]+", "", title.strip())


_DIGEST_IMAGE = re.compile(r"(?:[a-z0-9][\w.-]*/)+[a-z0-9][\w.-]*(?::[\w][\w.+-]*)?@sha256:[0-9a-f]{12,64}")
_LINKS = re.compile(r"!?\[[^\]]*\]\([^)]*\)|https?://\S+|\S+\.(?:png|jpe?g|gif|svg|webp)\b|"
                    r"[\w.-]+/[\w.-]+:[\w.@:…-]+")   # links, image files, container images name no model
# "**Model:** Qwen/Qwen3-0.6B", "Hardware: NVIDIA A100", "GPU: 2x H100": key-value facts of an intro
_KV = re.compile(r"(?:^|\n|\s-\s|\|)\s*\**\s*(?:Target\s+|Base\s+|Main\s+)?(Model|Hardware|GPU|GPUs|Accelerator|Engine|Backend|Framework|Quantization|"
                 r"Quant)\s*\**\s*:\s*\**\s*([^\n|*]{2,80})", re.I)
_KV_FIELDS = {"model": "model", "hardware": "hardware", "gpu": "hardware", "gpus": "hardware",
              "accelerator": "hardware", "engine": "engine", "backend": "engine", "framework": "engine",
              "quantization": "quantization", "quant": "quantization"}


@lru_cache(maxsize=1024)
def kv_facts(text: str) -> tuple:
    """Only the ``Model: X`` / ``GPU: Y`` / ``--model Z`` lines of a log or config (code block) text."""
    full = facts(text)
    keep = {m.group(1).lower() for m in _KV.finditer(text[:_MAX_SCOPE_TEXT])}
    fields = {_KV_FIELDS[k] for k in keep} | ({"model"} if _MODEL_ARG.search(text[:_MAX_SCOPE_TEXT]) else set())
    if "hardware" in fields:
        fields.add("gpu_count")
    if "engine" in fields:
        fields.add("engine_version")
    return tuple(x for x in full if x[0] in fields)


@lru_cache(maxsize=4096)
def facts(text: str, narrow: bool = False) -> tuple:
    """``((field, value, quote), ...)`` stated in ``text`` (cached: the same section serves many rows)."""
    if not text:
        return ()
    out: dict[str, tuple] = {}
    for m in _KV.finditer(text[:_MAX_SCOPE_TEXT]):
        f = _KV_FIELDS[m.group(1).lower()]
        v = re.sub(r"<[^>]+>", "", m.group(2)).strip().rstrip(".,;")
        v = re.sub(r"\s*\([^()]*\s[^()]*\)\s*$", "", v)   # "X (28 layers)" -> "X"; "X (int4)" stays
        if f == "model":   # "Model: Llama 3.1 70B, Q4_K_M quantization": a model's name has no ", "
            v = re.split(r"[,;]\s", v, maxsplit=1)[0].strip()
        if not v:
            continue
        if f == "hardware":
            hw = pagefacts.find_hardware(v)
            if hw:
                out.setdefault("hardware", (hw[1], hw[1] if hw[1] in v else v))
                if hw[0]:
                    out.setdefault("gpu_count", (hw[0], hw[2]))
            else:
                name = re.split(r"\s+\d+\s*Gi?B?\b|\s*[,(;]", v)[0].strip()
                if name and len(name) <= 40:
                    out.setdefault("hardware", (name, name))
            continue
        if f == "engine":
            from scrapers.columns import split_engine
            eng, ver = split_engine(v)
            out.setdefault("engine", (eng, eng if eng in v else v))
            if ver:
                out.setdefault("engine_version", (ver, ver))
            continue
        out.setdefault(f, (v, v))
    if "/" in text and ":" in text:
        img = phrases.extract(text[:_MAX_SCOPE_TEXT]).get("engine_image")
        if img:
            out.setdefault("engine_image", img)
    plain = _LINKS.sub(" ", text[:_MAX_SCOPE_TEXT])
    for m in _MODEL_ARG.finditer(text[:_MAX_SCOPE_TEXT]):
        from scrapers.tools.common import model_from_path

        name = model_from_path(m.group(1))
        out.setdefault("model", (name, name if name in text else m.group(1)))
        break
    for f, vq in pagefacts.facts("", plain).items():
        if f in WIDE_FIELDS:
            out.setdefault(f, vq)
    stated = phrases.extract(text[:_MAX_SCOPE_TEXT], strict=True)
    for f in CONDITION_FIELDS:
        if f in stated and not (f == "context_length" and isinstance(stated[f][0], int) and stated[f][0] < 256):
            out.setdefault(f, stated[f])  # (a "context" of 2 is a flag's argument misread, not a length)
    if narrow:
        for f, vq in stated.items():
            if f in ("n_runs", "prompt"):
                out.setdefault(f, vq)
        c = concurrency_of(text[:_MAX_SCOPE_TEXT])
        if c:
            out.setdefault("concurrency", (c[0], c[1]))
    return tuple((f, v, q) for f, (v, q) in out.items())


_KV_HEAD = re.compile(r"^(?:kv[\s_-]*cache(?:[\s_-]*(?:dtype|type|arm|precision))?|kv[\s_-]*dtype|cache[\s_-]*type[\s_-]*[kv]?|type[_\s]?k)$")
_KV_LINE = re.compile(r"(?i)(?:--kv[-_]cache[-_]dtype|kv[-_\s]cache(?:[-_\s](?:dtype|type))?)\s*[=:|]?\s*[`\"']?([\w.-]{2,32})")
_KV_DEFAULT = re.compile(r"(?i)`?([\w.-]{2,32})`?\s*\((?:the\s+)?(?:shipped\s+|stock\s+)?default\b")
_DTYPE = re.compile(r"(?i)(?<![\w-])((?:nv)?fp[48](?:_[a-z0-9]+)*|e[45]m\d\w*|q[2-8]_[0-9a-z_]+|int[48]|bf16|f16|fp16|turbo\d\w*)(?![\w-])")


@lru_cache(maxsize=4096)
def conditions(text: str) -> dict:
    """The run conditions (``CONDITION_FIELDS``) a text states, ``{field: (value, quote)}``."""
    stated = phrases.extract(text, strict=True)
    return {f: stated[f] for f in CONDITION_FIELDS + ("prompt",) if f in stated and
            not (f == "context_length" and isinstance(stated[f][0], int) and stated[f][0] < 256)}


def cancels(text: str) -> bool:
    return bool(CANCEL.search(text or ""))


_NEAR = 600   # characters before a table read as its nearest scope in a long section
_MODEL_HEADING = re.compile(r"(?i)^\**model\**\s*[:=]\s*`?([\w./:-]*\w)`?\s*$")
# the line a GitHub issue, PR or discussion page opens with: its repository names no model of the thread
REPO_LINE = re.compile(r"^[\w.-]+/[\w.-]+\s+·\s+(?:issue|pull request|pr|discussion)\b[^\n]*$", re.I)


class Page:
    """The scopes of one segmented document."""

    def __init__(self, text: str, blocks: list[Block]):
        self.text = text
        self.blocks = blocks
        self.headings = {i: b for i, b in enumerate(blocks) if b.kind == "heading"}
        self.title, self.intro, self.intro_span = self._title_intro()
        m = _DIGEST_IMAGE.search(text)       # a digest-pinned image anywhere on the page pins its runs
        self.image = (m.group(0), (m.start(), m.end())) if m else None
        self._section_text: dict[int, list[tuple[int, str, int, int]]] = {}
        setup_ids = {i for i, b in self.headings.items() if _SETUP.match(_bare(b.text))}
        for i, b in enumerate(blocks):
            if b.kind == "text":
                self._section_text.setdefault(b.section_id, []).append((b.start, b.text, b.start, b.end))
            elif b.kind == "table" and b.section_id in setup_ids and b.table is not None:
                # a setup section's table ("| Target Model | meta-llama/Llama-3.2-3B |") reads as "key: value" lines
                lines = [f"{r[0].value}: {r[1].value}" for r in b.table.rows if len(r) >= 2 and r[0].value]
                self._section_text.setdefault(b.section_id, []).append((b.start, "\n".join(lines), b.start, b.end))
        self._code_models: dict[int, list[tuple[int, str, int, int]]] = {}
        self._section_code: dict[int, list[tuple[int, str, int, int]]] = {}
        self._rig: dict | None = None
        self._kv: list[str] | None = None
        self._kv_default: str | None = None
        for b in blocks:
            if b.kind == "code":
                # a command or config in a code block states the run's conditions (--max-tokens 128,
                # --kv-cache-dtype fp8, -c 4096) for the figures of its section
                self._section_code.setdefault(b.section_id, []).append((b.start, b.text[:_MAX_CODE_TEXT], b.start, b.end))
                em = _ENGINE_LINE.search(b.text)      # a tool's "Engine: vLLM 0.11.2..." line in its log
                if em:
                    a = b.start + b.text.find(em.group(0))
                    self._code_models.setdefault(b.section_id, []).append(
                        (b.start, None, a, a + len(em.group(0)), em.group(1) or em.group(2)))
                m = _MODEL_ARG.search(b.text)
                if m:
                    from scrapers.tools.common import model_from_path

                    name = model_from_path(m.group(1))
                    a = b.start + b.text.find(m.group(0))
                    self._code_models.setdefault(b.section_id, []).append((b.start, name, a, a + len(m.group(0)), None))
        self._parents: dict[int, list[int]] = {}
        self._setup: dict[int, list[int]] = {}      # parent heading -> its "Settings"/"Setup" child headings
        # a "### Model: X" heading followed by sibling headings ("### Number of GPUs: 1"): X is their model
        # until the next "Model:" heading at that level or a heading above it
        self._model_heading: dict[int, tuple[str, int, int]] = {}
        current: dict[int, tuple[str, int, int]] = {}
        stack: list[tuple[int, int]] = []
        for i, b in self.headings.items():
            for lvl in [lv for lv in current if lv > b.level]:
                del current[lvl]
            mh = _MODEL_HEADING.match(b.text.strip())
            if mh:
                current[b.level] = (mh.group(1), b.start, b.end)
            elif b.level in current:
                self._model_heading[i] = current[b.level]
            while stack and stack[-1][0] >= b.level:
                stack.pop()
            self._parents[i] = [s[1] for s in reversed(stack)]
            if stack and _SETUP.match(_bare(b.text)):
                self._setup.setdefault(stack[-1][1], []).append(i)
            stack.append((b.level, i))

    def condition_scopes(self, blk: Block | None) -> list[tuple[str, tuple[int, int]]]:
        """The code blocks (commands, configs, logs) around ``blk`` whose stated conditions apply to it:
        those of its own section (the nearest before it first, then after it), then each enclosing
        section's. A sibling section's commands never apply."""
        if blk is None or blk.section_id < 0:
            return []
        out: list[tuple[str, tuple[int, int]]] = []
        chain = [blk.section_id] + self._parents.get(blk.section_id, [])
        for n, hid in enumerate(chain):
            codes = [c for c in self._section_code.get(hid, []) if c[2] != blk.start]
            before = sorted((c for c in codes if c[0] < blk.start), key=lambda c: -c[0])
            after = [c for c in codes if c[0] > blk.start] if n == 0 else []
            if n == 0:      # the words right under a table ("decoding for 256 tokens with a prompt ...")
                after += [c for c in self._section_text.get(hid, []) if blk.end <= c[0] <= blk.end + 2000][:2]
            out += [(t, (a, b)) for (_p, t, a, b) in before + after]
        return out

    def kv_terms(self) -> list[str]:
        """The KV cache dtypes the page names ("| KV cache | `nvfp4_ds_mla` (shipped default) and `fp8` |",
        "--kv-cache-dtype fp8", a "KV cache" column), so a row, heading or log named after one
        ("Estonia — nvfp4_ds_mla log", "| nvfp4_ds_mla | 67.9 |") is read as running with it."""
        if self._kv is not None:
            return self._kv
        terms: list[str] = []
        budget = _MAX_PAGE_SCAN
        for b in self.blocks:
            if budget <= 0:
                break
            if b.kind == "table" and b.table is not None:
                heads = [c.value.strip().lower() for c in b.table.header]
                for j, h in enumerate(heads):
                    if _KV_HEAD.match(h):
                        terms += [r[j].value for r in b.table.rows[:200] if j < len(r)]
                for r in b.table.rows[:200]:
                    if len(r) >= 2 and _KV_HEAD.match(r[0].value.strip().lower()):
                        terms += [c.value for c in r[1:]]
                continue
            if b.kind in ("text", "code"):
                chunk = b.text[:8000]
                budget -= len(chunk)
                for m in _KV_LINE.finditer(chunk):
                    terms.append(m.group(1))
        out = []
        for t in terms:
            for w in _DTYPE.findall(t):
                if w.lower() not in (x.lower() for x in out):
                    out.append(w)
            d = _KV_DEFAULT.search(t)
            if d and self._kv_default is None and _DTYPE.fullmatch(d.group(1)):
                self._kv_default = d.group(1)    # "`nvfp4_ds_mla` (shipped default)": the arm a run uses unless it says
        self._kv = out[:12]
        return self._kv

    def rig(self) -> dict:
        """Conditions the page states for its whole rig, once: a power limit or locked clocks ("two of
        the four cards are software-limited to 300 W", "clocks locked", "TGP 1000W"), and each condition
        field that only one value is ever given for anywhere on the page. ``{field: (value, quote, span)}``."""
        if self._rig is not None:
            return self._rig
        seen: dict[str, dict] = {}
        budget = _MAX_PAGE_SCAN
        for b in self.blocks:
            if b.kind not in ("text", "code", "heading") or budget <= 0:
                continue
            chunk = b.text[:8000]
            budget -= len(chunk)
            for f, (v, q) in conditions(chunk).items():
                if f in CONDITION_FIELDS:
                    i = chunk.find(q) if q else -1
                    span = (b.start + i, b.start + i + len(q)) if i >= 0 else (b.start, b.end)
                    seen.setdefault(f, {}).setdefault(str(v).lower(), (v, q, span))
        out = {}
        rig = [(next(iter(vals.values()))[2][0], f) for f, vals in seen.items() if f in ("clocks", "power")]
        first_rig = min(rig)[1] if rig else None     # the page's first word on its rig: a report that
        for f, vals in seen.items():                 # contrasts the authors' cards with the entry's says it first
            if f in ("clocks", "power"):
                if f == first_rig:
                    out["rig_" + f] = next(iter(vals.values()))
            elif f == "kv_cache" and len(vals) == 1:
                out[f] = next(iter(vals.values()))
            # (lengths stated once on a page are not taken page-wide: a README's example command is
            # not the shape of every table on it)
        self._rig = out
        return out

    def _title_intro(self) -> tuple[str, str, tuple[int, int]]:
        title, intro, span = "", [], (0, 0)
        for b in self.blocks:
            if b.kind == "heading" and not title and not intro:
                title = b.text
                continue
            if b.kind == "heading" and (title or intro):
                break
            if b.kind == "text" and sum(len(x) for x in intro) < 3000:
                body = b.text
                if not title and not intro:
                    first = body.strip().split("\n", 1)[0].strip()
                    if REPO_LINE.match(first):
                        body = body.replace(first, " " * len(first), 1)   # "owner/repo · issue #12": no title
                        first = ""
                    if first and len(first) < 200:
                        title = first
                if body.strip():
                    intro.append(body)
                span = (span[0] if span[1] else b.start, b.end)
            if b.kind in ("table", "code") and (title or intro):
                break
        if sum(len(x) for x in intro) < 100:
            # no opening paragraph (a thread whose title is followed by metadata): the first section's
            # text (the original post) introduces the page
            first = next((i for i, b in enumerate(self.blocks) if b.kind == "heading" and b.text != title), None)
            if first is not None:
                level = self.blocks[first].level
                for b in self.blocks[first + 1:]:
                    if b.kind == "heading" and b.level <= level:
                        break
                    if b.kind == "text" and sum(len(x) for x in intro) < 3000:
                        intro.append(b.text)
                        span = (span[0] if span[1] else b.start, b.end)
        return title, " ".join(intro)[:3000], span

    def scopes(self, blk: Block | None) -> list[tuple[str, tuple[int, int], bool]]:
        """(text, span, narrow) for each scope around ``blk``, narrowest first (the page last)."""
        out: list[tuple[str, tuple[int, int], bool]] = []
        if blk is None:
            return [(self.title + " " + self.intro, self.intro_span, False)]
        if blk.caption:
            out.append((blk.caption, (blk.caption_start, blk.start), True))
        if blk.table is not None and blk.table.title:
            out.append((blk.table.title, (blk.start, blk.end), True))
        sid = blk.section_id
        chain = ([sid] + self._parents.get(sid, [])) if sid >= 0 else []
        first = True
        for hid in chain:
            h = self.headings.get(hid)
            texts = [t for (pos, t, a, b) in self._section_text.get(hid, []) if pos < blk.start]
            body = " ".join(texts)
            if len(body) > _MAX_SCOPE_TEXT:
                body = body[:_MAX_SCOPE_TEXT // 2] + " " + body[-_MAX_SCOPE_TEXT // 2:]
            span = (h.start, blk.start) if h else (0, blk.start)
            cm = [c for c in self._code_models.get(hid, []) if c[0] < blk.start] or self._code_models.get(hid, [])
            models = [c for c in cm if c[1]]
            if models:  # the model a command in this section serves (--model …/X-Q4_K_M.gguf): exact, so first
                out.append(("MODEL_NAME=" + models[-1][1], (models[-1][2], models[-1][3]), False))
            engines = [c for c in self._code_models.get(hid, []) if c[4]]
            if engines:
                out.append(("Engine: " + engines[-1][4], (engines[-1][2], engines[-1][3]), False))
            if first and blk.kind == "table" and len(body) > _NEAR + 200:
                # a long section (a thread of comments under one title): the words right before a table
                # name its run before the section's opening does ("Unless llama.cpp is broken with Qwen3
                # MoE ... | Machine | Engine |" under a first post about Llama-3.3-70b)
                a = max(span[0], blk.start - _NEAR)
                near = self.text[a:blk.start]
                cut = near.rfind("\n\n", 0, len(near) // 2)
                if cut > 0:
                    a, near = a + cut + 2, near[cut + 2:]
                out.append((near, (a, blk.start), False))
            if hid in self._model_heading:
                name, ma, mb = self._model_heading[hid]
                out.append(("MODEL_NAME=" + name, (ma, mb), False))
            out.append(((h.text if h else "") + " . " + body, span, first))
            for sid2 in self._setup.get(hid, []):
                # a "Settings" / "Setup" / "Environment" section states the setup of its later siblings
                h2 = self.headings[sid2]
                if sid2 in chain or h2.start > blk.start:
                    continue
                body2 = " ".join(t for (_p, t, _a, _b) in self._section_text.get(sid2, []))[:_MAX_SCOPE_TEXT]
                out.append((h2.text + " . " + body2, (h2.start, h2.end + len(body2)), False))
            first = False
        out.append((self.title + " . " + self.intro, self.intro_span, False))
        if _HF_TITLE.match(self.title.strip()):      # a model card titled with its model id
            out.append(("MODEL_NAME=" + self.title.strip(), (0, len(self.title) + 2), False))
        if self.image:
            out.append((self.image[0], self.image[1], False))
        return out


def _lead_in(draft) -> tuple[str, tuple[int, int], bool] | None:
    """The text of a figure's own block before the figure (a command and then ``wall tokens/s: 37.03``
    in one pasted log): a scope between the figure's words and its section's."""
    blk = draft.block
    if blk is None or blk.kind != "text" or not draft.spans or draft.source == "table":
        return None
    at = draft.spans[0][0]
    if not isinstance(at, int) or not blk.start < at <= blk.end:
        return None
    a = max(blk.start, at - _MAX_SCOPE_TEXT)
    before = blk.text[a - blk.start:at - blk.start]
    # not narrow: what one run states about itself (its prompt, concurrency, run count) does not pass
    # to the next figure of the paragraph
    return (before, (a, at), False) if before.strip() else None


def apply(draft, page: Page, outer: Block | None = None) -> None:
    """Fill the draft's missing fields from its scopes, narrowest first; record the spans used."""
    b = draft.builder
    e = b.entry
    blocked: set[str] = set()
    if cancels(draft.local):
        blocked.update(SPEC_FIELDS)
    if draft.source == "prose":
        # a figure in a sentence is one run: its lengths come from its own words, not from the other
        # runs its paragraph or section tells of
        for f, v, q in facts(draft.local, True):
            if f in SHAPE_FIELDS:
                b.put(f, v, q)
        blocked.update(SHAPE_FIELDS)
    for f, v, q in facts(draft.local, True):
        if f not in blocked and (f != "model" or draft.source == "prose"):
            b.put(f, v, q)
    scopes = page.scopes(draft.block)
    lead = _lead_in(draft)
    if lead:        # the same paragraph or log, before the figure: narrower than its section
        scopes.insert(0, lead)
    if outer is not None and outer is not draft.block and outer.caption:
        scopes.insert(0, (outer.caption, (outer.caption_start, outer.start), True))
    if outer is not None and outer.kind == "code":
        blk = draft.block
        if blk is not None and blk.kind == "table" and outer.start <= blk.end <= outer.end:
            # a terminal table's caption printed under it ("Model: llama-3b", as rich prints it), up to
            # the next table of the log: that table's own, before the log's first "Model:" line
            after = outer.text[blk.end - outer.start:blk.end - outer.start + 400]
            nxt = re.search(r"\n[ \t]*[┏╭┌╔|+]", after)
            for f, v, q in kv_facts(after[:nxt.start()] if nxt else after):
                if f not in blocked:
                    b.put(f, v, q)
        # the log's own "Model: X" / "--model Y" lines, before anything around it
        for f, v, q in kv_facts(outer.text):
            if f not in blocked:
                b.put(f, v, q)
    for text, span, narrow in scopes:
        if cancels(text.split(" . ", 1)[0] if not narrow else text) and not any(f in e.fields for f in SPEC_FIELDS):
            blocked.update(SPEC_FIELDS)
        before = set(e.fields)
        found = facts(text, narrow)
        scope_hw = next((v for f, v, _q in found if f == "hardware"), None)
        for f, v, q in found:
            if f in blocked or f in e.fields:
                continue
            if f in NARROW_FIELDS and not narrow:
                continue
            if f == "gpu_count" and e.fields.get("hardware") and scope_hw != e.fields.get("hardware"):
                continue    # "2x RTX 3090" in the title counts 3090s, not the RTX 4090 of a row
            b.put(f, v, q)
        if set(e.fields) != before:
            draft.spans.append(span)
    if "kv_cache" not in e.fields:
        terms = page.kv_terms()
        if len(terms) >= 2:     # a page that compares KV arms: the arm the row, its heading or its log names
            where = [draft.local] + [t for t, _s, narrow in scopes if narrow] + [" ".join(draft.block.section) if draft.block else ""]
            for text in where:
                hit = next((t for t in terms if re.search(r"(?<![\w-])" + re.escape(t) + r"(?![\w-])", text or "", re.I)), None)
                if hit:
                    b.put("kv_cache", hit, hit)
                    break
            if "kv_cache" not in e.fields and page._kv_default:
                b.put("kv_cache", page._kv_default, page._kv_default)   # no arm named: the page's default
    missing = [f for f in CONDITION_FIELDS + ("prompt",) if f not in e.fields]
    if missing and draft.source != "prose":
        for text, span in page.condition_scopes(draft.block):
            stated = conditions(text)
            used = False
            for f in missing:
                if f in stated and f not in e.fields and f not in blocked:
                    b.put(f, *stated[f])
                    used = True
            if used:
                draft.spans.append(span)
        for f, (v, q, span) in page.rig().items():
            if f not in e.fields and (f.startswith("rig_") or f in CONDITION_FIELDS):
                b.put(f, v, q)
