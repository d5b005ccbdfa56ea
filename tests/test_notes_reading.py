"""Notes read clause by clause (issue 25): conditions by meaning in English, Chinese and Japanese, benign
statements, and the fail-closed rule: a clause Caveat did not understand keeps the headline from being
quoted (basis ``unreviewed``) until a reviewer reads it."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app.accounts import auth
from app.audit import decisions
from app.audit.engine import audit_entries
from app.audit.rules import read_entry, run_rules
from app.audit.working import Candidate, StandingFlag, decide
from app.models import Entry, Flag, Recipe
from scrapers.fields import ParsedEntry
from tests.audit_data import store

BASE = dict(model="Qwen3-32B", hardware="RTX 4090", gpu_count=1, engine="llama.cpp", engine_version="b6710",
            quantization="Q4_K_M", phase="decode", scope="per_user")


def _rules(notes: str) -> set[str]:
    return {c.rule for c in read_entry({"notes": notes, "headline_tps": 100.0}) if c.reading == "condition"}


def _readings(notes: str) -> set[str]:
    return {c.reading for c in read_entry({"notes": notes, "headline_tps": 100.0})}


@pytest.mark.parametrize("notes,rule", [
    ("prompt: spell out the numbers one to three hundred", "repetitive_prompt"),
    ("we had it type the alphabet over and over", "repetitive_prompt"),
    ("同一个提示词连续发送", "repetitive_prompt"),
    ("アルファベットを100回書かせた", "repetitive_prompt"),
    ("highest reading over a handful of attempts", "best_of"),
    ("cherrypicked run", "best_of"),
    ("最快的一次", "best_of"),
    ("ピーク値", "best_of"),
    ("burst rate", "short_shape"),
    ("max_tokens=24", "short_shape"),
    ("前32个token", "short_shape"),
    ("sum across 16 streams", "aggregate_as_single_stream"),
    ("served 6 users at once", "aggregate_as_single_stream"),
    ("并发8路合计", "aggregate_as_single_stream"),
    ("同時8リクエストの合計", "aggregate_as_single_stream"),
    ("draft acceptance 99.7%", "full_acceptance"),
    ("1023 of 1024 draft tokens accepted", "full_acceptance"),
    ("草稿接受率100%", "full_acceptance"),
    ("the model started looping halfway", "repeat_loop"),
    ("输出复读", "repeat_loop"),
    ("prefix cache was hot from the previous run", "warm_cache"),
    ("缓存命中", "warm_cache"),
    ("キャッシュヒット状態", "warm_cache"),
    ("back-of-the-envelope number from memory bandwidth", "not_measured"),
    ("预估值", "not_measured"),
    ("理論値", "not_measured"),
    ("only 4 of 8 experts active per token", "lossy_setting"),
    ("KV cache in 4-bit", "lossy_setting"),
    ("剪枝后的模型", "lossy_setting"),
    ("settles at ~90 t/s once the context fills", "headline_above_steady_state"),
])
def test_conditions_are_read_by_meaning(notes, rule):
    assert rule in _rules(notes), read_entry({"notes": notes})


@pytest.mark.parametrize("notes", [
    "mean of 5 runs, ±0.4", "median of 7, stdev 0.3", "ShareGPT prompts, 512 output tokens", "batch size 1",
    "ctx 16384", "temperature 0.7, top_p 0.9", "driver 575.64, CUDA 12.9", "stock power limit",
    "no prefix caching", "warm-up run discarded, fresh prompts", "not cherry-picked", "KV cache q8_0",
    "5回の平均、ばらつき±0.3", "默认设置，单用户", "min 98.1, max 101.3",
])
def test_benign_statements_stay_benign(notes):
    assert _readings(notes) == {"benign"}, read_entry({"notes": notes, "headline_tps": 100.0})


def test_what_is_not_understood_is_said_and_fails_closed():
    reading = read_entry({"notes": "mean of 3 runs, with the zorblax governor engaged", "headline_tps": 80.0})
    unread = [c for c in reading if c.reading == "not_understood"]
    assert [c.text for c in unread] == ["with the zorblax governor engaged"]
    findings = {f.rule: f for f in run_rules({**BASE, "headline_tps": 80.0, "n_runs": 3, "spread": 0.3,
                                              "notes": "mean of 3 runs, with the zorblax governor engaged"})}
    assert findings["not_understood"].severity == "high"
    assert "zorblax" in findings["not_understood"].explanation
    # a condition word Caveat has no pattern for is never passed as harmless
    assert "not_understood" in _readings("the card was boosted for the run")


def test_unreviewed_basis_shows_the_number_but_never_quotes_it():
    c = Candidate(1, 120.0, standing=[StandingFlag("not_understood", "high")])
    w = decide([c], entry=c)
    assert (w.basis, w.tps) == ("unreviewed", 120.0)
    assert "did not understand" in w.reason
    blocked = Candidate(2, 120.0, standing=[StandingFlag("not_understood", "high"), StandingFlag("best_of", "high")])
    assert decide([blocked], entry=blocked).basis == "none"


def test_flag_text_says_what_the_page_said():
    near = {f.rule: f for f in run_rules({**BASE, "headline_tps": 300.0, "acceptance_rate": 0.99})}
    assert near["full_acceptance"].explanation.startswith("Nearly every drafted token was accepted (acceptance rate 0.99")
    full = {f.rule: f for f in run_rules({**BASE, "headline_tps": 300.0, "acceptance_rate": 1.0})}
    assert full["full_acceptance"].explanation.startswith("Every drafted token was accepted")


def test_short_outputs_block_the_headline():
    found = {f.rule: f for f in run_rules({**BASE, "headline_tps": 150.0, "gen_tokens": 32, "n_runs": 5, "spread": 1})}
    assert found["short_shape"].severity == "high"
    longer = {f.rule: f for f in run_rules({**BASE, "headline_tps": 150.0, "gen_tokens": 128, "n_runs": 5, "spread": 1})}
    assert longer["short_shape"].severity == "low"


def _seed_row(db, notes: str) -> int:
    # 41.5 tok/s: Qwen3-32B at Q4_K_M on one RTX 4090 cannot decode faster than 51.5 (beyond_bandwidth_limit)
    row = ParsedEntry(fields=dict(BASE, headline_tps=41.5, n_runs=5, spread=0.4, notes=notes),
                      quotes={"headline_tps": "41.5", "notes": notes})
    with db.session() as s:
        _, _, summary = store(s, [row])
        audit_entries(s, db.settings, summary.entry_ids)
        return summary.entry_ids[0]


def test_unreviewed_entry_through_api_page_queue_and_a_reviewers_dismissal(client, db):
    eid = _seed_row(db, "mean of 5 runs; measured with the zorblax governor engaged")
    with db.session() as s:
        e = s.get(Entry, eid)
        assert (e.basis, e.working_tps) == ("unreviewed", 41.5)
        rid = s.scalar(select(Recipe.recipe_id))
        auth.create_user(s, "rev", "reviewer-pass")
    answer = client.get(f"/api/recipes/{rid}/quotable").json()
    assert (answer["basis"], answer["quotable_tps"], answer["unreviewed_tps"]) == ("unreviewed", None, 41.5)
    assert any(f["rule"] == "not_understood" for f in answer["flags"])
    body = client.get(f"/api/entries/{eid}").json()
    reading = {c["text"]: c for c in body["notes_reading"]}
    assert reading["mean of 5 runs"]["reading"] == "benign"
    odd = reading["measured with the zorblax governor engaged"]
    assert odd["reading"] == "not_understood" and odd["field"] == "notes"
    page = client.get(f"/entries/{eid}").text
    assert "verdict-unreviewed" in page and "verdict-quote-this" not in page
    assert 'data-reading="not_understood"' in page
    queue = client.get("/queue.json?rule=not_understood").json()
    rows = queue.get("entries") or queue.get("items") or queue.get("rows") or []
    assert any(row.get("id") == eid for row in rows), list(queue)   # it waits in the review queue
    # the reviewer reads the clause, finds it harmless and dismisses the flag: the headline becomes quotable
    with db.session() as s:
        user = auth.get_user(s, "rev")
        flag = s.scalar(select(Flag).where(Flag.entry_id == eid, Flag.rule == "not_understood"))
        decisions.decide(s, user, flag.id, "dismiss", "the governor is the vendor's stock fan curve",
                         settings=db.settings)
    with db.session() as s:
        assert s.get(Entry, eid).basis == "headline"
    answer = client.get(f"/api/recipes/{rid}/quotable").json()
    assert (answer["basis"], answer["quotable_tps"]) == ("headline", 41.5)


def test_a_condition_in_the_notes_is_quoted_as_evidence(client, db):
    eid = _seed_row(db, "best of 5 tries")
    body = client.get(f"/api/entries/{eid}").json()
    flags = {f["rule"]: f for f in body["flags"]}
    assert "best_of" in flags
    assert [c["reading"] for c in body["notes_reading"]] == ["condition"]
    assert body["basis"] == "none"


def test_the_paraphrase_corpus_is_scored(tmp_path):
    """The paraphrase corpus (tests/data/paraphrases, written and labelled before any rule ran on it):
    printed per category, held to what this ruleset reaches (docs/audit.md has the table and the gate)."""
    from tests.paraphrase_corpus import load, run, score, table

    items = load("all")
    assert len(items) >= 200 and {i["lang"] for i in items} >= {"en", "zh", "ja"}
    results = run(tmp_path, items)
    scores = {}
    for name in ("dev", "holdout"):
        s = score([i for i in items if i["split"] == name], results)
        print(table(name, s))
        scores[name] = s
    # the gate is 0.95 / 0.90; these are the levels this ruleset reaches (docs/audit.md), kept as a floor
    # dev benign: 0.91 under ruleset 2026.12.5; 2026.12.6's beyond_bandwidth_limit holds back the benign items
    # whose stated speed exceeds what the hardware can decode (docs/audit.md lists them), hence 0.84
    assert scores["dev"]["inflating_caught"] >= 0.78 and scores["dev"]["benign_quotable"] >= 0.84
    assert scores["holdout"]["inflating_caught"] >= 0.60 and scores["holdout"]["benign_quotable"] >= 0.65
    assert json.dumps(scores["dev"]["per_category"])  # the table is printed, not only asserted


def _rules_for(page: str, kind: str, figure: float) -> tuple[dict, set[str]]:
    import scrapers
    result = scrapers.parse(page, kind=kind)
    e = next(x for x in result.entries if x.fields.get("headline_tps") == figure)
    return e.fields, {f.rule for f in run_rules(e.fields, e.quotes)}


def test_the_sentence_after_a_prose_figure_is_read_for_conditions():
    fields, rules = _rules_for("Llama-3.3-70B AWQ on 2x RTX 3090 with vLLM 0.10.2 gives 38.9 tok/s. "
                               "I cherry-picked the nicest-looking run for the screenshot.\n", "text", 38.9)
    assert "cherry-picked" in fields["around"] and "best_of" in rules
    # a sentence that is about another figure is not this one's: no bleeding across figures
    fields, rules = _rules_for("Qwen3-8B on an RTX 4090 with llama.cpp b6500 gives 120.5 tok/s. "
                               "With the n-gram proposer on a repeated prompt it reached 240.1 tok/s.\n", "text", 120.5)
    assert "repeated prompt" not in (fields.get("around") or "") and "repetitive_prompt" not in rules


def test_a_short_post_reads_the_paragraph_above_its_tool_output():
    page = ("gemma3:12b on an RTX 4070 Super, ollama 0.12.3 (this is the fastest of several tries):\n\n"
            "total duration:       9.14s\nprompt eval count:    24 token(s)\neval count:           640 token(s)\n"
            "eval duration:        9.01s\neval rate:            71.03 tokens/s\n")
    fields, rules = _rules_for(page, "text", 71.03)
    assert "fastest of several tries" in (fields.get("lead") or "") + (fields.get("around") or "")
    assert "best_of" in rules


def test_neighbouring_paragraphs_are_not_read_on_a_page_of_many_figures():
    rows = "\n\n".join(f"Model-{i}B on an RTX 4090: {50 + i}.5 tok/s." for i in range(1, 6))
    page = rows + "\n\nThe fastest of three tries is shown for the last one.\n"
    fields, rules = _rules_for(page, "text", 51.5)
    assert "fastest" not in (fields.get("around") or "") and "best_of" not in rules


def test_a_spread_of_runs_and_a_switched_off_setting_are_benign():
    reading = read_entry({"headline_tps": 43.8, "notes": "four runs, lowest 43.3 and highest 44.1"})
    assert all(c.reading == "benign" for c in reading)
    top = read_entry({"headline_tps": 44.1, "notes": "four runs, lowest 43.3 and highest 44.1"})
    assert any(c.rule == "best_of" for c in top)       # the figure is the spread's top: a best-of
    off = read_entry({"headline_tps": 87.5, "notes": "the lossy alternative trades correctness for speed and is "
                                                     "deliberately disabled"})
    assert not any(c.rule == "lossy_setting" for c in off)


@pytest.mark.parametrize("notes,head,not_rule", [
    ("I repeated the whole thing seven times; the median was 44.1 tok/s", 44.1, "repetitive_prompt"),
    ("one user: 19.5 tok/s", 19.5, "aggregate_as_single_stream"),
    ("同時リクエスト1件（シングルユーザー）", 30.2, "aggregate_as_single_stream"),
    ("Llama-3.1-8B via mlx-lm on an M3 Max: 53.48 tok/s", 53.48, "best_of"),
    ("It averaged 31.4 tok/s over 5 runs (min 31.0, max 31.8)", 31.4, "best_of"),
    ("Phi-4 Q5_K_M with llama.cpp Vulkan generates at 41.27 tok/s", 41.27, "short_shape"),
    ("Avg generation throughput: 71.6 tokens/s, Running: 1 reqs, Prefix cache hit rate: 0.0%", 71.6, "warm_cache"),
    ("median over 7 runs; slowest and fastest run within 1% of it", 40.0, "best_of"),
])
def test_statistics_and_names_are_not_conditions(notes, head, not_rule):
    """Wordings that look like a condition and are not: a run repeated (not a prompt), a speed after "user:",
    one concurrent request, a chip named Max, a spread of runs beside their mean, a decimal speed after
    "generates", a prefix-cache hit rate of zero."""
    fields = {"headline_tps": head, "notes": notes, "label": notes}
    assert not_rule not in {f.rule for f in run_rules(fields, {})}


def test_a_warm_prefix_cache_in_a_log_line_is_still_a_condition():
    fields = {"headline_tps": 71.6, "notes": "Avg generation throughput: 71.6 tokens/s, Prefix cache hit rate: 97.3%"}
    assert "warm_cache" in {f.rule for f in run_rules(fields, {})}


@pytest.mark.parametrize("notes", ["power limit untouched (stock 350 W)", "compiled from source at tag b4788 with GGML_CUDA=ON",
                                   "Running ROCm 6.3.1 with the amdgpu 6.10 driver", "average accepted length 2.6 per step",
                                   "2048-token completions", "temp 0.7, top_p 0.9, repeat penalty 1.1", "805 instructions"])
def test_more_benign_wordings_are_understood(notes):
    assert all(c.reading == "benign" for c in read_entry({"headline_tps": 40.0, "notes": notes})), \
        [(c.text, c.reading, c.detail) for c in read_entry({"headline_tps": 40.0, "notes": notes})]


@pytest.mark.parametrize("notes,rule", [
    ('"cache_state": "hot"', "warm_cache"),
    ('"cache_type_k": "q4_0"', "lossy_setting"),
    ("experts/token: 4 (default 8)", "lossy_setting"),
    ("(sustained: 34.6)", "headline_above_steady_state"),
    ("# kept the quickest one of the six:", "best_of"),
    ("timed on 64-token completions", "short_shape"),
    ("eval count:           10 token(s)", "short_shape"),
    ("llama-batched-bench -npl 32", "aggregate_as_single_stream"),
    ("List every prime number below 10000, one per line.", "repetitive_prompt"),
])
def test_conditions_stated_as_settings_keys_and_quoted_prompts(notes, rule):
    """Conditions stated the way tools and JSON state them (ruleset 2026.12.9)."""
    assert rule in {f.rule for f in run_rules({"headline_tps": 80.0, "notes": notes}, {})}
