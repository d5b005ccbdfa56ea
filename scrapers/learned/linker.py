"""The learned model linker: for each figure the rules read, rank the model names the page offers (issue 26,
item 3).

Candidates are the model-like strings of the page (``pagefacts``' model pattern, ``-m`` / ``--model``
arguments, weights file names, sized identifiers such as ``30B-A3B``), each cut into its name prefixes
(``Qwen3-30B-A3B-Instruct-Q4_K_M.gguf`` offers ``Qwen3``, ``Qwen3-30B``, ``Qwen3-30B-A3B``, ...), plus the
page's URL and the rules' own choice. A candidate is one normalised name (``score.norm_name``); its
features say where its mentions stand relative to the figure (same line, same paragraph, characters away,
before or after, in a heading above and at which level, in the page title, in a command, in a file name, in
the URL) and what it looks like (a size, a MoE size, a quant tail cut off, an org prefix, a family word, a
draft or tool context), and whether it is the rules' choice. A small LightGBM classifier
(``linker.json``, one thread, fixed seed) scores each; the linker overrides the rules only when its best
candidate beats the rules' choice by a margin chosen inside the training sets.

Bounded: the first ``MAX_TEXT`` characters are scanned, at most ``MAX_NAMES`` names per page.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402

from scrapers.context import MODEL_ARG  # noqa: E402
from scrapers.learned.score import norm_name  # noqa: E402
from scrapers.pagefacts import _MODEL  # noqa: E402

VERSION = 1
MODEL_PATH = Path(__file__).with_name("linker.json")
MAX_TEXT = 400_000
MAX_NAMES = 400
MAX_PARTS = 8
NONE = ""            # the "no model" candidate's key

FAMILIES = ("llama", "qwen", "qwq", "mistral", "mixtral", "ministral", "devstral", "gemma", "phi", "deepseek",
            "gpt", "falcon", "yi", "command", "granite", "minimax", "glm", "olmo", "smollm", "tinyllama",
            "codellama", "vicuna", "starcoder", "internlm", "baichuan", "chatglm", "kimi", "nemotron", "hermes",
            "wizard", "orca", "zephyr", "solar", "dbrx", "jamba", "exaone", "aya", "llava", "stablelm", "opt",
            "bloom", "mpt", "pythia", "ernie", "hunyuan", "seed", "bitnet", "trilm", "mamba", "rwkv", "r1")
TOOLS = ("llama-bench", "llama.cpp", "llama-cpp", "llama-server", "llama-cli", "llamafile", "ik_llama.cpp",
         "vllm", "sglang", "ollama", "mlx-lm", "mlx_lm", "exllamav2", "exllama", "tensorrt-llm", "trt-llm",
         "lmdeploy", "tgi", "llama-cpp-python", "koboldcpp", "lm-studio", "mlc-llm", "llama2.c", "ktransformers")
_TOOL_SET = {norm_name(t) for t in TOOLS}

_SIZE = re.compile(r"(?i)(?:^|[-_. ])(?:\d+x)?\d+(?:\.\d+)?[bm](?:$|[-_. ])")
_MOE = re.compile(r"(?i)\d+(?:\.\d+)?b[-_. ]a\d+(?:\.\d+)?b")
_QUANT = re.compile(r"(?i)(?:^|[-_.])(?:u?d?-?i?q\d(?:[_-][a-z0-9]{1,2})*|f16|bf16|fp16|fp8|fp4|int[48]|w[48]a\d+|awq|gptq|"
                    r"exl[23]|mlx|gguf|ggml|\d+bit|\d+-bit|nvfp4|mxfp4|k[_-][msl]|[0-9.]+bpw)$")
_FILE = re.compile(r"(?i)\.(?:gguf|ggml|bin|safetensors|pt|onnx)$")
_SIZED_TOKEN = re.compile(r"(?i)(?<![\w./-])(?:[\w.-]+/)?[A-Za-z][\w.+-]*?\d+(?:\.\d+)?[bm](?:[-_.][\w.+-]*)?(?![\w])")
_DRAFT = re.compile(r"(?i)draft|-md\b|--model-draft|eagle|medusa|hydra|speculat|assistant model")
_HEADING_MD = re.compile(r"(?m)^(#{1,6})[ \t]+\S.*$")
_HEADING_HTML = re.compile(r"(?is)<(h[1-6]|title)\b[^>]*>(.*?)</\1>")
_SPLIT = re.compile(r"[-_ ]")
_BARE_SIZE = re.compile(r"(?<![\w.:/-])(\d+(?:\.\d+)?[BbMm])(?![\w.-])")

FEATURES = ("same_line", "same_para", "before_d", "after_d", "min_d", "n_mentions", "n_near", "heading_level",
            "in_heading_above", "in_title", "in_first", "in_command", "in_file", "in_url", "is_rules",
            "rules_none", "n_parts", "is_full", "dropped_quant", "dropped_parts", "has_size", "has_moe",
            "quant_tail", "org_prefix", "family", "draft_ctx", "tool", "length", "first_pos", "table_header",
            "same_table", "n_names", "rank_d", "rules_variant", "rules_prefix_of", "rules_quant_cut",
            "is_none", "composed")


@dataclass
class Mention:
    at: int
    surface: str
    full: bool          # the whole string, not a prefix of it
    dropped_quant: bool
    dropped_parts: int
    command: bool
    file: bool
    draft: bool


@dataclass
class PageIndex:
    text: str
    lines: list[int]        # line start offsets
    paras: list[int]        # paragraph (blank line) break offsets
    headings: list[tuple[int, int, int]]   # (start, end, level)
    title: tuple[int, int] | None
    names: dict[str, list[Mention]]        # norm name -> mentions, by offset
    url: str
    url_names: dict[str, str]              # norm name -> surface: names only the URL holds


def _variants(s: str) -> list[tuple[str, bool, bool, int]]:
    """(surface, full, dropped_quant, dropped_parts) for each name prefix of ``s``."""
    s = s.strip().strip("`'\"()[],;:")
    base = s.rsplit("/", 1)[-1] if "/" in s else s
    base = _FILE.sub("", base)
    base = re.sub(r"(?i)-\d{5}-of-\d{5}$", "", base)
    out = [(s if base == s.rsplit("/", 1)[-1] else base, True, False, 0)]
    parts = [p for p in _SPLIT.split(base) if p]
    if len(parts) > MAX_PARTS:
        parts = parts[:MAX_PARTS]
    seps = [m.group(0) for m in _SPLIT.finditer(base)]
    prefix = parts[0] if parts else ""
    acc = [prefix]
    for k in range(1, len(parts)):
        prefix = prefix + (seps[k - 1] if k - 1 < len(seps) else "-") + parts[k]
        acc.append(prefix)
    n = len(acc)
    for k, p in enumerate(acc[:-1]):
        rest = base[len(p):]
        quant = _quant_only(rest)
        out.append((p, False, quant, n - 1 - k))
    return out


def _quant_only(rest: str) -> bool:
    """Whether ``rest`` (what a prefix leaves off) is only quantisation / format words."""
    rest = rest.strip()
    for _ in range(6):
        if not rest:
            return True
        nr = _QUANT.sub("", rest).rstrip(" -_.")
        if nr == rest:
            return False
        rest = nr
    return not rest


def rules_variants(rules_model: str | None) -> dict[str, tuple[str, bool]]:
    """norm name -> (surface, quant tail dropped) of the rules' choice and its name prefixes."""
    if not rules_model:
        return {}
    out = {norm_name(rules_model): (str(rules_model), False)}
    for surface, _full, dq, _dp in _variants(str(rules_model)):
        k = norm_name(surface)
        if k and k not in out:
            out[k] = (surface, dq)
    return out


def _find_names(text: str) -> list[tuple[int, str, bool]]:
    """(offset, string, from a command) of every model-like string."""
    found = []
    for m in _MODEL.finditer(text):
        found.append((m.start(1), m.group(1).rstrip(".,;:"), False))
    for m in MODEL_ARG.finditer(text):
        found.append((m.start(1), m.group(1), True))
    for m in _SIZED_TOKEN.finditer(text):
        found.append((m.start(), m.group(0), False))
    return found


def index_page(text: str, url: str | None = None) -> PageIndex:
    text = text[:MAX_TEXT]
    lines = [0] + [m.end() for m in re.finditer(r"\n", text)]
    paras = [m.start() for m in re.finditer(r"\n[ \t]*\n", text)]
    heads = [(m.start(), m.end(), len(m.group(1))) for m in _HEADING_MD.finditer(text)]
    title = None
    for m in _HEADING_HTML.finditer(text[:200_000]):
        tag = m.group(1).lower()
        if tag == "title":
            title = title or (m.start(), m.end())
        else:
            heads.append((m.start(), m.end(), int(tag[1])))
    heads.sort()
    if title is None and heads:
        top = min(h[2] for h in heads)
        title = next((h[0], h[1]) for h in heads if h[2] == top)
    names: dict[str, list[Mention]] = {}
    found: dict[tuple[int, str], bool] = {}
    for at, s, cmd in _find_names(text):
        found[(at, s)] = found.get((at, s), False) or cmd
    for (at, s), cmd in sorted(found.items()):
        draft = bool(_DRAFT.search(text[max(0, at - 30):at] + s))
        for surface, full, dq, dp in _variants(s):
            k = norm_name(surface)
            if not k or len(k) < 2 or k.isdigit():
                continue
            if k not in names and len(names) >= MAX_NAMES:
                continue
            names.setdefault(k, []).append(Mention(at, surface, full, dq, dp, cmd, bool(_FILE.search(s)), draft))
    url_names: dict[str, str] = {}
    if url:
        path = re.sub(r"%20|[/?#=&+]", " ", url.split("://", 1)[-1])[:2000]
        for _at, s, _cmd in _find_names(path):
            for surface, _full, _dq, _dp in _variants(s):
                k = norm_name(surface)
                if k and len(k) >= 2 and not k.isdigit() and k not in names:
                    url_names.setdefault(k, surface)
    return PageIndex(text, lines, paras, heads, title, names, url or "", url_names)


def _line_of(ix: PageIndex, at: int) -> int:
    return bisect.bisect_right(ix.lines, at) - 1


def _para_of(ix: PageIndex, at: int) -> int:
    return bisect.bisect_right(ix.paras, at)


def _heading_chain(ix: PageIndex, at: int) -> list[tuple[int, int, int]]:
    """The headings above ``at`` that are its section's (the nearest of each shallower level)."""
    i = bisect.bisect_right(ix.headings, (at, 10**12, 10)) - 1
    chain, level = [], 7
    while i >= 0 and level > 1:
        h = ix.headings[i]
        if h[2] < level and h[1] <= at:
            chain.append(h)
            level = h[2]
        i -= 1
    return chain


def _looks(k: str) -> list[float]:
    return [1.0 if _SIZE.search("-" + k + "-") else 0.0, 1.0 if _MOE.search(k) else 0.0,
            1.0 if _QUANT.search(k) else 0.0, 1.0 if any(k.startswith(f) for f in FAMILIES) else 0.0,
            1.0 if k in _TOOL_SET or k.startswith(("llama-bench", "llama.cpp", "llama-server")) else 0.0,
            float(len(k))]


def figure_rows(ix: PageIndex, at: int, rules_model: str | None, table_line: int | None = None
                ) -> tuple[list[str], list[str], np.ndarray]:
    """(norm names, surfaces, feature rows) of the candidates for the figure at offset ``at``."""
    line, para = _line_of(ix, at), _para_of(ix, at)
    chain = _heading_chain(ix, at)
    rk = norm_name(rules_model)
    rv = rules_variants(rules_model)
    keys, surfaces, rows, dists = [], [], [], []
    families: list[tuple[str, str, int, bool]] = []      # family names (no size) in a heading above or the title
    url_l = ix.url.lower()
    for k, ms in ix.names.items():
        pos = [m.at for m in ms]
        j = bisect.bisect_right(pos, at)
        before = at - pos[j - 1] if j > 0 else 1e7
        after = pos[j] - at if j < len(pos) else 1e7
        near = [m for m in ms if abs(m.at - at) < 2000]
        same_line = any(_line_of(ix, m.at) == line for m in near)
        same_para = any(_para_of(ix, m.at) == para for m in near)
        hl = 0
        for (hs, he, lv) in chain:
            if any(hs <= m.at < he for m in ms[max(0, bisect.bisect_left(pos, hs)):]):
                hl = max(hl, 7 - lv)
        in_title = bool(ix.title and any(ix.title[0] <= m.at < ix.title[1] for m in ms[:5]))
        # the table header: the first line of the block of table lines holding the figure
        th = 0.0
        if table_line is not None:
            th = 1.0 if any(_line_of(ix, m.at) == table_line for m in near) else 0.0
        # a mention in the table holding the figure, above or on its row
        same_table = table_line is not None and any(table_line <= _line_of(ix, m.at) <= line for m in near)
        best = min(ms, key=lambda m: abs(m.at - at))
        rows.append([float(same_line), float(same_para), min(before, 1e6), min(after, 1e6), min(before, after, 1e6),
                     float(len(ms)), float(len(near)), float(hl), float(hl > 0), float(in_title),
                     float(pos[0] < 300), float(any(m.command for m in ms)), float(any(m.file for m in ms)),
                     float(k.replace("-", "") in url_l.replace("-", "").replace("_", "")), float(k == rk), float(rk is None),
                     float(k.count("-") + 1), float(any(m.full for m in ms)), float(best.dropped_quant),
                     float(best.dropped_parts), *_looks(k)[:3], float("/" in best.surface), _looks(k)[3],
                     float(sum(m.draft for m in near) / max(1, len(near)) if near else float(best.draft)),
                     _looks(k)[4], _looks(k)[5], pos[0] / max(1, len(ix.text)), th, float(same_table), 0.0, 0.0,
                     float(k in rv and k != rk), float(bool(rk) and k.startswith(rk) and rk != k),
                     float(k in rv and rv[k][1]), 0.0, 0.0])
        keys.append(k)
        surfaces.append(best.surface)
        dists.append(min(before, after))
        if (hl or in_title) and _looks(k)[3] and not _looks(k)[0]:
            families.append((k, best.surface, hl, in_title))
    for k, (surface, dq) in rv.items():
        if k in ix.names:
            continue
        keys.append(k)
        surfaces.append(surface)
        rows.append([0.0, 0.0, 1e6, 1e6, 1e6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, float(k == rk), 0.0,
                     float(k.count("-") + 1), float(k == rk), float(dq), 0.0, *_looks(k)[:3], 0.0, _looks(k)[3], 0.0,
                     _looks(k)[4], _looks(k)[5], 1.0, 0.0, 0.0, 0.0, 0.0, float(k != rk), 0.0, float(dq), 0.0, 0.0])
        dists.append(1e6)
    # a size on the figure's line under a heading naming only the family: "0.8B" under "Qwen3.5" -> Qwen3.5-0.8B
    if families:
        ls = ix.lines[line]
        le = ix.lines[line + 1] if line + 1 < len(ix.lines) else len(ix.text)
        seen = set(keys)
        for m in _BARE_SIZE.finditer(ix.text, ls, min(le, ls + 2000)):
            for fk, fs, hl, in_title in families[:4]:
                surface = f"{fs}-{m.group(1)}"
                k = norm_name(surface)
                if k in seen:
                    continue
                seen.add(k)
                keys.append(k)
                surfaces.append(surface)
                row = [0.0] * len(FEATURES)
                for f, v in (("same_line", 1.0), ("same_para", 1.0), ("before_d", float(abs(at - m.start()))),
                             ("after_d", float(abs(at - m.start()))), ("min_d", float(abs(at - m.start()))),
                             ("n_mentions", 1.0), ("n_near", 1.0), ("heading_level", float(hl)),
                             ("in_heading_above", float(hl > 0)), ("in_title", float(in_title)),
                             ("is_rules", float(k == rk)), ("rules_none", float(rk is None)),
                             ("n_parts", float(k.count("-") + 1)), ("is_full", 1.0), ("has_size", 1.0),
                             ("family", 1.0), ("length", float(len(k))), ("first_pos", 1.0),
                             ("rules_variant", float(k in rv and k != rk)), ("composed", 1.0)):
                    row[FEATURES.index(f)] = v
                rows.append(row)
                dists.append(float(abs(at - m.start())))
    for k, surface in ix.url_names.items():
        if k in rv:
            continue
        keys.append(k)
        surfaces.append(surface)
        row = [0.0] * len(FEATURES)
        for f, v in (("before_d", 1e6), ("after_d", 1e6), ("min_d", 1e6), ("in_url", 1.0), ("rules_none", float(rk is None)),
                     ("n_parts", float(k.count("-") + 1)), ("first_pos", 1.0)):
            row[FEATURES.index(f)] = v
        lk = _looks(k)
        for f, v in zip(("has_size", "has_moe", "quant_tail", "family", "tool", "length"), lk):
            row[FEATURES.index(f)] = v
        rows.append(row)
        dists.append(1e6)
    # "no model": what a page that names none (or names only draft heads and tools) means
    keys.append(NONE)
    surfaces.append(None)
    row = [0.0] * len(FEATURES)
    for f, v in (("before_d", 1e6), ("after_d", 1e6), ("min_d", 1e6), ("is_rules", float(rk is None)),
                 ("rules_none", float(rk is None)), ("first_pos", 1.0), ("is_none", 1.0)):
        row[FEATURES.index(f)] = v
    rows.append(row)
    dists.append(1e6)
    X = np.array(rows, dtype=np.float64)
    X[:, FEATURES.index("n_names")] = len(rows)
    order = np.argsort(np.argsort(np.array(dists), kind="stable"), kind="stable")
    X[:, FEATURES.index("rank_d")] = order
    return keys, surfaces, X


def table_header_line(ix: PageIndex, at: int) -> int | None:
    """The first line of the run of ``|`` lines holding ``at`` (its header), or None outside a table."""
    li = _line_of(ix, at)

    def is_row(i):
        s = ix.text[ix.lines[i]:ix.lines[i + 1] if i + 1 < len(ix.lines) else len(ix.text)].lstrip()
        return s.startswith("|") or s.count("|") >= 2
    if li >= len(ix.lines) or not is_row(li):
        return None
    while li > 0 and is_row(li - 1):
        li -= 1
    return li


def figure_at(entry) -> int | None:
    sel = (getattr(entry, "selectors", None) or {}).get("headline_tps")
    return sel.get("start") if sel and isinstance(sel.get("start"), int) else None


def page_rows(text: str, url: str | None, entries: list) -> list[tuple[int, list[str], list[str], np.ndarray]]:
    """(entry index, names, surfaces, X) for each entry with a figure and a position in ``text``."""
    ix = index_page(text, url)
    out = []
    for n, e in enumerate(entries):
        at = figure_at(e)
        if at is None or at >= MAX_TEXT:
            continue
        keys, surf, X = figure_rows(ix, at, e.fields.get("model"), table_header_line(ix, at))
        if len(keys):
            out.append((n, keys, surf, X))
    return out


PARAMS = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.08, "min_data_in_leaf": 20,
          "feature_fraction": 0.8, "lambda_l2": 1.0, "num_threads": 1, "deterministic": True,
          "force_row_wise": True, "seed": 26, "verbose": -1}
ROUNDS = 120
MARGINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.01)


class Linker:
    def __init__(self, booster: lgb.Booster, margin: float):
        self.booster, self.margin = booster, margin

    def choose(self, keys: list[str], surfaces: list[str], X: np.ndarray, rules_model: str | None
               ) -> tuple[str | None, float, float]:
        """(model, linker score of it, score of the rules' choice): the rules' choice unless the best
        candidate beats it by the margin."""
        p = self.booster.predict(X, num_threads=1)
        rk = norm_name(rules_model) or NONE
        pr = float(p[keys.index(rk)]) if rk in keys else 0.0
        b = int(np.argmax(p))
        if keys[b] != rk and float(p[b]) - pr >= self.margin:
            return surfaces[b], float(p[b]), pr
        return rules_model, pr, pr

    def to_dict(self) -> dict:
        return {"version": VERSION, "features": list(FEATURES), "margin": self.margin,
                "booster": self.booster.model_to_string(num_iteration=-1)}

    @classmethod
    def from_dict(cls, d: dict) -> "Linker":
        return cls(lgb.Booster(model_str=d["booster"]), float(d["margin"]))


def fit_booster(X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> lgb.Booster:
    return lgb.train(PARAMS, lgb.Dataset(X, label=y, weight=w, feature_name=list(FEATURES), free_raw_data=False),
                     num_boost_round=ROUNDS)


def load(path: Path | None = None) -> Linker:
    return Linker.from_dict(json.loads(Path(path or MODEL_PATH).read_text()))
