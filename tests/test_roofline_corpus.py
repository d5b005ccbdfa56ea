"""The memory-bandwidth bound (issue 28) on the labelled real corpora (tests/data/real*/), from the labels'
own fields (model, hardware, gpu_count, quantization): no parser runs.

- how many decode entries get a bound, and which of them exceed it (the table in docs/audit.md);
- no entry labelled as a clean per-user, non-speculative decode figure may exceed its bound: a false
  alarm there means wrong reference data or a wrong formula, to be fixed there, never with a margin;
- the seed's 1,004.9 tok/s rung (GLM-5.3-Flash, 2x RTX PRO 6000, NVFP4, 64-token draft) gets the
  speculative (low) case of ``beyond_bandwidth_limit``, and says which input is missing without a size.

    .venv/bin/python tests/test_roofline_corpus.py     # the table
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.audit.roofline import compute_bound, load_reference  # noqa: E402
from app.audit.rules import run_rules  # noqa: E402

CORPORA = sorted(p for p in (ROOT / "tests" / "data").glob("real*") if (p / "labels").is_dir())
# label flags that say the figure is not one plain stream: speculation, aggregation, replay
NOT_PLAIN = {"aggregate_as_single_stream", "full_acceptance", "repeat_loop", "ladder_top_rung",
             "proposer_not_in_command", "headline_above_steady_state"}


def decode_entries():
    for corpus in CORPORA:
        for path in sorted((corpus / "labels").glob("*.json")):
            for e in json.loads(path.read_text(encoding="utf-8"))["entries"]:
                if e.get("phase") == "decode":
                    yield corpus.name, path.name.removesuffix(".json"), e


def clean(e: dict) -> bool:
    """Labelled as one plain stream: no speculative or aggregate flag, no speculation, per user, c1."""
    return (not set(e.get("flags") or []) & NOT_PLAIN and e.get("spec_method") is None
            and not e.get("draft_tokens") and e.get("scope") == "per_user" and e.get("concurrency") in (None, 1))


def devices(e: dict) -> tuple[int | None, bool]:
    """(device count, known) from the label: its ``gpu_count``; else the count the label's own words give for
    its hardware ("the same 4x 16GB V100 machine"); a label that says the figure is tensor parallel with no
    count leaves the count unknown (taking 1 would make the bound several times too low); else None, which
    the bound reads as one device."""
    if e.get("gpu_count"):
        return e["gpu_count"], True
    text = " ".join(str(e.get(k) or "") for k in ("where", "note"))
    hw = e.get("hardware") or ""
    if hw and (m := re.search(r"(\d+)\s*[x\u00d7]\s*(?:\d+\s*GB\s+)?" + re.escape(hw) + r"\b", text, re.IGNORECASE)):
        return int(m.group(1)), True
    if re.search(r"tensor[- ]parallel", text, re.IGNORECASE):
        return None, False
    return None, True


def bound(e: dict):
    return compute_bound(hardware=e.get("hardware"), gpu_count=devices(e)[0], model=e.get("model"),
                         quantization=e.get("quantization"))


@lru_cache(maxsize=1)
def survey() -> dict:
    rows, computed, over, count_unknown = 0, 0, [], 0
    for corpus, page, e in decode_entries():
        rows += 1
        if not devices(e)[1]:
            count_unknown += 1
            continue
        try:
            r = bound(e)
        except ValueError:
            continue
        if r.bound_tps is None:
            continue
        computed += 1
        ratio = r.ratio(e["figure"])
        if ratio > 1:
            over.append({"corpus": corpus, "page": page, "figure": e["figure"], "bound": r.bound_tps, "ratio": ratio,
                         "model": e.get("model"), "hardware": e.get("hardware"), "gpu_count": devices(e)[0],
                         "quantization": e.get("quantization"), "scope": e.get("scope"),
                         "concurrency": e.get("concurrency"), "spec_method": e.get("spec_method"),
                         "clean": clean(e), "entry": e})
    return {"decode": rows, "computed": computed, "over": over, "count_unknown": count_unknown}


def test_the_bound_is_computed_for_a_share_of_the_decode_entries():
    s = survey()
    assert s["decode"] > 1000
    assert s["computed"] >= 0.3 * s["decode"], s["computed"]     # measured: docs/audit.md


# Clean-labelled figures that are physically impossible as the page states them: the label is right (it is
# what the page claims), the claim is not. Each exceeds the bound for its stated hardware, model and precision,
# and the page's own words show it cannot be one stream's plain decode (docs/audit.md gives the arithmetic).
# The rule must flag each critical; any OTHER clean entry above its bound fails the test (wrong data or a
# wrong formula, to be fixed there, never with a margin or by adding it here without that proof).
_VIVI = ("real-heldout", "card-vivi-buddy-real-world-benchmarks.md")
_VIVI_WHY = ("the card's own tables: 'RTX 5090 (32GB GDDR7, 1.79 TB/s)' and 'Llama 3.1 70B Q4 doesn't fit (requires "
             "~48GB with 2k context)', 'M3 Max (128GB, 400 GB/s)': figures above what the stated bandwidth can stream, "
             "on a card whose 70B rows need more memory than the card it names")
IMPOSSIBLE = {
    (*_VIVI, 55): "'Llama 3.1 70B | Q4_K_M | llama.cpp | ~55' on 'RTX 5090 (32GB GDDR7, 1.79 TB/s)': ~43 GB of weights "
                  "do not fit in 32 GB, and 1,792 GB/s over them allows 42",
    (*_VIVI, 62): "'Llama 3.1 70B | Q4_K_M | ExLlamaV2 | ~62' on the same 32 GB RTX 5090: 42 at most",
    (*_VIVI, 12): "'Llama 3.1 405B | Q3_K_M | llama.cpp | ~12 | Requires offloading or Q2' on one RTX 5090: even all "
                  "~200 GB in its VRAM would allow 8.9; offloaded to CPU memory, far less",
    (*_VIVI, 45): "'Llama 3.1 70B | Q4_K_M | llama.cpp | ~45 | Fits 16 GB VRAM with off-loading' on an RTX 5080: 960 "
                  "GB/s over ~43 GB allows 22.6 even with no off-loading; off-loading only lowers it",
    (*_VIVI, 60): "'Qwen 2.5 32B Q4_K_M ~60' on a 16 GB RTX 5080: 19.4 GB read per token at 960 GB/s allows 49.5 "
                  "(and 19.9 GB of weights do not fit in 16 GB)",
    (*_VIVI, 65): "'Qwen 2.5 32B Q4_K_M ~65' on an RTX 3090 (936 GB/s): 51.9 at most",
    (*_VIVI, 75): "'Qwen 2.5 32B Q4_K_M ~75' on an RTX 3090 / 3090 Ti (1,008 GB/s for the Ti), and '32-34B Q4_K_M ~75' "
                  "on an RTX 4090 (1,008 GB/s): 51.9 and 48.5 at most",
    (*_VIVI, 25): "'Llama 3.1 70B | Q5_K_M | ~25' on M5 Max (614 GB/s): 12.4 at most",
    (*_VIVI, 30): "'Llama 3.1 70B | Q4_K_M | ~30' on M5 Max (614 GB/s): 14.4 at most",
    (*_VIVI, 22): "'Llama 3.1 70B | Q5_K_M | ~22' on M4 Max (546 GB/s): 11.0 at most",
    (*_VIVI, 27): "'Llama 3.1 70B | Q4_K_M | ~27' on M4 Max (546 GB/s): 12.8 at most",
    (*_VIVI, 26): "'Qwen 2.5 72B Q4_K_M ~26' on M4 Max (546 GB/s): 12.5 at most",
    (*_VIVI, 28): "'Llama 3.1 70B | Q6_K | ~28 | Bandwidth king' on M2 Ultra (819.2 GB/s): 14.4 at most",
    (*_VIVI, 6): "'Llama 3.1 405B Q3_K_M ~6' on M2 Ultra (819.2 GB/s): 4.1 at most",
    (*_VIVI, 8): "'Llama 3.1 405B Q4_K_M ~8' on M2 Ultra: 3.3 at most (and ~245 GB of weights exceed its 192 GB)",
    (*_VIVI, 24): "'Llama 3.1 70B | Q4_K_M | ~24' on 'M3 Max (128GB, 400 GB/s)': 9.6 at most at the exact 409.6 GB/s",
    (*_VIVI, 110): "'Llama 3.1 8B Q4_K_M ~110' on M3 Max (409.6 GB/s): 4.6 GB read per token allows 89.2",
    (*_VIVI, 35): "'Qwen 2.5 32B Q4_K_M ~35' on M1 Max (409.6 GB/s): 21.1 at most",
    (*_VIVI, 100): "'Llama 3.1 8B Q4_K_M ~100' on M1 Max (409.6 GB/s): 89.2 at most",
    (*_VIVI, 50): "'Qwen 2.5 32B Q4_K_M ~50' on an RX 7900 XTX (960 GB/s): 19.4 GB of weights read per token (a "
                  "Q4_K_M file of it is 19.85 GB, 0.44 GB of which is the input embedding) allow 49.5, and the page's "
                  "'Context: 2048 tokens (pre-filled)' adds 0.54 GB of KV cache per token: 48.1. 1 % above the "
                  "weights-only bound: the narrowest case here, impossible only with the page's own context",
    ("real-heldout10", "web-promptquorum-llamacpp-ollama-vllm-excerpt.txt", 38.0):
        "'Benchmarked on RTX 4090 24 GB, Llama 3.3 70B Q4_K_M, single request': 38 tok/s; ~43 GB of weights (the "
        "page's own 'VRAM Used 41 GB' for vLLM) do not fit in 24 GB, and 1,008 GB/s over them allows 23.7",
    ("real-heldout10", "web-promptquorum-llamacpp-ollama-vllm-excerpt.txt", 36.0): "the same table: 36 tok/s, 23.7 at most",
    ("real-heldout10", "web-promptquorum-llamacpp-ollama-vllm-excerpt.txt", 34.0):
        "the same table: 'vLLM | 34 | 29 | 41 GB' on a 24 GB card, 23.7 at most",
    ("real-heldout17", "web-gigagpu-llama3-8b-gptq-awq-gguf-six-gpus-excerpt.txt", 32.0):
        "'RTX 4060 Ti | 16 GB | 32' in the FP16 column, and the page's own 'FP16 | 16.1 GB | 16.5 GB (idle)': the "
        "FP16 weights do not fit in 16 GB, and 288 GB/s over 15 GB allows 19.2",
    ("real-heldout17", "web-gigagpu-llama3-8b-gptq-awq-gguf-six-gpus-excerpt.txt", 68.0):
        "'RTX 5080 | 16 GB | 68' in the FP16 column: 16.5 GB idle on a 16 GB card, and 960 GB/s over 15 GB allows 64",
    ("real-heldout3", "results-premai-llama2-engines.md", 90.78):
        "'A100 80GB Inference Bench', 'vllm | 90.78 ± 1.60 | 90.54 ± 2.22' in the float32 and float16 columns: "
        "float32 Llama-2-7B reads 26.4 GB per token, 77.1 at 2,039 GB/s; the float32 column equals the float16 one, "
        "so it is not what ran",
    ("real-heldout3", "results-premai-llama2-engines.md", 110.36):
        "'Optimum Nvidia | 110.36 ± 0.52 | 109.09 ± 4.26': float32 allows 77.1; again equal to the float16 figure",
}


def _key(o: dict) -> tuple:
    return (o["corpus"], o["page"], o["figure"])


def test_no_clean_per_user_figure_exceeds_its_bound():
    over = [o for o in survey()["over"] if o["clean"]]
    bad = [o for o in over if _key(o) not in IMPOSSIBLE]
    assert not bad, "\n".join(f"{o['corpus']}/{o['page']}: {o['figure']} > {o['bound']:.1f} ({o['model']}, "
                              f"{o['hardware']} x{o['gpu_count']}, {o['quantization']})" for o in bad)
    assert {_key(o) for o in over} == set(IMPOSSIBLE), "an impossible claim no longer exceeds: remove it"


def test_the_rule_flags_each_impossible_claim():
    """Evidence the rule works: each documented impossible claim, run through the rules from its label's
    fields, gets a critical ``beyond_bandwidth_limit``."""
    over = {_key(o): o for o in survey()["over"] if o["clean"]}
    for key in IMPOSSIBLE:
        e = over[key]["entry"]
        fields = {k: e.get(k) for k in ("model", "hardware", "engine", "quantization", "phase", "scope",
                                         "concurrency", "test")}
        fields.update(gpu_count=devices(e)[0], headline_tps=e["figure"])
        found = {f.rule: f for f in run_rules(fields)}
        assert found["beyond_bandwidth_limit"].severity == "critical", key


def test_a_tensor_parallel_figure_without_a_device_count_gets_no_bound():
    s = survey()
    assert s["count_unknown"] == 2       # gpt-fast's 70B rows: 'the number of GPUs is not stated in the text'
    v100 = {"hardware": "V100", "gpu_count": None, "note": "on the same 4x 16GB V100 machine (tensor parallel size "
                                                             "not stated -> gpu_count null)"}
    assert devices(v100) == (4, True)
    assert devices({"hardware": "A100-80GB", "note": "Tensor parallel across several GPUs"}) == (None, False)


def test_the_clean_check_can_fail():
    e = {"phase": "decode", "scope": "per_user", "concurrency": 1, "spec_method": None, "flags": [],
         "model": "Llama-3.3-70B-Instruct", "hardware": "H100 SXM", "gpu_count": 1, "quantization": "FP8"}
    assert clean(e) and bound(e).ratio(120.0) > 2     # 120 tok/s would be flagged by the test above
    assert not clean(dict(e, flags=["full_acceptance"])) and not clean(dict(e, scope="aggregate"))


SEED = dict(model="GLM-5.3-Flash", hardware="RTX PRO 6000 Blackwell", gpu_count=2, engine="SGLang",
            quantization="NVFP4", phase="decode", scope="per_user", concurrency=1, draft_tokens=64,
            spec_method="n-gram", headline_tps=1004.9, steady_low=373, steady_high=391)


def _seed_label() -> dict:
    label = json.loads((ROOT / "tests/data/real/labels/000_0610243c6a26dc31.txt.json").read_text(encoding="utf-8"))
    return next(e for e in label["entries"] if e["figure"] == 1004.9)


def test_the_seed_rung_is_the_speculative_case_with_its_ratio():
    lab = _seed_label()
    assert {k: lab[k] for k in ("model", "hardware", "gpu_count", "quantization")} == {
        k: SEED[k] for k in ("model", "hardware", "gpu_count", "quantization")}
    found = {f.rule: f for f in run_rules(SEED, {"headline_tps": "1,004.9"})}
    f = found["beyond_bandwidth_limit"]
    assert f.severity == "low" and "effective number of tokens accepted per target step" in f.explanation
    n = f.numbers
    # 2 x 1,792 GB/s over 18B active parameters at NVFP4's 4.5 bits: 10.125 GB a token, 354 tok/s
    assert abs(n["bound_tps"] - 354.0) < 0.5 and abs(n["ratio"] - 2.84) < 0.01
    assert n["inputs"]["params"]["source"].startswith("https://") and n["inputs"]["accelerator"]["source"]
    assert n["inputs"]["bits_per_weight"]["source"] and n["assumptions"]
    assert f.quotes == [{"field": "headline_tps", "text": "1,004.9"}]
    # without the speculation it says, the same figure is critical
    plain = {k: v for k, v in SEED.items() if k not in ("draft_tokens", "spec_method")}
    assert {f.rule: f for f in run_rules(plain)}["beyond_bandwidth_limit"].severity == "critical"
    # an aggregate figure, or one under the bound, is not judged
    assert "beyond_bandwidth_limit" not in {f.rule for f in run_rules(dict(plain, scope="aggregate"))}
    assert "beyond_bandwidth_limit" not in {f.rule for f in run_rules(dict(plain, headline_tps=300.7))}


def test_without_the_models_size_the_seed_says_the_parameter_count_is_missing():
    ref = load_reference()
    unknown = dataclasses.replace(ref, models=tuple(m for m in ref.models if m.key != "glm-5.3-flash"))
    r = compute_bound(hardware=SEED["hardware"], gpu_count=2, model=SEED["model"], quantization="NVFP4", ref=unknown)
    assert r.bound_tps is None and r.missing == ["model parameters"]


def table() -> str:
    s = survey()
    lines = [f"decode entries: {s['decode']}, with a bound: {s['computed']}, above it: {len(s['over'])} "
             f"(clean per-user: {sum(o['clean'] for o in s['over'])}, all documented impossible claims: "
             f"{all(_key(o) in IMPOSSIBLE for o in s['over'] if o['clean'])}); tensor parallel with no count: "
             f"{s['count_unknown']}", ""]
    for o in s["over"]:
        lines.append(f"{o['corpus']}/{o['page']} {o['figure']} / {o['bound']:.1f} = {o['ratio']:.2f}x  {o['model']} | "
                     f"{o['hardware']} x{o['gpu_count']} | {o['quantization']} | {o['scope']} c{o['concurrency']} "
                     f"spec {o['spec_method']} {'CLEAN' if o['clean'] else ''}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
