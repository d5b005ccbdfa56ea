"""Every rule, positive and negative, on cases taken from the seed corpus and the field notes."""

from __future__ import annotations

import pytest

from app.audit.rules import RULES, RULESET_VERSION, Context, Rung, Steady, run_rules
from app.audit.rules.repetition import periodic

# The seed's GLM-5.3-Flash entry (000_0610243c6a26dc31.txt, sections 1 and 7), as a parser gives it.
GLM_NOTES = "acceptance 64/1.00 on locked attractor"
GLM = dict(
    model="GLM-5.3-Flash", hardware="RTX PRO 6000 Blackwell", gpu_count=2, engine="SGLang", quantization="NVFP4",
    tp=2, concurrency=1, context_length=8192, spec_method="block draft", draft_tokens=64,
    proposer="32-gram cyclic tiling", acceptance_rate=1.0, headline_tps=1004.9, steady_low=373.0, steady_high=391.0,
    notes=GLM_NOTES, clocks="locked", power="450 W", prompt_tokens=403,
    command="python -m sglang.launch_server --model-path glm --tp 2 --speculative-algorithm BLOCK "
            "--speculative-num-draft-tokens 64",
)
GLM_QUOTES = {"notes": GLM_NOTES, "headline_tps": "1,004.9", "steady_low": "373 to 391",
              "steady_high": "373 to 391", "draft_tokens": "64"}
LADDER = [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]


def glm_ctx() -> Context:
    return Context(entry_id=6, ladder=[Rung(i + 1, k, t) for i, (k, t) in enumerate(LADDER)],
                   steady=[Steady(6, 373.0, 391.0, "373 to 391")])


# A clean llama-bench row (FIELD-NOTES): 5 repetitions with spread, pinned build, long enough.
CLEAN = dict(model="llama 7B mostly Q4_0", hardware="RTX 4090", gpu_count=1, engine="llama.cpp",
             engine_commit="b4567", test="tg512", gen_tokens=512, context_length=32768, headline_tps=131.42,
             spread=0.59, n_runs=5, concurrency=1, headline_label="t/s", prompt="Write an essay on Roman roads.")


def fired(fields, ctx=None, quotes=None) -> dict:
    return {f.rule: f for f in run_rules(fields, quotes or {}, ctx or Context())}


def assert_finding(finding, rule_id):
    """A positive case: the rule fired, explains itself, and shows evidence (numbers or quotes)."""
    assert finding is not None, f"{rule_id} did not fire"
    assert finding.rule == rule_id and finding.explanation.strip()
    assert finding.numbers or finding.quotes, f"{rule_id} fired without evidence"
    for q in finding.quotes:
        assert q["text"].strip() and q["field"]


def check(rule_id, fields, ctx=None, quotes=None):
    return RULES[rule_id].run(fields, quotes or {}, ctx or Context())


def test_ruleset_has_every_public_rule_with_severity():
    expected = {
        "full_acceptance": "critical", "repeat_loop": "critical", "headline_above_steady_state": "high",
        "ladder_top_rung": "high", "repetitive_prompt": "high", "best_of": "high",
        "aggregate_as_single_stream": "high", "arithmetic_mismatch": "high", "single_run": "medium",
        "unpinned_build": "medium", "proposer_not_in_command": "medium", "lossy_setting": "medium",
        "short_shape": "low", "clocks_or_power": "low",
    }
    assert {k: RULES[k].severity for k in expected} == expected
    assert all(r.explanation and "\n" not in r.explanation for r in RULES.values())
    assert RULESET_VERSION


def test_seed_glm_entry_raises_the_four_headline_flags():
    got = fired(GLM, glm_ctx(), GLM_QUOTES)
    for rule in ("full_acceptance", "repeat_loop", "headline_above_steady_state", "ladder_top_rung"):
        assert rule in got, rule
    ratio = got["headline_above_steady_state"].numbers
    assert (ratio["ratio_to_low"], ratio["ratio_to_high"]) == (2.69, 2.57)
    assert got["repeat_loop"].quotes == [{"field": "notes", "text": GLM_NOTES}]
    assert list(got)[0] in ("full_acceptance", "repeat_loop")  # most severe first
    assert "proposer_not_in_command" in got and "unpinned_build" in got and "clocks_or_power" in got


def test_clean_row_raises_nothing():
    assert fired(CLEAN) == {}


# -- full_acceptance -------------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"acceptance_rate": 0.995},
    {"accepted_tokens": 5000, "drafted_tokens": 5000},
    {"acceptance_length": 5.00, "draft_tokens": 4},  # vLLM #55605: mean length 5.00 at k=4
    {"per_position_rates": [1.0, 1.0, 1.0, 1.0]},
    {"notes": "acceptance 64/1.00 on locked attractor"},
])
def test_full_acceptance_positive(fields):
    assert_finding(check("full_acceptance", fields), "full_acceptance")


@pytest.mark.parametrize("fields", [
    {"acceptance_rate": 0.564, "accepted_tokens": 282, "drafted_tokens": 500},  # llama.cpp server log
    {"acceptance_length": 3.2, "draft_tokens": 4, "per_position_rates": [0.9, 0.7, 0.5, 0.3]},
    {"notes": "acceptance 64/0.61 on prose"},
])
def test_full_acceptance_negative(fields):
    assert check("full_acceptance", fields) is None


# -- repeat_loop -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"notes": GLM_NOTES},
    {"notes": "model got stuck in a loop after 200 tokens"},
    {"output_sample": "the cat sat on the mat. " * 8},
    {"notes": "output is cyclic"},
])
def test_repeat_loop_positive(fields):
    assert_finding(check("repeat_loop", fields), "repeat_loop")


@pytest.mark.parametrize("fields", [
    {"notes": "greedy decoding, prose prompts from ShareGPT"},
    {"output_sample": "The Roman road network spanned over four hundred thousand kilometres and carried "
                      "armies, traders and messages across the empire for centuries."},
    {"notes": "repetition penalty 1.25"},
])
def test_repeat_loop_negative(fields):
    assert check("repeat_loop", fields) is None


def test_periodic_detects_word_and_character_periods():
    assert periodic("a b c " * 6) == 3
    assert periodic("abababababababab") == 2
    assert periodic("one two three four five six seven eight nine ten eleven twelve") is None


# -- headline_above_steady_state -------------------------------------------------------------------
def test_headline_above_steady_state_uses_recipe_steady_when_entry_has_none():
    rung_28 = dict(draft_tokens=28, headline_tps=808.5)
    f = check("headline_above_steady_state", rung_28, glm_ctx())
    assert f.numbers["steady_from"] == "recipe" and f.numbers["ratio_to_low"] == 2.17
    assert {"field": "steady_low", "text": "373 to 391"} in f.quotes


@pytest.mark.parametrize("tps", [300.7, 391.0, 430.0])  # at or within 10% of the high end
def test_headline_above_steady_state_negative(tps):
    assert check("headline_above_steady_state", {"headline_tps": tps}, glm_ctx()) is None
    assert check("headline_above_steady_state", {"headline_tps": tps}) is None  # no steady state at all


# -- ladder_top_rung -------------------------------------------------------------------------------
def test_ladder_top_rung_positive_only_for_the_top():
    ctx = glm_ctx()
    assert check("ladder_top_rung", {"draft_tokens": 64, "headline_tps": 1004.9}, ctx).numbers["top_over_bottom"] == 3.34
    assert check("ladder_top_rung", {"draft_tokens": 28, "headline_tps": 808.5}, ctx) is None


def test_ladder_top_rung_negative_when_ladder_does_not_climb():
    flat = Context(ladder=[Rung(1, 4, 90.0), Rung(2, 8, 95.0), Rung(3, 16, 80.0)])
    assert check("ladder_top_rung", {"draft_tokens": 16, "headline_tps": 80.0}, flat) is None
    alone = Context(ladder=[Rung(1, 64, 1004.9)])
    assert check("ladder_top_rung", {"draft_tokens": 64, "headline_tps": 1004.9}, alone) is None


# -- repetitive_prompt -----------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"prompt": "Count from 1 to 50, writing each number on a new line"},  # seed 003
    {"prompt": "repeat this sentence 40 times"},
    {"prompt": "Repeat the following text verbatim"},
    {"notes": "measured with the same prompt each run"},
])
def test_repetitive_prompt_positive(fields):
    assert_finding(check("repetitive_prompt", fields), "repetitive_prompt")


@pytest.mark.parametrize("fields", [
    {"prompt": "Summarise the causes of the First World War"},
    {"notes": "repeated 5 runs, mean reported"},
])
def test_repetitive_prompt_negative(fields):
    assert check("repetitive_prompt", fields) is None


# -- best_of ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"headline_label": "Fastest t/s"},
    {"headline_label": "Peak output token throughput (tok/s)"},  # vLLM bench serve
    {"notes": "best of 5 runs"},
    {"headline_tps": 120.0, "samples": [100.0, 104.0, 120.0]},
])
def test_best_of_positive(fields):
    assert_finding(check("best_of", fields), "best_of")


@pytest.mark.parametrize("fields", [
    {"headline_label": "Output token throughput (tok/s)"},
    {"headline_tps": 104.0, "samples": [100.0, 104.0, 108.0]},
    {"notes": "--max-model-len 32768"},
])
def test_best_of_negative(fields):
    assert check("best_of", fields) is None


# -- aggregate_as_single_stream --------------------------------------------------------------------
def test_aggregate_positive_beside_single_stream_rows():
    ctx = Context(page_concurrency=[1, 1, None])  # seed 002: Decode C1 beside C8
    f = check("aggregate_as_single_stream", {"concurrency": 8, "headline_tps": 308.1}, ctx)
    assert f.numbers["single_stream_neighbours"] == 3
    assert_finding(check("aggregate_as_single_stream", {"concurrency": 4, "headline_label": "single-stream t/s"}), "aggregate_as_single_stream")


def test_aggregate_negative():
    assert check("aggregate_as_single_stream", {"concurrency": 1}, Context(page_concurrency=[8])) is None
    assert check("aggregate_as_single_stream", {"concurrency": 8}, Context(page_concurrency=[4, 8])) is None


# -- arithmetic_mismatch ---------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"tokens_stated": 100, "seconds_stated": 1.822, "headline_tps": 70.0},
    {"acceptance_rate": 1.3},
    {"acceptance_length": 6.2, "draft_tokens": 4},
    {"accepted_tokens": 510, "drafted_tokens": 500},
])
def test_arithmetic_mismatch_positive(fields):
    assert_finding(check("arithmetic_mismatch", fields), "arithmetic_mismatch")


def test_arithmetic_mismatch_negative_on_seed_003():
    # "100 tokens in 1.822 seconds = ~55 tok/s" is consistent (54.9).
    assert check("arithmetic_mismatch", {"tokens_stated": 100, "seconds_stated": 1.822, "headline_tps": 55}) is None
    assert check("arithmetic_mismatch", {"acceptance_length": 5.0, "draft_tokens": 4}) is None


# -- single_run ------------------------------------------------------------------------------------
def test_single_run():
    assert_finding(check("single_run", {"n_runs": 1, "headline_tps": 55}), "single_run")
    assert_finding(check("single_run", {"headline_tps": 55}), "single_run")
    assert check("single_run", {"headline_tps": 131.42, "spread": 0.59}) is None
    assert check("single_run", {"headline_tps": 131.42, "samples": [130.0, 131.0, 133.0]}) is None
    assert check("single_run", {"headline_tps": 15, "_extra": {"range_high": 17}}) is None   # "~15-17 tok/s"


# -- unpinned_build --------------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"engine": "SGLang"},
    {"engine": "SGLang", "engine_version": "nightly"},
    {"engine": "vLLM", "engine_version": "0.17.0rc1.dev4499+g60c82d972"},
    {"engine": "vLLM", "engine_version": "0.11", "notes": "with two local patches"},
    {"engine": "vLLM", "engine_image": "vllm/vllm-openai:latest"},
])
def test_unpinned_build_positive(fields):
    assert_finding(check("unpinned_build", fields), "unpinned_build")


@pytest.mark.parametrize("fields", [
    {"engine": "llama.cpp", "engine_commit": "b4567"},
    {"engine": "vLLM", "engine_version": "0.11.2"},
    {"engine": "vLLM", "engine_image": "verdictai/glm52@sha256:0433ae94665b769b78dd301f952d907508a3ba80"},
])
def test_unpinned_build_negative(fields):
    assert check("unpinned_build", fields) is None


# -- proposer_not_in_command -----------------------------------------------------------------------
def test_proposer_not_in_command():
    assert_finding(check("proposer_not_in_command", GLM), "proposer_not_in_command")
    with_ngram = dict(GLM, command=GLM["command"] + " --speculative-ngram-window 32")
    assert check("proposer_not_in_command", with_ngram) is None
    assert check("proposer_not_in_command", dict(GLM, command=None)) is None
    mtp = {"spec_method": "MTP", "command": "vllm serve m --speculative-config '{\"method\":\"mtp\"}'"}
    assert check("proposer_not_in_command", mtp) is None
    assert_finding(check("proposer_not_in_command", {"spec_method": "EAGLE", "command": "vllm serve m --tp 2"}), "proposer_not_in_command")


# -- lossy_setting ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [
    {"command": "vllm serve /model --kv-cache-dtype nvfp4_ds_mla"},  # seed 002's shipped default
    {"command": "llama-server -m m.gguf -ctk q4_0 -ctv q4_0"},
    {"notes": "lenient acceptance for the draft"},
    {"notes": "this is a lossy setting"},
])
def test_lossy_setting_positive(fields):
    assert_finding(check("lossy_setting", fields), "lossy_setting")


@pytest.mark.parametrize("fields", [
    {"command": "vllm serve /model --kv-cache-dtype fp8"},
    {"notes": "the lossy setting is deliberately disabled"},  # seed 002
    {"notes": "VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE 0 (lossless setting)"},
])
def test_lossy_setting_negative(fields):
    assert check("lossy_setting", fields) is None


# -- short_shape -----------------------------------------------------------------------------------
def test_short_shape():
    assert check("short_shape", {"test": "tg128"}).numbers == {"gen_tokens": 128}
    assert check("short_shape", {"context_length": 8192}).numbers == {"context_length": 8192}
    assert check("short_shape", {"test": "tg512", "context_length": 32768}) is None
    # ruleset 2026.12.2: a run's own prompt states its context; pp512 is a 512-token context
    assert check("short_shape", {"test": "pp512"}).numbers == {"context_length": 512}
    assert check("short_shape", {"test": "pp16384"}) is None


# -- clocks_or_power -------------------------------------------------------------------------------
def test_clocks_or_power():
    assert_finding(check("clocks_or_power", {"clocks": "locked"}), "clocks_or_power")
    assert_finding(check("clocks_or_power", {"power": "450 W"}), "clocks_or_power")
    assert_finding(check("clocks_or_power", {"notes": "ran after nvidia-smi -lgc 2400"}), "clocks_or_power")
    assert check("clocks_or_power", {"clocks": "stock"}) is None
    assert_finding(check("clocks_or_power", {"clocks": "jetson_clocks"}), "clocks_or_power")
    assert_finding(check("clocks_or_power", {"power": "MAXN_SUPER"}), "clocks_or_power")
    assert_finding(check("clocks_or_power", {"power": "25W"}), "clocks_or_power")
    assert check("clocks_or_power", {"notes": "default settings"}) is None


# -- ruleset 2026.12.2: rules that read the scope, commands and pins the parsers give ---------------------
def test_repetitive_prompt_inside_a_published_command():
    f = dict(CLEAN, prompt=None, command='llama-cli -m m.gguf -p "Repeat this sentence for 50 times" -n 256')
    hit = fired(f, quotes={"command": f["command"]})
    assert "repetitive_prompt" in hit and hit["repetitive_prompt"].numbers["field"] == "command"
    calm = dict(CLEAN, prompt=None, command='llama-cli -m m.gguf -p "Write an essay on Roman roads" -n 256')
    assert "repetitive_prompt" not in fired(calm)


def test_short_shape_reads_tg_with_a_space():
    assert "short_shape" in fired(dict(CLEAN, gen_tokens=None, test="tg 128"))
    assert "short_shape" not in fired(dict(CLEAN, gen_tokens=None, test="tg 512"))


@pytest.mark.parametrize("where, text", [
    ("notes", "build: 5142 (80f19b41)"), ("notes", "llama.cpp b7522-849d02110"),
    ("command", "docker run lmsysorg/sglang@sha256:0123456789abcdef0123 python -m sglang.launch_server"),
    ("notes", "served with vLLM v0.11.0"),
])
def test_unpinned_build_is_satisfied_by_builds_versions_and_digests_in_the_text(where, text):
    f = dict(CLEAN, engine_commit=None, engine_version=None, **{where: text})
    assert "unpinned_build" not in fired(f)
    assert "unpinned_build" in fired(dict(CLEAN, engine_commit=None, engine_version=None, notes="served with vLLM"))


def test_aggregate_as_single_stream_reads_scope_and_shown_concurrency():
    ctx = Context(page_singles=3)
    agg = dict(CLEAN, concurrency=8, headline_label="output tok/s")
    assert "aggregate_as_single_stream" in fired(agg, ctx)  # concurrency from elsewhere, beside singles
    assert "aggregate_as_single_stream" not in fired(dict(agg, scope="aggregate"), ctx)  # says what it is
    assert "aggregate_as_single_stream" not in fired(agg, ctx, quotes={"concurrency": "C8"})  # shown with it
    assert "aggregate_as_single_stream" not in fired(dict(agg, scope="per_user"), ctx)  # per user at c8
    labelled = dict(agg, scope="aggregate", headline_label="single-stream tok/s")
    assert "aggregate_as_single_stream" in fired(labelled, ctx)  # an aggregate under a per-user label


def test_ruleset_version_bumped_for_the_scope_rules():
    assert tuple(int(x) for x in RULESET_VERSION.split(".")) >= (2026, 12, 4)


def test_ruleset_version_bumped_for_the_bandwidth_rule():
    assert RULESET_VERSION == "2026.12.9"


def test_short_shape_reads_the_runs_own_context_from_its_prompt():
    assert "short_shape" in fired(dict(CLEAN, test="pp4096", gen_tokens=None, context_length=None))
    # a prefill figure's prompt is its workload, not a short context of a decode run
    assert "short_shape" not in fired(dict(CLEAN, test="pp4096", gen_tokens=None, context_length=None, phase="prefill"))
    assert "short_shape" not in fired(dict(CLEAN, test="pp16384", gen_tokens=None, context_length=None))
    f = dict(CLEAN, test=None, gen_tokens=2048, prompt_tokens=2048, context_length=None)
    assert "short_shape" in fired(f)  # 2048 + 2048 tokens: a 4k context
    assert "short_shape" not in fired(dict(f, prompt_tokens=30000))


def test_best_of_reads_snake_case_max_fields_and_up_to_sentences():
    assert "best_of" in fired(dict(CLEAN, headline_label="max_output_tokens_per_s", headline_tps=1136.0))
    assert "best_of" not in fired(dict(CLEAN, headline_label="output_throughput", headline_tps=900.0))
    up = dict(CLEAN, headline_label=None, label="H200 provides up to **800**\ntok/s with INT4 AWQ", headline_tps=800)
    assert "best_of" in fired(up)
    assert "best_of" not in fired(dict(up, label="runs up to 8k context at 800 tok/s"))  # the 8k is not the figure


def test_lossy_setting_reads_a_kv_cache_type_column():
    assert "lossy_setting" in fired(dict(CLEAN, _extra={"type_k": "q4_0", "type_v": "q4_0"}))
    assert "lossy_setting" not in fired(dict(CLEAN, _extra={"type_k": "f16", "type_v": "q8_0"}))
    assert "lossy_setting" not in fired(dict(CLEAN, _extra={"model_type": "q4_0"}))  # weights, not the KV cache


def test_aggregate_under_a_compound_header_naming_several_levels_is_not_mislabelled():
    f = dict(CLEAN, concurrency=4, scope="aggregate", headline_label="Decode C1 / C4 / C8 (tok/s)", headline_tps=225.3)
    assert "aggregate_as_single_stream" not in fired(f, Context(page_singles=2))
    assert "aggregate_as_single_stream" in fired(dict(f, headline_label="Decode, single stream (tok/s)"),
                                                  Context(page_singles=2))


def test_lossy_setting_reads_the_kv_cache_field_and_short_shape_spares_prefill_generation():
    assert "lossy_setting" in fired(dict(CLEAN, kv_cache="q4_0"))
    assert "lossy_setting" in fired(dict(CLEAN, kv_cache="nvfp4_ds_mla"))
    assert "lossy_setting" not in fired(dict(CLEAN, kv_cache="fp8"))
    pp = dict(CLEAN, test="pp16384", phase="prefill", gen_tokens=128, context_length=None)
    assert "short_shape" not in fired(pp)  # its speed does not depend on the 128 tokens generated after it
    assert "short_shape" in fired(dict(pp, phase="decode", test="tg128"))


# -- ruleset 2026.12.3 -------------------------------------------------------------------------------
def test_best_of_reads_the_tables_own_title_and_yields_to_a_rows_stated_median():
    assert "best_of" in fired(dict(CLEAN, caption="H200 FP8 Max throughput", headline_tps=11819.0, concurrency=1024))
    assert "best_of" not in fired(dict(CLEAN, caption="Max context 128k", headline_tps=80.0, concurrency=None))
    fastest = dict(CLEAN, headline_label="Fastest t/s", headline_tps=120.0)
    assert "best_of" in fired(fastest)
    assert "best_of" not in fired(dict(fastest, notes="median of 5 runs"))       # the row's own words win
    assert "best_of" in fired(dict(fastest, notes="best of 5 runs, median 101"))  # unless they say best


def test_rig_conditions_and_page_pins():
    assert "clocks_or_power" in fired(dict(CLEAN, rig_power="300 W"))
    assert "clocks_or_power" in fired(dict(CLEAN, rig_clocks="clocks locked"))
    unpinned = {k: v for k, v in CLEAN.items() if k not in ("engine_version", "engine_commit", "engine_image")}
    assert "unpinned_build" in fired(unpinned)
    assert "unpinned_build" not in fired(dict(unpinned, page_pin="intel/vllm:0.10.2-xpu"))
    assert "unpinned_build" in fired(dict(unpinned, page_pin="0.5.6.post3.dev1000"))
    assert "unpinned_build" not in fired(dict(unpinned, engine_version="0.11.2.dev280",
                                              engine_image="org/img:tag@sha256:" + "0" * 64))  # a digest is exact
    assert "unpinned_build" in fired(dict(unpinned, engine_image="rocm/sgl-dev:v0.5.20-rocm10"))


def test_short_shape_reads_stated_lengths():
    base = {k: v for k, v in CLEAN.items() if k not in ("gen_tokens", "prompt_tokens", "context_length", "test", "prompt")}
    assert "short_shape" in fired(dict(base, prompt_tokens=1024, gen_tokens=1024))     # 2k context
    assert "short_shape" not in fired(dict(base, prompt_tokens=50000, gen_tokens=4000))
    assert "short_shape" in fired(dict(base, tokens_stated=100, seconds_stated=1.822))  # the run's own count
    assert "short_shape" not in fired(dict(base, test="tg 256", gen_tokens=128, prompt_tokens=0))  # the test wins
    assert "short_shape" not in fired(dict(base, phase="prefill", test="pp512", prompt_tokens=512))
    assert "short_shape" in fired(dict(base, phase="prefill", prompt_tokens=969, gen_tokens=300))
    # a quoted prompt and a generation length put the context at about their sum
    assert "short_shape" in fired(dict(base, gen_tokens=256, prompt="What is the meaning of life?"))
    assert "short_shape" not in fired(dict(base, gen_tokens=16384, prompt="What is the meaning of life?"))


def test_arithmetic_mismatch_when_the_retokenized_output_disagrees():
    f = dict(CLEAN, tokens_generated=218257, tokens_retokenized=100838)
    hit = fired(f)["arithmetic_mismatch"]
    assert "re-tokenized" in hit.numbers["reasons"][0]
    assert "arithmetic_mismatch" not in fired(dict(CLEAN, tokens_generated=160347, tokens_retokenized=160192))


def test_lossy_setting_reads_a_lossy_note_and_an_expert_count_override():
    assert "lossy_setting" in fired(dict(CLEAN, lossy_note="6 experts (fewer than the 8 the page also runs)"))
    assert "lossy_setting" in fired(dict(CLEAN, command="llama-server --override-kv qwen3moe.expert_used_count=int:4"))


def test_a_max_throughput_caption_does_not_flag_its_batch_one_rows():
    f = dict(CLEAN, caption="Max Throughput & Min Latency", headline_tps=185.0, headline_label="Throughput (out tok/s)")
    assert "best_of" not in fired(dict(f, concurrency=1))
    assert "best_of" in fired(dict(f, concurrency=64))


def test_best_of_reads_chinese_words_for_highest():
    assert_finding(check("best_of", {"headline_tps": 13.35, "headline_label": "Prefill token/s（最高）"}), "best_of")


def test_best_of_is_not_raised_by_a_length_setting():
    assert check("best_of", {"headline_tps": 763.73, "caption": "Max Output Tokens/Request: 1024"}) is None
    assert check("best_of", {"headline_tps": 763.73, "label": "Max Model Length: 1024"}) is None
    assert_finding(check("best_of", {"headline_tps": 76.0, "headline_label": "max_output_tokens_per_s"}), "best_of")
    assert_finding(check("best_of", {"headline_tps": 76.0, "caption": "Max output throughput"}), "best_of")
