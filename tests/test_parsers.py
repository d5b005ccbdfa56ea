"""Parsers on bad input, kind guessing, phrases in notes, and the 2,000-row shapes the benchmark uses."""

from __future__ import annotations

import json
import random

import pytest

import scrapers
from scrapers.phrases import extract


def test_guess_kind():
    assert scrapers.guess_kind(b'{"entries": []}', "application/json")[0] == "json"
    assert scrapers.guess_kind(b'[{"a": 1}]', None) == ("json", "the body parses as JSON")
    kind, reason = scrapers.guess_kind(b"<!doctype html><table><tr><td>1</td></tr></table>", "text/html")
    assert kind == "html" and "table" in reason
    assert scrapers.guess_kind(b"<html><body><p>55 tok/s</p></body></html>", "text/html")[0] == "text"
    assert scrapers.guess_kind(b"| a | b |\n|---|---|\n| 1 | 2 |\n", "text/plain")[0] == "markdown"
    assert scrapers.guess_kind(b"100 tokens in 1.822 seconds = ~55 tok/s.", "text/plain")[0] == "text"


@pytest.mark.parametrize("kind", scrapers.KINDS)
@pytest.mark.parametrize("body", [b"", b"\x00\xff\xfe garbage \x80", b"{", b"<table><tr><td>", b"| a |\n|--|\n| 1",
                                  "<p>\u2013 1,004.9 tok/s</p>".encode("utf-16")])
def test_never_raises_on_garbage(kind, body):
    result = scrapers.parse(body, kind=kind)
    assert isinstance(result, scrapers.ParseResult)
    if not result.entries:
        assert result.warnings


def test_random_bytes_never_raise():
    rnd = random.Random(4)
    for _ in range(50):
        body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 400)))
        for kind in scrapers.KINDS:
            scrapers.parse(body, kind=kind)


def test_unknown_kind_is_a_warning():
    result = scrapers.parse(b"x", kind="pdf")
    assert not result.entries and "unknown kind" in result.warnings[0]


def test_malformed_json_says_so():
    result = scrapers.parse(b'{"entries": [{"tokSOut": 1004.9,', kind="json")
    assert result.entries == [] and "not valid JSON" in result.warnings[0]


def test_json_without_entries_says_so():
    result = scrapers.parse(b'{"status": "ok"}', kind="json")
    assert result.entries == [] and "no list of entries" in result.warnings[0]


def test_unparseable_number_keeps_the_entry_and_the_text():
    html = (b"<table><tr><th>Model</th><th>tok/s</th><th>GPUs</th></tr>"
            b"<tr><td>M</td><td>lots</td><td>two-ish</td></tr></table>")
    result = scrapers.parse(html, kind="html")
    (e,) = result.entries
    assert e.fields["model"] == "M" and "headline_tps" not in e.fields
    assert e.extra["tok/s"] == "lots" and e.extra["GPUs"] == "two-ish"
    assert any("lots" in w for w in e.warnings) and any("two-ish" in w for w in e.warnings)


def test_json_unknown_fields_go_to_extra_and_quotes_are_literal():
    body = json.dumps({"data": [{"hfId": "a/b", "tokSOut": 1004.90, "hardware": {"gpuName": "H100", "vramGb": 80},
                                 "promptSha256": "ab12", "mystery": [1, 2]}]})
    body = body.replace("1004.9", "1004.90")
    (e,) = scrapers.parse(body.encode(), kind="json").entries
    assert e.fields["headline_tps"] == 1004.9 and e.quotes["headline_tps"] == "1004.90"
    assert e.extra == {"hardware.vramGb": 80, "promptSha256": "ab12", "mystery": [1, 2]}


def test_json_escaped_strings_quote_only_what_is_in_the_document():
    body = json.dumps([{"model": "X", "tok_s": 10, "notes": "steady state 373\u2013391 tok/s \u2014 ok"}]).encode()
    (e,) = scrapers.parse(body, kind="json").entries
    assert (e.fields["steady_low"], e.fields["steady_high"]) == (373.0, 391.0)
    text = body.decode()
    assert all(q in text for q in e.quotes.values())


@pytest.mark.parametrize("text,want", [
    ("steady state 373-391 tok/s", {"steady_low": 373.0, "steady_high": 391.0}),
    ("steady-state ~380 t/s", {"steady_low": 380.0, "steady_high": 380.0}),
    ("acceptance 64/1.00 on locked attractor", {"acceptance_rate": 1.0}),
    ("draft acceptance rate = 0.56400 ( 282 accepted / 500 generated)",
     {"acceptance_rate": 0.564, "accepted_tokens": 282, "drafted_tokens": 500}),
    ("Accept length: 3.2", {"acceptance_length": 3.2}),
    ("mean acceptance length 5.00", {"acceptance_length": 5.0}),
    ("Acceptance rate (%): 56.4", {"acceptance_rate": 0.564}),
    ("n-gram proposer", {"proposer": "n-gram"}),
    ("32-gram cyclic tiling", {"proposer": "32-gram cyclic tiling"}),
    ("TP4/DCP4, MTP-3 greedy", {"tp": 4, "dcp": 4, "spec_method": "MTP", "draft_tokens": 3}),
    ("--tensor-parallel-size 2 --pipeline-parallel-size 2", {"tp": 2, "pp": 2}),
    ("batch 1, 8k context, 403-token prompt", {"concurrency": 1, "context_length": 8192, "prompt_tokens": 403}),
    ("clocks locked, 450 W", {"clocks": "clocks locked", "power": "450 W"}),
    ('asking the model to "Count from 1 to 50"', {"prompt": "Count from 1 to 50"}),
    ("100 tokens in 1.822 seconds = ~55 tok/s", {"tokens_stated": 100.0, "seconds_stated": 1.822}),
    ("build: 1a2b3c4 (1234)", {"engine_commit": "1a2b3c4", "engine_version": "1234"}),
    ("5 runs, median", {"n_runs": 5}),
    ("EAGLE-3 drafter", {"spec_method": "EAGLE-3"}),
    ("block-draft with 64 draft tokens", {"spec_method": "block draft", "draft_tokens": 64}),
])
def test_phrases(text, want):
    got = extract(text)
    for f, v in want.items():
        assert f in got, f
        assert got[f][0] == pytest.approx(v) if isinstance(v, float) else got[f][0] == v
        assert got[f][1] in text


def _bench_rows(n):
    rows = []
    for i in range(n):
        rows.append((f"model-{i % 7}", f"{1 + i % 4}x RTX PRO 6000", "SGLang 0.5.4", "NVFP4", i % 64,
                     f"{100 + i * 0.37:,.1f}", "steady state 373-391 tok/s" if i % 5 == 0 else ""))
    return rows


def test_two_thousand_row_html_table():
    head = "".join(f"<th>{h}</th>" for h in ("Model", "GPU", "Engine", "Quant", "Draft", "Tokens/s", "Notes"))
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in _bench_rows(2000))
    result = scrapers.parse(f"<table><tr>{head}</tr>{body}</table>".encode(), kind="html")
    assert len(result.entries) == 2000 and not result.warnings
    e = result.entries[1999]
    assert e.fields["headline_tps"] == pytest.approx(100 + 1999 * 0.37, abs=0.06)
    assert e.fields["gpu_count"] == 4 and e.fields["engine_version"] == "0.5.4"
    assert result.entries[0].fields["steady_low"] == 373.0


def test_two_thousand_entry_json():
    data = {"entries": [{"hfId": r[0], "hardware": {"gpuName": "RTX PRO 6000", "gpuCount": 2}, "tokSOut": i + 0.5,
                         "notes": r[6]} for i, r in enumerate(_bench_rows(2000))]}
    result = scrapers.parse(json.dumps(data).encode(), kind="json")
    assert len(result.entries) == 2000
    assert result.entries[10].fields["headline_tps"] == 10.5 and result.entries[10].quotes["headline_tps"] == "10.5"


# -- generalisations found on held-out real pages (tests/data/real-heldout) ------------------------

def _figures(body: str, kind: str = "markdown") -> dict[float, dict]:
    return {e.fields["headline_tps"]: e.fields for e in scrapers.parse(body.encode(), kind=kind).entries}


def test_a_draft_heads_name_is_not_the_served_model():
    body = ("I benchmarked this PR using `lmsys/sglang-EAGLE-LLaMA3-Instruct-8B`.\n\n"
            "* k=2: est. speed output: 175.49 toks/s\n")
    got = _figures(body, "text")
    assert 175.49 in got
    assert "eagle" not in str(got[175.49].get("model") or "").lower()


def test_a_before_and_after_pair_written_with_an_arrow_is_two_figures():
    got = _figures("With the draft model the final tg can go from 9.35 -> 11.8 tokens/s on one card.\n", "text")
    assert {9.35, 11.8} <= set(got)


def test_a_range_is_still_not_a_figure():
    assert not _figures("Steady generation ran at 373-391 tok/s for the whole run.\n", "text")


def test_a_model_size_column_of_parameter_counts_names_the_rows():
    body = ("## Scaling by model size\n\n**RTX 4090, Q4_K_M**\n\n| Model Size | Tok/s | VRAM Used |\n"
            "|---|---|---|\n| **3B** | ~200 | ~3 GB |\n| **7-8B** | ~165 | ~5 GB |\n| **32-34B** | ~75 | ~20 GB |\n")
    got = _figures(body)
    assert {v.get("model") for v in got.values()} == {"3B", "7-8B", "32-34B"}


def test_a_size_column_of_bytes_stays_a_detail():
    body = ("| model | size | backend | test | t/s |\n|---|---|---|---|---|\n"
            "| llama 7B Q4_0 | 3.56 GiB | CUDA | tg128 | 130.2 |\n| llama 13B Q4_0 | 6.86 GiB | CUDA | tg128 | 80.1 |\n")
    got = _figures(body)
    assert all("GiB" not in str(v.get("model")) for v in got.values()) and len(got) == 2


def test_a_key_value_model_line_ends_at_its_comma():
    body = ("# Benchmarks\n\n- Model: Llama 3.1 70B, Q4_K_M quantization\n- GPU: RTX 4090\n\n"
            "Generation ran at 21.5 tok/s.\n")
    got = _figures(body)
    assert got[21.5].get("model") == "Llama 3.1 70B"


def test_a_log_record_takes_the_run_named_on_the_line_above_it():
    body = ("Results:\n\n```\nEAGLE-3 (num_steps=8):\n#questions: 80, Throughput: 378.57 token/s, Acceptance length: 5.39\n\n"
            "EAGLE-3 (num_steps=5):\n#questions: 80, Throughput: 361.70 token/s, Acceptance length: 4.68\n\n"
            "EAGLE-2 (num_steps=8):\n#questions: 80, Throughput: 230.08 token/s, Acceptance length: 3.76\n```\n")
    got = _figures(body)
    assert {k: (v.get("spec_method"), v.get("draft_tokens")) for k, v in got.items()} == {
        378.57: ("EAGLE-3", 8), 361.7: ("EAGLE-3", 5), 230.08: ("EAGLE-2", 8)}


# -- generalisations found on the second held-out set (tests/data/real-heldout2) -------------------

def test_a_weights_file_in_a_model_cell_names_its_model_and_quantization():
    body = ("| Model | Device | Speed (tokens/sec) |\n|---|---|---|\n"
            "| llama-2-7b-chat.ggmlv3.q2_K | Apple M2 CPU | 10.49 |\n| Qwen3-8B-Q4_K_M.gguf | RTX 4090 | 130.5 |\n")
    got = _figures(body)
    assert (got[10.49]["model"], got[10.49].get("quantization")) == ("llama-2-7b-chat", "q2_K")
    assert (got[130.5]["model"], got[130.5].get("quantization")) == ("Qwen3-8B", "Q4_K_M")


def test_llama_speculative_encoded_and_decoded_lines_are_prefill_and_decode():
    body = ("```\nencoded   12 tokens in    0.514 seconds, speed:   23.325 t/s\n"
            "decoded  371 tokens in   34.412 seconds, speed:   10.781 t/s\n```\n")
    got = _figures(body)
    assert (got[23.325]["phase"], got[10.781]["phase"]) == ("prefill", "decode")


def test_a_bare_test_name_header_is_the_columns_test():
    body = ("| Backend | pp512 | tg128 |\n| --- | ---: | ---: |\n"
            "| ROCm | 1900.72 ± 33.74 t/s | 58.38 ± 0.11 t/s |\n| Vulkan | 2001.00 ± 2.60 t/s | 62.39 ± 0.04 t/s |\n")
    got = _figures(body)
    assert {k: v.get("test") for k, v in got.items()} == {1900.72: "pp512", 58.38: "tg128", 2001.0: "pp512",
                                                          62.39: "tg128"}


def test_the_model_of_a_command_line_names_its_output():
    ollama = "```\nollama run mistral --verbose\n>>> hello\n\nprompt eval rate:     53.77 tokens/s\neval rate:            24.61 tokens/s\n```\n"
    assert {v.get("model") for v in _figures(ollama, "text").values()} == {"mistral"}
    llama = ("```bash\nllama-cli -m $HOME/models/Qwen2.5-Coder-32B-Instruct-Q4_K_L.gguf -p hi -ngl 99\n```\n\n"
             "```\ndecoded  371 tokens in   34.412 seconds, speed:   10.781 t/s\n```\n")
    assert _figures(llama)[10.781].get("model") == "Qwen2.5-Coder-32B-Instruct"


def test_wall_tokens_per_second_is_end_to_end():
    got = _figures(" tokens: 481\n wall tokens/s: 37.03\n decode tokens/s: 41.01\n", "text")
    assert (got[37.03]["phase"], got[41.01]["phase"]) == ("e2e", "decode")


def test_tool_output_kept_as_comments_is_read_and_quoted_from_the_archived_text():
    body = ("#!/bin/sh\nvllm bench serve --model m\n"
            "# ============ Serving Benchmark Result ============\n# Successful requests:                     32\n"
            "# Benchmark duration (s):                  150.87\n# Total generated tokens:                  65536\n"
            "# Output token throughput (tok/s):         434.40\n# Total Token throughput (tok/s):          868.80\n"
            "# ==================================================\n")
    entries = scrapers.parse(body.encode(), kind="markdown").entries
    got = {e.fields["headline_tps"]: e for e in entries}
    assert 434.4 in got
    sel = got[434.4].selectors["headline_tps"]
    assert body[sel["start"]:sel["end"]] == sel["exact"] == "434.40"
    assert sel["suffix"] in body and sel["prefix"] in body   # the archived text, comment markers and all


def test_a_model_named_once_on_the_page_names_the_runs_of_sibling_sections():
    body = ("# 1. Baseline\n\nllama-server -m /models/Qwen3.6-27B-Q4_K_M.gguf -c 128000\n\ndecode tokens/s: 41.01\n\n"
            "# 2. With speculation\n\nsame command, speculation on\n\ndecode tokens/s: 42.30\n")
    got = _figures(body)
    assert {v.get("model") for v in got.values()} == {"Qwen3.6-27B"}


def test_a_page_naming_two_models_has_no_sole_model():
    body = ("We tried Llama-3.1-8B and Qwen2.5-7B last week.\n\n# Results\n\ndecode tokens/s: 41.01\n")
    sole = __import__("scrapers.pipeline", fromlist=["sole_model"]).sole_model
    assert sole(body) is None and sole("Only Qwen2.5-7B here, twice: Qwen2.5-7B.") == "Qwen2.5-7B"


# -- generalisations found on the third held-out set (tests/data/real-heldout3) --------------------

def test_a_table_of_precisions_under_a_unit_caption_reads_figures_with_their_spread():
    body = ("**Performance Metrics:** (unit: Tokens / second)\n\n| Engine | float32 | float16 | int4 |\n|---|---|---|---|\n"
            "| burn | 13.12 ± 0.85 | - | - |\n| vllm | 90.78 ± 1.60 | 90.54 ± 2.22 | - |\n"
            "| exllamav2 | - | - | 164.28 ± 4.07 |\n")
    assert set(_figures(body)) == {13.12, 90.78, 90.54, 164.28}


def test_a_metric_cell_marked_with_a_symbol_is_a_figure():
    body = ("| Metric | GGUF | TensorRT-LLM |\n|---|---|---|\n| Throughput (token/s) | 80 | ✅ 97.9 |\n")
    assert {80.0, 97.9} <= set(_figures(body))


def test_t_per_sec_with_a_decimal_comma():
    got = _figures("673 tokens in 50 sec : 13,46 t/sec\n318 tokens in 25 sec : 12,72 t/sec\n", "text")
    assert {13.46, 12.72} <= set(got)


def test_a_hub_cache_path_names_its_model():
    from scrapers.tools.common import model_from_path

    assert model_from_path("Qwen--Qwen3-30B-A3B") == "Qwen3-30B-A3B"
    assert model_from_path("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"


def test_a_model_named_as_the_draft_model_is_not_the_served_model():
    body = ("```text\nMaximum request concurrency:             1\nOutput token throughput (tok/s):         39.96\n```\n\n"
            "draft model qwen3-0.6B\n\n```text\nMaximum request concurrency:             1\n"
            "Output token throughput (tok/s):         47.35\n```\n")
    assert all("0.6b" not in str(v.get("model") or "").lower() for v in _figures(body, "text").values())


def test_a_column_per_precision_gives_each_figure_its_quantization():
    body = ("**Performance Metrics:** (unit: Tokens / second)\n\n| Engine | float32 | float16 | int8 |\n|---|---|---|---|\n"
            "| ctranslate | 35.23 ± 4.01 | 55.72 ± 16.66 | 35.73 ± 10.87 |\n")
    got = _figures(body)
    assert {k: v.get("quantization") for k, v in got.items()} == {35.23: "float32", 55.72: "float16", 35.73: "int8"}


# -- generalisations found on the fourth held-out set (tests/data/real-heldout4) -------------------

_RICH = ("```\n     Benchmark Comparison: vLLM vs SGL (Output Tokens/s)     \n"
         "┏━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━┳━━\ufffd\n"
         "┃ Input Tokens ┃ Output Tokens ┃    vLLM ┃    SGL ┃ Diff % ┃\n"
         "┡━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━╇━━\ufffd\n"
         "│         1000 │          2000 │ 1688.75 │ 426.47 │ 296.0% │\n"
         "│         5000 │          1000 │ 1138.18 │ 650.95 │  74.8% │\n"
         "└──────────────┴───────────────┴─────────┴────────┴──\ufffd\n"
         "                     Model: deepseek-r1\n\n"
         "     Benchmark Comparison: vLLM vs SGL (Output Tokens/s)     \n"
         "┏━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━┳━\ufffd\n"
         "┃ Input Tokens ┃ Output Tokens ┃    vLLM ┃     SGL ┃ Diff % ┃\n"
         "┡━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━╇━\ufffd\n"
         "│         1000 │          2000 │ 5522.25 │ 5320.85 │   3.8% │\n"
         "└──────────────┴───────────────┴─────────┴─────────┴─\ufffd\n"
         "                       Model: llama-3b\n```\n")


def test_a_rich_table_cut_at_the_terminal_width_is_read_with_the_model_printed_under_it():
    got = _figures(_RICH)
    assert {k: v.get("model") for k, v in got.items()} == {
        1688.75: "deepseek-r1", 426.47: "deepseek-r1", 1138.18: "deepseek-r1", 650.95: "deepseek-r1",
        5522.25: "llama-3b", 5320.85: "llama-3b"}


def test_a_phase_word_between_the_figure_and_its_unit():
    got = _figures("```\n[bench] code run 1/5: 800 tok in 25.3s (31.82 decode TPS, ttft 179ms)\n"
                   "[bench] prompt-processing run 1/1: 9980 prompt tok, 675.6 PP tok/s, ttft 14772ms\n```\n")
    assert (got[31.82]["phase"], got[675.6]["phase"]) == ("decode", "prefill")


def test_key_value_speeds_inside_a_log_line():
    got = _figures("```\n  warm-1     wall= 36.81s  ttft=   592ms  toks=1000  wall_TPS= 27.17  decode_TPS= 27.61\n```\n")
    assert (got[27.17]["phase"], got[27.61]["phase"]) == ("e2e", "decode")


def test_a_safetensors_file_names_its_model():
    body = (" -- Model: /models/llama-7b-4bit/llama-7b-4bit.safetensors\n -- Generating 128 tokens...\n"
            " ** Speed: 36.62 tokens/second\n")
    assert _figures(body, "text")[36.62].get("model") == "llama-7b"


def test_sgl_is_sglang():
    from scrapers.columns import split_engine

    assert split_engine("SGL v0.4.4") == ("SGLang", "0.4.4")
    got = _figures(_RICH)
    assert {v.get("engine") for k, v in got.items() if k in (426.47, 650.95, 5320.85)} == {"SGLang"}
    assert {v.get("engine") for k, v in got.items() if k in (1688.75, 1138.18, 5522.25)} == {"vLLM"}


def test_a_size_column_joins_the_model_name_moe_sizes_too():
    got = _figures("| Model | Size | Gen Speed (tok/s) |\n|---|---|---|\n| Llama 4 | 16x17B | 31.81 |\n"
                   "| Llama 3.3 | 70B | 31.33 |\n")
    assert (got[31.81]["model"], got[31.33]["model"]) == ("Llama 4 16x17B", "Llama 3.3 70B")


def test_an_engine_package_name_is_not_a_model():
    from scrapers.pagefacts import find_model

    assert find_model("official ggml.llamacpp WinGet build 9553, llama-cpp-python 0.2.90") is None
    assert find_model("the llama2.c-android-wrapper app on a Pixel") is None       # llama2.c is a program
    assert find_model("llama_cpp server with Llama-3-8B") == "Llama-3-8B"


def test_a_row_named_prompt_is_the_prompt_processing_speed():
    got = _figures(" | | not wired | wired\n---  | --- | ---\nprompt (16 toks)  | 2.35 toks/sec |  27.8 toks/sec\n"
                   "generation (100 toks) | 0.23 toks/sec | 4.7 toks/sec\n")
    assert {k: v["phase"] for k, v in got.items()} == {2.35: "prefill", 27.8: "prefill", 0.23: "decode", 4.7: "decode"}


def test_mlx_lm_generate_output_is_read():
    got = _figures("```\nPrompt: 17 tokens, 42.003 tokens-per-sec\nGeneration: 1687 tokens, 20.371 tokens-per-sec\n"
                   "Peak memory: 55.0 GB\n```\n")
    assert {k: (v["phase"], v.get("engine")) for k, v in got.items()} == {42.003: ("prefill", "MLX"),
                                                                          20.371: ("decode", "MLX")}
    assert got[20.371]["gen_tokens"] == 1687


def test_a_snake_case_unit_name_followed_by_its_value():
    got = _figures("[BENCHMARK] model_name llama_13b batch_size 1 latency(ms) 4409.816 tokens_per_sec 43.09 "
                   "generation_time(ms) 3751.546 generation_tokens_per_second 50.379\n", "text")
    assert set(got) == {43.09, 50.379} and got[50.379]["phase"] == "decode"


def test_total_tput_is_end_to_end():
    got = _figures("| Metric | conc=8 |\n|---|---|\n| Total tput/GPU (tok/s) | 148.6 |\n| Output tput/GPU (tok/s) | 74.6 |\n"
                   "| Input tput/GPU (tok/s) | 74.0 |\n")
    assert {k: v["phase"] for k, v in got.items()} == {148.6: "e2e", 74.6: "decode", 74.0: "prefill"}


def test_a_bare_family_name_takes_the_one_specific_model_the_page_names():
    body = ("# deepseek sglang h200 run\n\nWe ran DeepSeek R1 again.\n\n**Config:** DeepSeek-R1-0528 | SGLang v0.5.7\n\n"
            "| Metric | conc=8 |\n|---|---|\n| Output tput (tok/s) | 74.6 |\n")
    assert _figures(body)[74.6]["model"] == "DeepSeek-R1-0528"
    two = body.replace("We ran DeepSeek R1 again.", "We ran DeepSeek-V3 first.")
    assert _figures(two)[74.6]["model"] == "deepseek"     # two different ones: the page does not say which


def test_pp_per_s_and_tg_per_s_columns_are_speeds():
    got = _figures("| GPU | Model | Prompt Tokens | PP/s | TTFT | Generated Tokens | TG/s |\n|---|---|---|---|---|---|---|\n"
                   "| A6000-48GB | llama3.1:70b | 483 | 489.28 | 0.99 | 732 | 12.50 |\n")
    assert {k: v["phase"] for k, v in got.items()} == {489.28: "prefill", 12.5: "decode"}
    assert got[12.5]["model"] == "llama3.1:70b"


def test_a_log_line_with_a_timestamp_prefix_and_a_bare_unit_label():
    got = _figures("```\n[2026-01-16 13:51:08,668 INFO] Tokens per second: 291.0\nTokens/s: 12\n```\n")
    assert set(got) == {291.0, 12.0}


def test_a_size_cell_with_a_space_joins_without_it():
    got = _figures("| Model | Size | Performance (tok/s) |\n|---|---|---|\n| DeepSeek R1 | 1.5 B | 15 |\n| Qwen 2.5 | 0.5 B | 25 |\n")
    assert {v["model"] for v in got.values()} == {"DeepSeek R1 1.5B", "Qwen 2.5 0.5B"}


def test_list_items_take_the_model_on_their_own_line():
    got = _figures("Example speed (RTX 4090):\n\n- Vicuna 7B (GEMV kernel): 198.848 tokens/s\n"
                   "- Mistral 7B (GEMM kernel): 156.317 tokens/s\n- Mixtral 46.7B (GEMM kernel): 93 tokens/s\n")
    assert {k: v["model"] for k, v in got.items()} == {198.848: "Vicuna 7B", 156.317: "Mistral 7B", 93.0: "Mixtral 46.7B"}


def test_model_paths_lose_their_folders_modelscope_dots_and_quant_tails():
    from scrapers.tools.common import model_from_path

    assert model_from_path("/home/x/nm-testing/Qwen2___5-VL-72B-Instruct-quantized___w8a8") == "Qwen2.5-VL-72B-Instruct"
    assert model_from_path("~/models/mlx-community/Qwen3-0.6B-8bit") == "Qwen3-0.6B"
    assert model_from_path("Qwen/Qwen3-8B-AWQ") == "Qwen/Qwen3-8B-AWQ"     # a hub id is kept as given


def test_a_capitalised_word_between_family_and_size_belongs_to_the_name():
    from scrapers.pagefacts import find_model

    assert find_model("Nemotron Super 120B (5-bit): 36.4 tok/s at 4K") == "Nemotron Super 120B"
    assert find_model("Llama before 7B were slow") == "Llama"


def test_jetson_power_modes_and_clocks_are_stated_conditions():
    from scrapers.phrases import extract

    assert extract("the module configured in 25W power mode", strict=True)["power"][0] == "25W"
    assert extract("Jetson Orin NX 16GB (MAXN_SUPER mode)", strict=True)["power"][0] == "MAXN_SUPER"
    assert extract("Maximized clock speeds (`jetson_clocks`)", strict=True)["clocks"][0].startswith("Maximized clock")
    assert "power" not in extract("a 25W charger was nearby", strict=True)


def test_the_first_word_of_a_block_is_read_with_its_sentence():
    got = _figures("Prefill 50.53 token/s, Decode 10.11 token/s, on the test machine\n", "text")
    assert {k: v["phase"] for k, v in got.items()} == {50.53: "prefill", 10.11: "decode"}


def test_chinese_punctuation_and_words_next_to_cjk_characters():
    got = _figures("我测出来Prefill 50.53  token/s，Decode 10.11  token/s，测试机器\n", "text")
    assert {k: v["phase"] for k, v in got.items()} == {50.53: "prefill", 10.11: "decode"}
    kv = _figures("Prefill token/s（最高）：13.35\nDecode token/s：13.5\n", "text")
    assert {k: v["phase"] for k, v in kv.items()} == {13.35: "prefill", 13.5: "decode"}
    assert "最高" in kv[13.35]["headline_label"]


_RESULT_JSON = ('{\n  "model": "~/models/mlx-community/Qwen3-0.6B-8bit",\n  "hardware": {"chip": "M4 Pro", "memory_gb": 48.0},\n'
                '  "num_runs": 5,\n  "ttft_ms": {"mean": 74.6},\n  "tokens_per_second": {\n    "generation_mean": 284.21,\n'
                '    "generation_max": 285.50,\n    "processing_mean": 147.31,\n    "total_throughput": 274.84\n  },\n'
                '  "requests_per_second": 1.03\n}')


def test_a_pasted_result_json_of_no_known_tool_gives_one_entry_per_speed():
    got = _figures("Results from our script:\n\n```\n" + _RESULT_JSON + "\n```\n")
    assert {k: v["phase"] for k, v in got.items()} == {284.21: "decode", 285.5: "decode", 147.31: "prefill",
                                                       274.84: "e2e"}
    assert {v["model"] for v in got.values()} == {"Qwen3-0.6B"} and got[284.21]["n_runs"] == 5
    assert got[284.21]["hardware"] == "M4 Pro"
    r = scrapers.parse(_RESULT_JSON.encode(), kind="json", content_type="application/json")
    assert sorted(e.fields["headline_tps"] for e in r.entries) == [147.31, 274.84, 284.21, 285.5]
    assert all(e.selectors for e in r.entries)


def test_a_result_json_with_telemetry_lists_is_still_one_result():
    body = ('{"metadata": {"model": "llama3.2-1b"}, "benchmark_results": {"ttft_ms": 7879.98, "tokens_per_sec": 15.6},\n'
            ' "events": [{"name": "Start", "timestamp": "t"}], "timeseries": [{"temp_c": 37.1}, {"temp_c": 37.5}]}')
    r = scrapers.parse(body.encode(), kind="json", content_type="application/json")
    assert [(e.fields["headline_tps"], e.fields.get("model")) for e in r.entries] == [(15.6, "llama3.2-1b")]


def test_rows_named_after_benchmark_datasets_are_tests():
    got = _figures("| Dataset | Baseline tok/s | Eagle3 tok/s |\n|---|---|---|\n| HumanEval (75) | 130.2 | 231.8 |\n"
                   "| MT-Bench (154) | 129.2 | 207.1 |\n| Mean | 128.7 | 213.4 |\n")
    assert {k: v.get("test") for k, v in got.items()} == {130.2: "HumanEval", 231.8: "HumanEval", 129.2: "MT-Bench",
                                                          207.1: "MT-Bench", 128.7: "Mean", 213.4: "Mean"}
    plain = _figures("| Run | tok/s |\n|---|---|\n| first | 130.2 |\n| second | 129.2 |\n")
    assert all(v.get("test") is None for v in plain.values())


def test_a_weights_format_in_parentheses_is_not_part_of_the_model():
    got = _figures("| Model | Batch Size | Throughput (tokens/s) |\n|---|---|---|\n| Qwen3-0.6B (BF16) | 1 | 49.42 |\n"
                   "| Qwen3-4B (Q4_K_M) | 1 | 31.98 |\n")
    assert (got[49.42]["model"], got[31.98]["model"]) == ("Qwen3-0.6B", "Qwen3-4B")
    assert got[31.98]["quantization"] == "Q4_K_M"


def test_a_first_column_headed_category_or_workload_names_each_rows_test():
    got = _figures("| Category | Baseline output tok/s | EAGLE output tok/s |\n|---|---:|---:|\n| coding | 1237.55 | 1728.14 |\n"
                   "| math | 1275.36 | 1780.37 |\n")
    assert {k: v.get("test") for k, v in got.items()} == {1237.55: "coding", 1728.14: "coding", 1275.36: "math",
                                                          1780.37: "math"}


def test_alignment_rows_with_single_dashes_make_a_table():
    got = _figures("|  Batch Size  | Input Length | Output Length |Context (ms) | Decode (token/s) |\n"
                   "| :-: | :-: | :-: | :-:|:-: |\n|1   |     128       | 128      |   91      |   35.9     |\n")
    assert list(got) == [35.9] and got[35.9]["phase"] == "decode"


def test_a_plus_sign_for_a_spread_in_a_llama_bench_cell_and_zero_cells_skipped():
    from scrapers.meaning import cell_figure

    f = cell_figure("903.49 + 3.16")
    assert (f.value, f.spread) == (903.49, 3.16)
    assert cell_figure("10.5 + 20.1") is None       # not a spread: a sum, or two figures
    got = _figures("| Concurrency | Prompt Throughput (tokens/s) | Output Throughput (tokens/s) |\n|---|---|---|\n"
                   "| 1 | 0.00 | 12.5 |\n")
    assert list(got) == [12.5]


def test_theoretical_and_target_columns_are_not_measurements():
    from scrapers.columns import classify

    assert classify("Vmax (theoretical) tok/s").role != "tps"
    assert classify("Target tok/s").role != "tps"
    assert classify("Measured tok/s").role == "tps"


def test_model_cells_lose_inline_code_marks_run_conditions_and_diff_markers():
    got = _figures("| Model | Prefill | Decode |\n|---|---|---|\n| LFM2-350m (1K ctx) | 779 tok/s | 86 tok/s |\n"
                   "| LFM2-VL-450M (256px) | 512 tok/s | 85 tok/s |\n| `Gemma-4-E4B-it-GGUF` | 300 tok/s | 55.2 tok/s |\n")
    assert {v["model"] for v in got.values()} == {"LFM2-350m", "LFM2-VL-450M", "Gemma-4-E4B-it-GGUF"}


def test_prompt_tps_is_prefill():
    got = _figures("```\nTrial 1:  prompt_tps=1519.069, generation_tps=46.173, peak_memory=1.603\n```\n")
    assert {k: v["phase"] for k, v in got.items()} == {1519.069: "prefill", 46.173: "decode"}


def test_numbered_run_lines_count_the_runs():
    got = _figures("```\nTrial 1:  prompt_tps=1519.069, generation_tps=46.173\nTrial 2:  prompt_tps=1517.795, "
                   "generation_tps=46.148\nTrial 3:  prompt_tps=1528.789, generation_tps=46.121\n```\n")
    assert {v.get("n_runs") for v in got.values()} == {3}
    one = _figures("```\n[bench] code run 1/5: 800 tok in 25.3s (31.82 decode TPS, ttft 179ms)\n```\n")
    assert one[31.82]["n_runs"] == 5
    plain = _figures("```\nprompt_tps=1519.069, generation_tps=46.173\n```\n")
    assert all(v.get("n_runs") is None for v in plain.values())


def test_a_size_column_in_billions_and_a_placeholder_model_in_a_command():
    got = _figures("| Size (B) | Speed (T/s) | Model | Quant |\n|---|---|---|---|\n| 1.5 | 282 | qwen 2.5 | 4 |\n"
                   "| 12 | 35 | wayfarer | Q6_K |\n")
    assert {k: v["model"] for k, v in got.items()} == {282.0: "qwen 2.5 1.5B", 35.0: "wayfarer 12B"}
    body = ("```\nvllm bench serve --backend vllm --model M --num-prompts X --port 8000\n```\n```\n"
            "============ Serving Benchmark Result ============\nSuccessful requests:                     10\n"
            "Output token throughput (tok/s):         19.15\n==================================================\n```\n")
    assert _figures(body)[19.15].get("model") is None


def test_a_result_json_sweep_nested_in_the_document_gives_one_entry_per_row():
    body = json.dumps({"chip": {"name": "MTT S4000", "count": 1}, "environment": {"cpu": {"model": "Xeon Gold 6430"}},
                       "software": {"framework": "vllm-musa", "framework_version": "0.4.2"},
                       "model": {"model_id": "meta-llama/Meta-Llama-3-8B-Instruct"},
                       "metrics": {"offline": {"results_by_concurrency": [
                           {"client_concurrency": 8, "throughput_tokens_per_sec": 332.62,
                            "throughput_tokens_per_sec_per_chip": 332.62, "throughput_tokens_per_sec_total": 922.83},
                           {"client_concurrency": 32, "throughput_tokens_per_sec": 331.64,
                            "throughput_tokens_per_sec_per_chip": 331.64, "throughput_tokens_per_sec_total": 920.1}]}}},
                      indent=2)
    r = scrapers.parse(body.encode(), kind="json", content_type="application/json")
    got = {e.fields["headline_tps"]: e.fields for e in r.entries}
    assert set(got) == {332.62, 922.83, 331.64, 920.1}          # the per-chip restatements once
    assert (got[332.62]["phase"], got[922.83]["phase"]) == ("decode", "e2e")
    assert (got[332.62]["concurrency"], got[331.64]["concurrency"]) == (8, 32)
    assert got[332.62]["model"] == "meta-llama/Meta-Llama-3-8B-Instruct" and got[332.62]["hardware"] == "MTT S4000"
    assert (got[332.62]["engine"], got[332.62]["engine_version"]) == ("vllm-musa", "0.4.2")
    assert all(e.selectors for e in r.entries)


def test_a_column_named_after_a_speculative_method_is_that_method():
    got = _figures("| Category | Baseline output tok/s | EAGLE output tok/s (speedup) | EAGLE output tok/s/user |\n"
                   "|---|---:|---:|---:|\n| coding | 1237.55 | 1728.14 (1.40x) | 134.43 |\n")
    assert {k: v.get("spec_method") for k, v in got.items()} == {1237.55: None, 1728.14: "EAGLE", 134.43: "EAGLE"}
    assert got[134.43]["scope"] == "per_user"


def test_a_column_header_of_a_variant_and_a_card_gives_the_card():
    got = _figures("| Model | Size | V1: 3090Ti | V2: 4090 |\n|---|---|---|---|\n| Llama | 7B | 143 t/s | 195 t/s |\n")
    assert {k: v.get("hardware") for k, v in got.items()} == {143.0: "3090Ti", 195.0: "4090"}


def test_a_table_late_in_a_long_thread_takes_the_model_named_just_before_it():
    first = ("# Prompt speed\n\nalice · description · 2025-04-13\nWith Llama-3.3-70b, two 3090s process prompts "
             "7x faster than an M3 Max. " + "Is there anything to be done about it on this machine? " * 12 + "\n\n")
    later = ("bob · comment · 2025-04-29\nOn Qwen3-30B-A3B this is amazing, thanks!\n\nI pulled the latest commits.\n\n"
             "* MLX-LM: 0.24.0\n* Llama.cpp 5215 (5f5e39e1): all layers on the GPU.\n\n"
             "| Machine | Engine | Prompt Processing Speed | Token Generation Speed |\n| --- | --- | --- | --- |\n"
             "| M3Max | MLX | 1160.636 tok/s | 68.016 tok/s |\n")
    got = _figures(first + later)
    assert {v["model"] for v in got.values()} == {"Qwen3-30B-A3B"}


def test_koboldcpp_benchmark_csv_is_read():
    body = ("1.68 benchmark:\nTimestamp,Backend,Layers,Model,MaxCtx,GenAmount,ProcessingTime,ProcessingSpeed,"
            "GenerationTime,GenerationSpeed,TotalTime,Output,Flags\n2024-06-19 21:46:13.064748+00:00,koboldcpp_cublas.dll,"
            "81,Llama-3-70B-Instruct-abliterated-v3_q6,8192,100,79.72,101.50,15.95,6.27,95.67\n")
    got = _figures(body, "text")
    assert {k: v["phase"] for k, v in got.items()} == {101.5: "prefill", 6.27: "decode"}
    assert got[6.27]["model"] == "Llama-3-70B-Instruct-abliterated-v3" and got[6.27]["engine"] == "KoboldCpp"
    assert got[6.27]["context_length"] == 8192 and got[6.27]["gen_tokens"] == 100


def test_a_github_pages_repository_line_names_no_model():
    body = ("sudoingX/qwen38-mtp · pull request #53 · merged · Python\n# XTX row (85.4, n-max 3)\n\n"
            "pparuzel · description · 2026-08-18\nFirst Windows A/B.\n\n- spec-off baseline: overall median 41.0 tok/s\n")
    assert _figures(body, "text")[41.0].get("model") is None


def test_a_json_list_whose_speeds_are_statistics_takes_the_mean():
    body = json.dumps([{"model": "deepseek-v4-flash", "concurrency": c, "tokens_per_second":
                        {"average": a, "p50": a + 1, "p95": a - 5}} for c, a in ((1, 17.2), (10, 6.3))])
    r = scrapers.parse(body.encode(), kind="json", content_type="application/json")
    assert [(e.fields["headline_tps"], e.fields["concurrency"]) for e in r.entries] == [(17.2, 1), (6.3, 10)]


def test_model_name_lines_and_ollama_tags_and_versioned_names():
    from scrapers.context import MODEL_ARG
    from scrapers.pagefacts import find_model

    assert MODEL_ARG.search("model_name = mistral:7b").group(1) == "mistral:7b"
    assert MODEL_ARG.search("ollama run llama3:8b --verbose").group(1) == "llama3:8b"
    assert find_model("MiMo-V2.5 Pro on 8xB200") == "MiMo-V2.5"
    assert find_model("Kimi-K2 at 20 tok/s") == "Kimi-K2" and find_model("RTX-4090 card") is None


def test_a_build_commit_before_its_number_pins_and_a_bold_prompt_label_is_read():
    from scrapers.pagefacts import page_pin
    from scrapers.phrases import extract

    assert page_pin("llama.cpp Metal via the pre-built binaries (build 62061f910 (9591)).")[0] == "62061f910 (9591)"
    assert extract('**Prompt**: "Count to 5 and say hi"')["prompt"][0] == "Count to 5 and say hi"


def test_speeds_divided_by_something_are_not_speeds():
    got = _figures("| Model | Peak tok/s | tok/s per Active-B |\n|---|---|---|\n| Nemotron Nano 30B | 18,829 | 6,276 |\n\n"
                   "The NVFP4 variant achieves 5,192 tok/s per active-B on a single GPU, and 40 tok/s overall.\n")
    assert set(got) == {18829.0, 40.0}


def test_a_pasted_pipe_table_that_lost_its_alignment_row_is_read():
    got = _figures("| Model | W16A16 (TPS) | W8A16 (TPS) |\n| **Qwen3-4B-VL** | ~20.2 | ~35.5 |\n"
                   "| **Qwen2.5-3B-VL** | ~27.2 | ~45.2 |\n\nnext\n")
    assert {k: v["model"] for k, v in got.items()} == {20.2: "Qwen3-4B-VL", 35.5: "Qwen3-4B-VL", 27.2: "Qwen2.5-3B-VL",
                                                       45.2: "Qwen2.5-3B-VL"}
    assert _figures("| a | b |\n| c | d |\n| e | f |\n") == {}    # no numbers: not a table of figures


def test_prompt_and_new_tokens_per_second_a_test_in_a_label_and_sampler_lines():
    got = _figures("- Prompt processing (pp1024): 294.78 tokens/sec\n- Text generation (tg256): 27.67 tokens/sec\n", "text")
    assert {k: (v["phase"], v.get("test")) for k, v in got.items()} == {294.78: ("prefill", "pp1024"),
                                                                       27.67: ("decode", "tg256")}
    kv = _figures("Prompt tokens per second: 295.87 tps, New tokens per second: 4.85 tps\n", "text")
    assert {k: v["phase"] for k, v in kv.items()} == {295.87: "prefill", 4.85: "decode"}
    sampler = _figures("```\nllama_perf_sampler_print:    sampling time =      11,02 ms /   333 runs   (    0,03 ms per "
                       "token, 30206,82 tokens per second)\n```\n")
    assert sampler == {}


def test_a_number_before_a_unit_is_not_a_models_version():
    from scrapers.pagefacts import find_model

    assert find_model("Apple M1 llama 62 tokens/s") == "llama"
    assert find_model("Llama 3.1 8B is fast") == "Llama 3.1 8B"


def test_a_precision_column_with_its_unit_gives_each_column_its_quantization():
    got = _figures("| Model | W16A16 (TPS) | W8A16 (TPS) | W4A16 (TPS) |\n|---|---|---|---|\n| Qwen3-4B-VL | ~20.2 | ~35.5 | ~52.2 |\n")
    assert {k: v.get("quantization") for k, v in got.items()} == {20.2: "W16A16", 35.5: "W8A16", 52.2: "W4A16"}


def test_a_model_heading_names_the_model_of_its_sibling_sections():
    body = ("### Model: h2oai/h2ogpt-4096-llama2-7b-chat\n### Number of GPUs: 1\n\n| bits | gpus | generation speed [tokens/sec] |\n"
            "|---:|:---|---:|\n| 16 | 1 x NVIDIA GeForce RTX 4090 | 40.9252 |\n\n### Model: h2oai/h2ogpt-4096-llama2-13b-chat\n"
            "### Number of GPUs: 1\n\n| bits | gpus | generation speed [tokens/sec] |\n|---:|:---|---:|\n"
            "| 16 | 1 x NVIDIA GeForce RTX 4090 | 21.7 |\n")
    got = _figures(body)
    assert {k: v["model"] for k, v in got.items()} == {40.9252: "h2oai/h2ogpt-4096-llama2-7b-chat",
                                                       21.7: "h2oai/h2ogpt-4096-llama2-13b-chat"}


def test_a_figure_in_inline_code_before_its_unit():
    got = _figures("Achieved `meta-llama/Llama-2-7b-hf fp32`: `44.642857` tok/s (on A100).\n", "text")
    assert list(got) == [44.642857]


def test_a_gguf_quant_tail_after_a_dot_is_the_quantization():
    got = _figures("| model | test | t/s |\n|---|---|---|\n| Mixtral-8x22B-Instruct-v0.1.Q6_K | pp256 | 19.94 |\n")
    assert (got[19.94]["model"], got[19.94]["quantization"]) == ("Mixtral-8x22B-Instruct-v0.1", "Q6_K")
