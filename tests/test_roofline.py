"""The roofline library: the bound's arithmetic, the name readers, and the sourced tables."""

from __future__ import annotations

import ast
import csv
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from app.audit.roofline import (
    compute_bound,
    count_from_text,
    load_reference,
    match_accelerator,
    match_quant,
    parse_params,
)
from app.audit.roofline.data import DATA_DIR

PACKAGE = Path(__file__).resolve().parent.parent / "app" / "audit" / "roofline"
Q4_K_M = 4.8944  # llama.cpp's measured Q4_K_M average (tools/quantize/README.md)


# --- worked examples ---------------------------------------------------------------------------

def test_70b_fp8_on_one_h100_sxm():
    r = compute_bound(hardware="H100 SXM", gpu_count=1, model="Llama-3.3-70B-Instruct", quantization="FP8")
    # 3350 GB/s over 70.6e9 weights less the 1.051e9 input embedding (models.csv) x 1 byte: about 48
    assert r.bound_tps == pytest.approx(3350 / (70.6 - 1.051))
    assert round(r.bound_tps, 1) == 48.2
    assert r.missing == []
    assert r.inputs["accelerator"]["key"] == "nvidia-h100-sxm"
    assert r.inputs["accelerator"]["source"].startswith("https://www.nvidia.com/")
    assert r.inputs["params"]["active_b"] == 70.6 and r.inputs["params"]["embedding_b"] == 1.051
    assert r.inputs["bits_per_weight"]["value"] == 8
    assert r.ratio(96.3) == pytest.approx(2.0, rel=1e-3)


def test_moe_30b_a3b_q4_k_m_on_rtx_4090():
    r = compute_bound(hardware="NVIDIA GeForce RTX 4090 24GB", gpu_count=1,
                      model="Qwen3-30B-A3B-Instruct-2507-GGUF", quantization="Q4_K_M")
    # the model card's 3.3B active parameters, not the name's rounded 3B
    assert r.inputs["params"]["active_b"] == 3.3
    assert r.inputs["params"]["source"] == "https://huggingface.co/Qwen/Qwen3-30B-A3B"
    assert r.inputs["bits_per_weight"]["value"] == Q4_K_M
    expected = 1008e9 / (3.3e9 * Q4_K_M / 8)
    assert r.bound_tps == pytest.approx(expected)
    assert 495 < r.bound_tps < 505


def test_two_rtx_pro_6000_tensor_parallel():
    counted = compute_bound(hardware="2x RTX PRO 6000 Blackwell", gpu_count=None,
                            model="Llama-3.3-70B-Instruct", quantization="FP8")
    stated = compute_bound(hardware="RTX PRO 6000", gpu_count=2, model="Llama-3.3-70B-Instruct",
                           quantization="FP8")
    single = compute_bound(hardware="RTX PRO 6000", gpu_count=1, model="Llama-3.3-70B-Instruct",
                           quantization="FP8")
    assert stated.bound_tps == pytest.approx(2 * 1792 / (70.6 - 1.051))
    assert counted.bound_tps == pytest.approx(stated.bound_tps)
    assert stated.bound_tps == pytest.approx(2 * single.bound_tps)
    assert counted.inputs["gpu_count"] == 2
    assert any("read from the hardware text" in a for a in counted.assumptions)
    assert any("tensor parallel over 2" in a for a in stated.assumptions)


def test_llama_cpp_cpu_offload_split():
    offload = {"gpu_layers": 20, "total_layers": 95, "cpu": "dual-channel DDR5-6000"}
    r = compute_bound(hardware="RTX 4090", gpu_count=1, model="Qwen3-235B-A22B-Instruct-2507",
                      quantization="Q4_K_M", cpu_offload=offload)
    per_token = 22e9 * Q4_K_M / 8
    seconds = per_token * (20 / 95) / 1008e9 + per_token * (75 / 95) / 96e9
    assert r.bound_tps == pytest.approx(1 / seconds)
    assert r.inputs["cpu_memory"]["key"] == "cpu-ddr5-6000-2ch"
    # far below the all-in-VRAM figure: the CPU side dominates
    assert r.bound_tps < 0.15 * 1008e9 / per_token
    # a stated fraction and a stated bandwidth give the same answer
    same = compute_bound(hardware="RTX 4090", gpu_count=1, model="Qwen3-235B-A22B", quantization="Q4_K_M",
                         cpu_offload={"cpu_fraction": 75 / 95, "cpu_bandwidth_gbs": 96})
    assert same.bound_tps == pytest.approx(r.bound_tps)
    # -ngl 99 on a 49-layer model: nothing on the CPU side, no CPU figure needed
    full = compute_bound(hardware="RTX 4090", gpu_count=1, model="Qwen3-30B-A3B", quantization="Q4_K_M",
                         cpu_offload={"gpu_layers": 99, "total_layers": 49})
    assert full.missing == []
    assert full.bound_tps == pytest.approx(1008e9 / (3.3e9 * Q4_K_M / 8))


def test_offload_missing_pieces_are_reported():
    r = compute_bound(hardware="RTX 3090", gpu_count=1, model="Llama-3.3-70B", quantization="Q4_K_M",
                      cpu_offload={"gpu_layers": 40, "total_layers": 81, "cpu": "a potato"})
    assert r.bound_tps is None and r.missing == ["CPU memory bandwidth"]
    r = compute_bound(hardware="RTX 3090", gpu_count=1, model="Llama-3.3-70B", quantization="Q4_K_M",
                      cpu_offload={"gpu_layers": 40, "cpu": "dual-channel DDR4-3200"})
    assert r.missing == ["layer count (total_layers)"]


def test_weights_larger_than_memory_are_flagged():
    r = compute_bound(hardware="RTX 4090", gpu_count=1, model="Llama-3.3-70B", quantization="FP8")
    assert r.bound_tps is not None
    assert any("exceed their memory" in a for a in r.assumptions)


# --- missing inputs ------------------------------------------------------------------------------

def test_missing_inputs_are_named_and_nothing_is_guessed():
    r = compute_bound(hardware=None, gpu_count=None, model=None, quantization=None)
    assert r.bound_tps is None
    assert r.missing == ["hardware", "model parameters", "quantization"]
    assert r.ratio(100) is None


def test_quantization_is_not_assumed_bf16():
    r = compute_bound(hardware="H100 SXM", gpu_count=1, model="Llama-3.1-8B-Instruct", quantization=None)
    assert r.bound_tps is None and r.missing == ["quantization"]
    assert not any("bf16" in a.lower() for a in r.assumptions)
    named = compute_bound(hardware="H100 SXM", gpu_count=1, model="Llama-3.1-8B-Instruct-FP8",
                          quantization=None)
    assert named.bound_tps == pytest.approx(3350 / (8.03 - 0.525))
    assert any("read from the model name" in a for a in named.assumptions)
    unknown = compute_bound(hardware="H100 SXM", gpu_count=1, model="Llama-3.1-8B", quantization="zzz")
    assert unknown.missing == ["quantization"]
    assert any("'zzz' not recognised" in a for a in unknown.assumptions)


def test_unknown_hardware_and_model_are_missing():
    r = compute_bound(hardware="Frobnicator 9000", gpu_count=1, model="gpt-4o", quantization="FP8")
    assert r.missing == ["hardware", "model parameters"]


def test_gpu_count_none_is_one_with_an_assumption():
    r = compute_bound(hardware="RTX 4090", gpu_count=None, model="Llama-3.1-8B", quantization="Q8_0")
    assert r.inputs["gpu_count"] == 1
    assert "device count not stated: taken as 1" in r.assumptions
    with pytest.raises(ValueError):
        compute_bound(hardware="RTX 4090", gpu_count=0, model="Llama-3.1-8B", quantization="Q8_0")


def test_roofline_to_dict_is_json():
    r = compute_bound(hardware="M3 Max", gpu_count=None, model="Mixtral-8x7B", quantization="Q4_0")
    data = json.loads(json.dumps(r.to_dict()))
    assert data["bound_tps"] == pytest.approx(409.6 / (12.9 * 4.5 / 8))   # the exact M3 Max 40-core peak
    assert data["version"] == load_reference().version
    assert any("binning" in a for a in data["assumptions"])  # the unspecified M3 Max row says so


# --- names ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    ("2x RTX 4090", "nvidia-rtx-4090"),
    ("NVIDIA GeForce RTX 4090 24GB", "nvidia-rtx-4090"),
    ("rtx4090", "nvidia-rtx-4090"),
    ("H100 80GB SXM5", "nvidia-h100-sxm"),
    ("NVIDIA H100 80GB HBM3", "nvidia-h100-sxm"),
    ("H100 PCIe", "nvidia-h100-pcie"),
    ("8xH100", "nvidia-h100-unspecified"),
    ("A100-SXM4-40GB", "nvidia-a100-40gb"),
    ("M3 Max 40-core", "apple-m3-max-40c"),
    ("M3 Max", "apple-m3-max-unspecified"),
    ("MacBook Pro M3 Max 36GB", "apple-m3-max-30c"),
    ("Mac Studio M4 Max (16-core CPU, 40-core GPU, 128GB)", "apple-m4-max-40c"),
    ("Apple M2 Ultra (76-core)", "apple-m2-ultra"),
    ("M4 Pro Mac mini", "apple-m4-pro"),
    ("RTX 4070 Ti SUPER", "nvidia-rtx-4070-ti-super"),
    ("RX 7900 XTX", "amd-rx-7900-xtx"),
    ("Ryzen AI Max+ 395", "amd-strix-halo"),
    ("EPYC 9654, 12x DDR5-4800", "cpu-ddr5-4800-12ch"),
    ("Tenstorrent n300", "tenstorrent-n300"),
])
def test_match_accelerator(text, key):
    row = match_accelerator(text)
    assert row is not None and row.key == key


@pytest.mark.parametrize("text", ["RTX 4090 Laptop", "RTX 4090 D", "RTX 3060 Ti", "A10G", "", None])
def test_match_accelerator_refuses_other_products(text):
    assert match_accelerator(text) is None


def test_device_counts():
    assert count_from_text("2x RTX 4090") == 2
    assert count_from_text("8xH100") == 8
    assert count_from_text("RTX 3090 x2") == 2
    assert count_from_text("dual RTX 3090") == 2
    assert count_from_text("dual-channel DDR5-6000") is None
    assert count_from_text("EPYC 9654, 12x DDR5-4800") is None
    assert count_from_text("RTX 4090") is None


@pytest.mark.parametrize("text, bits, key", [
    ("Q4_K_M", Q4_K_M, "gguf-q4_k_m"),
    ("q4_k_m.gguf", Q4_K_M, "gguf-q4_k_m"),
    ("Q4_K - Medium", Q4_K_M, "gguf-q4_k_m"),
    ("UD-Q4_K_XL", Q4_K_M, "gguf-q4_k_m"),
    ("mostly Q4_0", 4.5, "gguf-q4_0"),
    ("Q8_0", 8.5, "gguf-q8_0"),
    ("IQ2_XXS - 2.0625 bpw", 2.06, "gguf-iq2_xxs"),
    ("4.0bpw", 4.0, "stated-bpw"),
    ("EXL2 6.5bpw", 6.5, "exl2"),
    ("AWQ", 4.156, "awq"),
    ("FP8", 8.0, "fp8"),
    ("NVFP4", 4.5, "nvfp4"),
    ("bf16", 16.0, "bf16"),
    ("GPTQ-Int8", 8.1875, "gptq-8bit"),
    ("mlx-community/Qwen3-30B-A3B-4bit", 4.5, "mlx-4bit"),
])
def test_match_quant(text, bits, key):
    assert match_quant(text) == (bits, key)


@pytest.mark.parametrize("text", ["Llama-3.1-8B-Instruct", "gpt-oss-20b", "GGUF", "", None])
def test_match_quant_none(text):
    assert match_quant(text) is None


@pytest.mark.parametrize("name, total, active", [
    ("70B", 70, 70),
    ("Llama-3.1-8B-Instruct", 8.03, 8.03),                # models.csv
    ("Qwen2.5-1.5B-Instruct", 1.5, 1.5),
    ("SmolLM2-500M", 0.5, 0.5),
    ("30B-A3B", 30, 3),
    ("Qwen3-30B-A3B-Instruct-2507-GGUF", 30.5, 3.3),   # models.csv: the card's figures
    ("Qwen3-235B-A22B", 235, 22),
    ("Mixtral-8x7B-Instruct-v0.1", 46.7, 12.9),           # models.csv
    ("Frobmix-8x7B", 56, 7),                              # approximate: N x M total, one expert active
    ("DeepSeek-R1", 671, 37),
    ("DeepSeek-R1-Distill-Qwen-32B", 32, 32),             # the name's size beats the R1 row
    ("deepseek-r1:7b", 7, 7),
    ("gpt-oss-20b", 21, 3.6),
    ("Llama-4-Scout-17B-16E-Instruct", 109, 17),
    ("Kimi-K2-Instruct", 1000, 32),
    ("GLM-4.5-Air", 106, 12),
    ("Phi-3-mini-4k-instruct", 3.8, 3.8),
])
def test_parse_params(name, total, active):
    found = parse_params(name)
    assert found is not None
    assert found[:2] == (total, active)
    assert found[2]


@pytest.mark.parametrize("name", ["Qwen2.5", "Llama-3.1", "gpt-4o", "Qwen2.5-Instruct-2507",
                                  "Mistral-Instruct-v0.1", "Phi-3-128k", "", None])
def test_parse_params_ignores_numbers_that_are_not_sizes(name):
    assert parse_params(name) is None


def test_parse_params_sources():
    assert parse_params("Qwen3-30B-A3B")[2] == "https://huggingface.co/Qwen/Qwen3-30B-A3B"
    assert "stated in the model name" in parse_params("Llama-3.2-11B")[2]


# --- the tables ----------------------------------------------------------------------------------

def test_every_row_of_every_table_has_a_source_url():
    ref = load_reference()
    for table in (ref.accelerators, ref.quant_formats, ref.models):
        assert table
        for row in table:
            assert re.match(r"^https?://\S+\.\S+", row.source), row.key
    for name in ("accelerators.csv", "quant_formats.csv", "models.csv"):
        with (DATA_DIR / name).open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                assert row["source"].startswith(("http://", "https://")), (name, row["key"])


def _copy_data(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    return target


@pytest.mark.parametrize("source", ["", "see the datasheet", "ftp://example.com/x"])
def test_a_row_without_a_source_url_is_refused(tmp_path, source):
    data = _copy_data(tmp_path)
    path = data / "models.csv"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"made-up-model,Made-Up-Model,10,10,{source},no page says so,,,\n")
    with pytest.raises(ValueError) as raised:
        load_reference(data)
    message = str(raised.value)
    assert "models.csv" in message and "made-up-model" in message and "line" in message


def test_load_reference_checks_every_file(tmp_path):
    data = _copy_data(tmp_path)
    rows = (data / "accelerators.csv").read_text(encoding="utf-8").splitlines()
    rows[1] = re.sub(r",https://[^,]+,", ",,", rows[1], count=1)
    (data / "accelerators.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"accelerators\.csv: row at line 2 \(nvidia-v100-16gb\): no source URL"):
        load_reference(data)


def test_version_is_the_data_version_file():
    ref = load_reference()
    assert ref.version == (DATA_DIR / "VERSION").read_text(encoding="utf-8").strip()
    assert re.fullmatch(r"\d{4}\.\d{1,2}\.\d+", ref.version)
    assert load_reference() is ref  # cached


def test_unspecified_rows_carry_the_highest_variant():
    ref = load_reference()
    for family, variants in {"nvidia-h100": ("pcie", "sxm", "nvl"), "nvidia-a100": ("40gb", "80gb-pcie", "80gb-sxm"),
                             "apple-m3-max": ("30c", "40c"), "apple-m4-max": ("32c", "40c")}.items():
        top = max(ref.accelerator(f"{family}-{v}").bandwidth_gbs for v in variants)
        assert ref.accelerator(f"{family}-unspecified").bandwidth_gbs == top


def test_the_package_imports_only_the_standard_library():
    allowed = set(sys.stdlib_module_names)
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: inside the package
                    continue
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed or name.startswith("app.audit.roofline"), (path.name, name)
        assert len(path.read_text(encoding="utf-8").splitlines()) < 300, path.name


def test_the_input_embedding_is_not_read_per_token_and_gpt_oss_experts_stay_mxfp4():
    # Qwen3.5-9B at Q4_K_M on an M4 (120 GB/s): the 1.017B input embedding out of 9B is not streamed
    r = compute_bound(hardware="M4", gpu_count=None, model="Qwen3.5-9B", quantization="Q4_K_M")
    assert r.bound_tps == pytest.approx(120 / ((9 - 1.017) * Q4_K_M / 8))
    assert any("input embedding table" in a for a in r.assumptions)
    # gpt-oss-20b "Q8_0": its 2.39B active expert weights stay MXFP4 (4.25 bits), the rest 8.5 bits
    g = compute_bound(hardware="Ryzen AI Max+ 395", gpu_count=None, model="gpt-oss-20b", quantization="Q8_0")
    per_token = ((3.6 - 2.39) * 8.5 + 2.39 * 4.25) / 8
    assert g.bound_tps == pytest.approx(g.inputs["accelerator"]["bandwidth_gbs"] / per_token)
    # at MXFP4 nothing changes: the fixed width is not narrower than the format's
    m = compute_bound(hardware="Ryzen AI Max+ 395", gpu_count=None, model="gpt-oss-20b", quantization="MXFP4")
    assert m.bound_tps == pytest.approx(m.inputs["accelerator"]["bandwidth_gbs"] / (3.6 * 4.25 / 8))
    # Nemotron-3-Nano-30B is a MoE its name does not say: 3.6B active, not 30B
    n = compute_bound(hardware="Ryzen AI Max+ 395", gpu_count=None, model="Nemotron-3-Nano-30B", quantization="Q4_K_M")
    assert n.inputs["params"]["row_key"] == "nemotron-3-nano-30b-a3b" and n.inputs["params"]["active_b"] == 3.6
