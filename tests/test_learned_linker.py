"""The learned model linker (issue 26, item 3): its candidates and features on small hand-made pages, and
the leave-one-set-out protocol that judges it (bench/loso.py --linker) never training on the scored set."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapers.learned import linker, train_linker  # noqa: E402


def _rows(text: str, figure: str, rules_model: str | None = None, url: str | None = None) -> dict[str, dict]:
    """{candidate key: {feature: value}} for the figure written as ``figure`` in ``text``."""
    ix = linker.index_page(text, url)
    at = text.index(figure)
    keys, _surfaces, X = linker.figure_rows(ix, at, rules_model, linker.table_header_line(ix, at))
    return {k: dict(zip(linker.FEATURES, X[i])) for i, k in enumerate(keys)}


TITLE_SWEEP = """# Qwen3-30B-A3B on one RTX 3090: an n-max sweep

Every run below uses the same weights.

| n-max | tok/s |
|------:|------:|
| 1     | 88.4  |
| 2     | 97.1  |
| 4     | 103.6 |
"""


def test_a_model_named_only_in_the_title_is_a_candidate_for_a_sweep_figure():
    rows = _rows(TITLE_SWEEP, "97.1")
    assert "qwen3-30b-a3b" in rows
    r = rows["qwen3-30b-a3b"]
    assert r["in_title"] == 1.0 and r["in_heading_above"] == 1.0 and r["heading_level"] == 6.0
    assert r["same_line"] == 0.0 and r["has_moe"] == 1.0 and r["has_size"] == 1.0 and r["family"] == 1.0
    # its name prefixes are candidates too, with the parts they leave off counted
    assert rows["qwen3-30b"]["dropped_parts"] >= 1.0 and rows["qwen3-30b"]["is_full"] == 0.0
    # "no model" is always a candidate, and it is the rules' choice when the rules found none
    assert rows[linker.NONE]["is_none"] == 1.0 and rows[linker.NONE]["is_rules"] == 1.0
    # the n-max values are not names
    assert not any(k in rows for k in ("1", "2", "4", "n-max"))


DRAFT = """## Speculative decoding on an M2 Ultra

llama-server -m Llama-3.1-70B-Instruct-Q4_K_M.gguf -md Llama-3.2-1B-Instruct-Q8_0.gguf --draft-max 16

With the draft model the target runs at 14.2 tok/s.
"""


def test_a_draft_head_beside_the_target_model_is_marked_as_a_draft():
    rows = _rows(DRAFT, "14.2", rules_model="Llama-3.2-1B-Instruct")
    target, draft = rows["llama-3.1-70b-instruct"], rows["llama-3.2-1b-instruct"]
    assert draft["draft_ctx"] > 0.0 and target["draft_ctx"] == 0.0
    assert target["in_command"] == 1.0 and target["in_file"] == 1.0 and target["dropped_quant"] == 1.0
    assert draft["is_rules"] == 1.0 and target["is_rules"] == 0.0
    assert target["has_size"] == 1.0 and target["quant_tail"] == 0.0
    # the file name itself (quant tail kept) is its own candidate, and it looks quantised
    assert rows["llama-3.1-70b-instruct-q4-k-m"]["quant_tail"] == 1.0


TOOL = """# llama-bench results

| model | test | t/s |
| --- | --- | ---: |
| gemma-2-9b Q4_K_M | tg128 | 61.3 |
"""


def test_a_tool_name_is_marked_as_a_tool_and_the_row_model_is_on_its_line():
    rows = _rows(TOOL, "61.3", rules_model="llama-bench")
    assert rows["llama-bench"]["tool"] == 1.0 and rows["llama-bench"]["is_rules"] == 1.0
    gemma = rows["gemma-2-9b"]
    assert gemma["tool"] == 0.0 and gemma["same_line"] == 1.0 and gemma["table_header"] == 0.0
    assert rows["llama-bench"]["same_line"] == 0.0
    assert gemma["rank_d"] < rows["llama-bench"]["rank_d"]


def test_the_url_and_bounds():
    rows = _rows("Run on a 4090: 55.0 tok/s.", "55.0", url="https://example.org/posts/mistral-7b-v0.3-4090")
    assert linker.NONE in rows and rows["mistral-7b-v0.3"]["in_url"] == 1.0
    assert rows["mistral-7b-v0.3"]["same_line"] == 0.0 and rows["mistral-7b-v0.3"]["has_size"] == 1.0
    big = "Qwen2.5-7B " * 5000 + "\n\n" + "".join(f"Model{i}-{i}B " for i in range(2000)) + "\n12.5 tok/s"
    ix = linker.index_page(big)
    assert len(ix.names) <= linker.MAX_NAMES


def _figs(sets: list[str]) -> list[train_linker.Figure]:
    """Two figures a set, hand-made, whose right model is named on the figure's line (the rules chose none)."""
    out = []
    for s in sets:
        for n, name in enumerate((f"Qwen3-{s}B", f"Llama-3-{s}B")):
            text = f"# Results\n\n{name}: {10 + n}.5 tok/s\n"
            ix = linker.index_page(text)
            keys, surf, X = linker.figure_rows(ix, text.index(f"{10 + n}.5"), None, None)
            out.append(train_linker.Figure(f"set{s}", "p.md", "markdown", linker.norm_name(name), None, keys, surf, X))
    return out


def test_the_leave_one_set_out_folds_never_train_on_the_scored_set():
    spec = importlib.util.spec_from_file_location("loso", ROOT / "bench" / "loso.py")
    loso = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loso)
    sets = ["real", "real-heldout", "real-heldout2", "real-heldout17"]
    folds = loso.linker_folds(sets)
    assert [s for s, _ in folds] == sets
    for held, trained in folds:
        assert held not in trained and sorted(trained + [held]) == sorted(sets)


def test_the_margin_is_chosen_without_the_scored_set(monkeypatch):
    figs = _figs([str(i) for i in range(1, 7)])
    seen: list[set[str]] = []
    real_fit = linker.fit_booster

    def spy(X, y, w=None):
        seen.append(len(y))
        return real_fit(X, y, w)
    monkeypatch.setattr(linker, "fit_booster", spy)
    held = "set6"
    lk = train_linker.fit([f for f in figs if f.set_name != held])
    rows_trained = sum(len(f.keys) for f in figs if f.set_name != held)
    # every booster (three inner folds and the final one) saw at most the training sets' rows
    assert seen and max(seen) == rows_trained
    assert lk.margin in linker.MARGINS
    # and it links the held-out figures by the name on their line, where the rules chose none
    for f in figs:
        if f.set_name == held:
            assert linker.norm_name(train_linker.chosen(lk, f)) == f.label_model


def test_training_is_reproducible():
    figs = _figs([str(i) for i in range(1, 5)])
    a = train_linker.fit(figs).to_dict()
    b = train_linker.fit(figs).to_dict()
    assert a == b and isinstance(np.float64(a["margin"]), np.float64)


def test_a_bare_size_in_a_row_is_joined_to_the_family_in_the_heading_above():
    text = "# Qwen3.5 on a Mac mini M4\n\n| size | runtime | tok/s |\n|---|---|---|\n| 0.8B | MLX | 55.1 |\n| 9B | MLX | 21.0 |\n"
    rows = _rows(text, "55.1", rules_model="0.8B")
    composed = rows["qwen3.5-0.8b"]
    assert composed["composed"] == 1.0 and composed["same_line"] == 1.0 and composed["in_title"] == 1.0
    assert rows["0.8b"]["is_rules"] == 1.0 and rows["0.8b"]["composed"] == 0.0
    assert "qwen3.5-9b" not in rows        # only sizes on the figure's own line
