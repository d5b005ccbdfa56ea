"""Unit tests for scrapers/numbers.py and scrapers/columns.py: numbers and column names as people write them."""

from __future__ import annotations

import pytest

from scrapers.columns import classify, find_quant, split_engine, split_hardware
from scrapers.columns import test_sizes as sizes_of_test
from scrapers.numbers import parse_int, parse_number, parse_range, parse_rate, parse_tokens, read, to_float


@pytest.mark.parametrize("text,value", [
    ("1,004.9", 1004.9), ("~55", 55.0), ("≈ 55", 55.0), ("about 55", 55.0), ("131.42 ± 0.59", 131.42),
    ("56.4 %", 56.4), ("5000 of 5000", 5000.0), ("87,5", 87.5), ("1.004,9", 1004.9), ("1,115,904", 1115904.0),
    ("3 021,4", 3021.4), ("1\u202f004.9", 1004.9), ("**308.1**", 308.1), ("212.6 tok/s", 212.6), ("42 t/s", 42.0),
])
def test_parse_number(text, value):
    assert parse_number(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["fast!", "", "n/a", "PASS 30 / FAIL 0", "v0.11"])
def test_parse_number_refuses(text):
    assert parse_number(text) is None


def test_thousands_comma_versus_decimal_comma():
    assert to_float("1,004") == 1004.0
    assert to_float("1,004", decimal_comma=True) == pytest.approx(1.004)
    assert to_float("118,6") == pytest.approx(118.6)


@pytest.mark.parametrize("text,rng", [("373 to 391", (373, 391)), ("373–391", (373, 391)), ("373-391", (373, 391)),
                                      ("380 – 395", (380, 395)), ("~380", (380, 380)), ("1,180 - 1,220", (1180, 1220))])
def test_parse_range(text, rng):
    assert parse_range(text) == rng


def test_read_forms():
    pm = read("131.42 ± 0.59")
    assert (pm.form, pm.value, pm.spread) == ("pm", 131.42, 0.59)
    ratio = read("64/1.00")
    assert ratio.form == "ratio" and ratio.ratio == (64.0, 1.0)
    lst = read("87.5 / 219.3 / 308.1")
    assert lst.form == "list" and lst.values == [87.5, 219.3, 308.1]
    assert read("~55").approx is True
    assert read("5000 of 5000").of == (5000.0, 5000.0)
    assert read("373 to 391").form == "range"
    assert read("373 to 300").form == "none"   # a range must go up


@pytest.mark.parametrize("text,rate", [("0.564", 0.564), ("56.4 %", 0.564), ("56.4", 0.564), ("64/1.00", 1.0),
                                       ("282 of 500", 0.564)])
def test_parse_rate(text, rate):
    assert parse_rate(text) == pytest.approx(rate)


def test_tokens_and_ints():
    assert parse_tokens("8k") == 8192 and parse_tokens("128K") == 131072 and parse_tokens("32,768") == 32768
    assert parse_int("2x") == 2 and parse_int("64") == 64 and parse_int("2.5") is None


@pytest.mark.parametrize("header,role,field", [
    ("tok/s", "tps", None), ("t/s", "tps", None), ("Tokens per second", "tps", None), ("TPS", "tps", None),
    ("Fastest t/s", "tps", None), ("Decode (tokens/s)", "tps", None), ("tg128 t/s", "tps", None),
    ("tokSOut", "tps", None), ("avg_ts", "tps", None), ("Steady state (tok/s)", "steady", None),
    ("GPU", "field", "hardware"), ("Hardware", "field", "hardware"), ("Accelerator", "field", "hardware"),
    ("Chip", "field", "hardware"), ("gpuName", "field", "hardware"), ("GPUs", "field", "gpu_count"),
    ("Model", "field", "model"), ("hfId", "field", "model"), ("LLM", "field", "model"),
    ("Engine", "field", "engine"), ("Runtime", "field", "engine"), ("engineName", "field", "engine"),
    ("Quant", "field", "quantization"), ("Weights", "field", "quantization"), ("Quantisation", "field", "quantization"),
    ("Notes", "field", "notes"), ("Comments", "field", "notes"), ("Remarks", "field", "notes"),
    ("Thanks to", "field", "submitter"), ("Submitted by", "field", "submitter"), ("Commit", "field", "engine_commit"),
    ("build_commit", "field", "engine_commit"), ("Build", "field", "engine_commit"), ("TP", "field", "tp"),
    ("Draft tokens", "field", "draft_tokens"), ("specDraftTokens", "field", "draft_tokens"),
    ("Acceptance", "field", "acceptance_rate"), ("Accept length", "field", "acceptance_length"),
    ("Batch size", "field", "concurrency"), ("Concurrency", "field", "concurrency"), ("Context", "field", "context_length"),
    ("Version", "field", "engine_version"), ("Date", "field", "date"), ("Command", "field", "command"),
    ("Memory", "extra", None), ("#", "extra", None), ("Region", "extra", None),
])
def test_classify(header, role, field):
    col = classify(header)
    assert (col.role, col.field) == (role, field)


def test_classify_tps_details():
    assert classify("pp512 t/s").test == "pp512" and classify("pp512 t/s").phase == "prefill"
    assert classify("tg128 t/s").phase == "decode"
    assert classify("Fastest t/s").peak is True
    assert classify("Prompt processing (t/s)").phase == "prefill"


def test_value_splitters():
    assert split_hardware("2x RTX PRO 6000 Blackwell") == (2, "RTX PRO 6000 Blackwell")
    assert split_hardware("H200 ×8") == (8, "H200")
    assert split_hardware("NVIDIA GeForce RTX 4090") == (None, "NVIDIA GeForce RTX 4090")
    assert split_hardware("RTX 5090") == (None, "RTX 5090")
    assert split_engine("SGLang 0.5.4") == ("SGLang", "0.5.4")
    assert split_engine("vLLM v0.11.0") == ("vLLM", "0.11.0")
    assert split_engine("llama.cpp") == ("llama.cpp", None)
    assert find_quant("llama 7B mostly Q4_0") == "Q4_0"
    assert find_quant("Qwen3-30B-A3B-FP8") == "FP8"
    assert find_quant("GLM-5.3-Flash") is None
    assert sizes_of_test("pp512+tg128") == (512, 128)
