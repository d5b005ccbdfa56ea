"""Issue 29 item 9: parser misreads a reviewer sees, each a general rule with a test page
(tests/data/issue29-misreads.md): a quantization after an engine's name is not its version; a draft
width written after the speculative method is read; a stale recipe is never described by its
normalised key ("40bpw", "peruser")."""

from __future__ import annotations

from pathlib import Path

import pytest

import scrapers
from app.audit.quotable import get_quotable
from app.models import Recipe
from scrapers.columns import split_engine
from scrapers.phrases import extract

PAGE = Path(__file__).parent / "data" / "issue29-misreads.md"


def test_the_page_reads_as_a_reviewer_would():
    entries = scrapers.parse(PAGE.read_bytes(), kind="markdown").entries
    fast, plain = entries
    assert fast.fields["engine"] == "ExLlamaV3" and fast.fields.get("engine_version") is None
    assert fast.fields["quantization"] == "4.0bpw"
    assert (fast.fields["spec_method"], fast.fields["draft_tokens"]) == ("EAGLE-3", 6)
    assert fast.quotes["draft_tokens"] == "EAGLE-3, 6 tokens"
    assert plain.fields["engine_version"] == "0.0.6" and plain.fields.get("draft_tokens") is None


@pytest.mark.parametrize("text, want", [
    ("ExLlamaV3 4.0bpw", ("ExLlamaV3", None)), ("ExLlamaV3 4.65 bpw", ("ExLlamaV3", None)),
    ("llama.cpp 4.5bit", ("llama.cpp", None)), ("vLLM 0.9x", ("vLLM", None)), ("SGLang 1.5GB", ("SGLang", None)),
    ("SGLang 0.5.4", ("SGLang", "0.5.4")), ("vLLM v0.11.0rc1", ("vLLM", "0.11.0rc1")), ("llama.cpp b6123", ("llama.cpp", "b6123")),
    ("SGLang 0.5.4 x 2", ("SGLang", "0.5.4")), ("vLLM 0.10.1 w/ CUDA graphs", ("vLLM", "0.10.1")),
    ("MyServe 2.5bpw", ("MyServe 2.5bpw", None)), ("MyServe 1.2.3", ("MyServe", "1.2.3")),
])
def test_a_number_with_a_unit_is_not_a_version(text, want):
    assert split_engine(text) == want


@pytest.mark.parametrize("text, width", [
    ("EAGLE-3, 6 tokens", 6), ("Medusa (4 draft tokens)", 4), ("EAGLE3 / 5 steps", 5), ("EAGLE-3 with k=6 tokens", 6),
    ("EAGLE-3", None), ("EAGLE-3, 512 tokens", None),
])
def test_a_width_after_the_method_is_the_draft_width(text, width):
    got = extract(text)
    assert got.get("draft_tokens", (None,))[0] == width


def test_a_stale_recipe_is_not_described_by_its_normalised_key(db):
    with db.session() as s:
        s.add(Recipe(recipe_id="r-0123456789ab", model="Qwen3-32B", hardware="RTX 4090", gpu_count=1,
                     engine="ExLlamaV3", key={"model": "qwen3-32b", "hardware": "rtx 4090", "engine": "exllamav3",
                                              "quantization": "40bpw", "scope": "peruser", "phase": "decode",
                                              "concurrency": 4, "test": "tg128"}))
    with db.session() as s:
        answer = get_quotable(s, db.settings, "r-0123456789ab")
    assert answer["quantization"] is None, "a normalised token is not a label"
    assert (answer["scope"], answer["phase"], answer["concurrency"]) == ("per_user", "decode", 4)
    assert (answer["model"], answer["engine"], answer["basis"]) == ("Qwen3-32B", "ExLlamaV3", "none")
    assert "40bpw" not in str({k: v for k, v in answer.items() if k != "key"})


def test_a_table_of_bare_llama_bench_test_columns_is_read():
    """A community board whose columns are llama-bench's test names and no unit (`pp512 | tg128`): its
    figures are tokens per second, prefill and decode; `pp512` is never a pipeline-parallel size."""
    import scrapers
    page = ("| Model | GPU | pp512 | tg128 |\n| --- | --- | --- | --- |\n"
            "| Llama-3.1-8B Q4_K_M | RTX 4090 | 12034.5 | 152.3 |\n| Qwen3-32B Q4_K_M | RTX 3090 | 2301.2 | 33.1 |\n")
    got = {(e.fields["model"], e.fields["test"]): e.fields for e in scrapers.parse(page, kind="markdown").entries}
    assert got[("Llama-3.1-8B Q4_K_M", "tg128")]["headline_tps"] == 152.3
    assert got[("Llama-3.1-8B Q4_K_M", "tg128")]["phase"] == "decode"
    assert got[("Qwen3-32B Q4_K_M", "pp512")]["phase"] == "prefill"
    assert all("pp" not in f for f in got.values())
