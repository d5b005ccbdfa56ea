"""A model's total and active parameter counts, from models.csv or from sizes its name states.

models.csv is looked at first: names round (Qwen3-30B-A3B is 30.5B/3.3B), and some state a count
that is not the total ("Llama-4-Scout-17B-16E" gives the active 17B, "gpt-oss-20b" has 21B). A
size stated in the name that contradicts the table's row wins, so that "DeepSeek-R1-Distill-
Qwen-32B" or the Ollama tag "deepseek-r1:7b" are not read as the 671B model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .data import ModelRow, Reference, load_reference
from .text import best_hit, tokens

_DENSE = re.compile(r"^(\d+(?:\.\d+)?)([bm])$")          # 70b, 1.5b, 500m
_EXPERTS = re.compile(r"^(\d+)x(\d+(?:\.\d+)?)b$")        # 8x7b
_ACTIVE = re.compile(r"^a(\d+(?:\.\d+)?)([bm])$")         # a3b, a22b, a800m
_AGREE = 0.15  # a name's size within 15 % of the table's figure agrees with it


@dataclass(frozen=True)
class ParamsResult:
    total_b: float | None
    active_b: float
    source: str
    row_key: str | None = None
    approximate: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    stated: str = ""  # the sizes as the name writes them, when they come from the name
    embedding_b: float = 0.0  # the input embedding inside active_b, not streamed per token (models.csv)
    fixed_bits_active_b: float = 0.0  # active parameters at a width fixed by the release (models.csv)
    fixed_bits: float | None = None


def _billions(number: str, unit: str) -> float:
    value = float(number)
    return value / 1000.0 if unit == "m" else value


def from_name(model_name: str) -> ParamsResult | None:
    """Sizes the name states: "70B", "1.5B", "500M", "30B-A3B", "8x7B"; None when it states none.

    Version numbers ("Qwen2.5", "Llama-3.1", "v0.1"), dates ("-2507") and names such as "gpt-4o"
    are not sizes: a size is a whole token of digits followed by B or M.
    """
    dense: list[float] = []
    active: list[float] = []
    experts: list[tuple[int, float]] = []
    words: list[str] = []
    for token in tokens(model_name):
        if m := _DENSE.match(token):
            dense.append(_billions(m.group(1), m.group(2)))
            words.append(token.upper())
        elif m := _ACTIVE.match(token):
            active.append(_billions(m.group(1), m.group(2)))
            words.append(token.upper())
        elif m := _EXPERTS.match(token):
            experts.append((int(m.group(1)), float(m.group(2))))
            words.append(f"{m.group(1)}x{m.group(2)}B")
    if not (dense or active or experts):
        return None
    stated = "-".join(words)
    source = f"stated in the model name ({stated})"
    notes: list[str] = []
    if experts:
        count, each = experts[0]
        notes.append(
            f"{count}x{each:g}B is a mixture of experts not in models.csv: total taken as about "
            f"{count * each:g}B and active as at least one expert ({each:g}B); with the usual top-2 "
            "routing the active count is nearly twice that, so this bound is loose")
        return ParamsResult(count * each, each, source, approximate=True, notes=tuple(notes), stated=stated)
    if active:
        total = max(dense) if dense else None
        if total is None:
            notes.append("the name states only the active parameters; the total is unknown")
        return ParamsResult(total, active[0], source, notes=tuple(notes), stated=stated)
    size = max(dense)
    if len(set(dense)) > 1:
        notes.append(f"the name states several sizes ({stated}); the largest, {size:g}B, is used")
    notes.append(f"the name states one size ({size:g}B) and the model is taken as dense: "
                 "all of it is read for every token")
    return ParamsResult(size, size, source, notes=tuple(notes), stated=stated)


def from_table(model_name: str, ref: Reference) -> ModelRow | None:
    """The models.csv row whose alias appears in the name (case and separators ignored)."""
    text_tokens = tokens(model_name)
    best = None
    for row in ref.models:
        hit = best_hit(row.aliases, text_tokens, tokens)
        if hit is not None and (best is None or hit.rank() > best[1].rank()):
            best = (row, hit)
    return best[0] if best else None


def _near(a: float | None, b: float) -> bool:
    return a is not None and abs(a - b) <= _AGREE * b


def _agrees(named: ParamsResult, row: ModelRow) -> bool:
    if named.approximate:  # "8x7B": the table is the better figure for the same model
        return True
    if named.total_b is None:  # "-A13B" alone
        return _near(named.active_b, row.active_params_b)
    return (_near(named.total_b, row.total_params_b) or _near(named.total_b, row.active_params_b)
            or _near(named.active_b, row.active_params_b))


def resolve_params(model_name: str | None, *, ref: Reference | None = None) -> ParamsResult | None:
    """Parameters with where they came from and any caveat, or None when nothing is known."""
    if not model_name or not model_name.strip():
        return None
    ref = ref or load_reference()
    row = from_table(model_name, ref)
    named = from_name(model_name)
    if row is not None and (named is None or _agrees(named, row)):
        return ParamsResult(row.total_params_b, row.active_params_b, row.source, row_key=row.key,
                            embedding_b=row.embedding_params_b, fixed_bits_active_b=row.fixed_bits_active_b,
                            fixed_bits=row.fixed_bits)
    if row is not None and named is not None:
        note = (f"the name's size ({named.stated}) disagrees with models.csv "
                f"row {row.key} ({row.total_params_b:g}B total, {row.active_params_b:g}B active): "
                "the name is taken to be a different model and its size is used")
        return ParamsResult(named.total_b, named.active_b, named.source, approximate=named.approximate,
                            notes=(note,) + named.notes)
    return named


def parse_params(model_name: str | None, *, ref: Reference | None = None) -> tuple[float | None, float, str] | None:
    """(total_b, active_b, source) for a model name, or None.

    `source` is the model card URL when the figures come from models.csv, else a sentence saying
    the name states them. `total_b` is None when a name states only the active count ("-A13B").
    """
    found = resolve_params(model_name, ref=ref)
    return (found.total_b, found.active_b, found.source) if found else None
