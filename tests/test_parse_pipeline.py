"""The pipeline's contracts: decoding precedence, segmentation of flattened tables, quote selectors that
pin one occurrence, the seeds' figures, and bounded time on hostile input (issue 11)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import scrapers
from scrapers.decode import decode_body
from scrapers.segment import iter_blocks, segment

REAL = Path(__file__).parent / "data" / "real" / "pages"


def test_decode_precedence_bom_header_meta_sniff():
    assert decode_body(b"\xef\xbb\xbfGLM\xe2\x80\x915", None).how == "bom"
    d = decode_body("373–391".encode(), "text/html; charset=utf-8")
    assert d.text == "373–391" and d.how == "header"
    d = decode_body(b'<meta charset="windows-1252"><p>\xe9</p>', "text/html")
    assert d.how == "meta" and "é" in d.text
    d = decode_body("GLM‑5.3 373–391".encode(), "text/html")     # no charset anywhere: sniffed as UTF-8
    assert d.text == "GLM‑5.3 373–391" and d.how == "sniffed"
    d = decode_body(b"caf\xe9 \x80", None)
    assert d.encoding == "cp1252" and d.warnings


def test_decode_agrees_with_w3lib_when_installed():
    w3 = pytest.importorskip("w3lib.encoding")
    for body, ct in [("a–b".encode(), "text/html; charset=utf-8"), (b'<meta charset="latin-1">\xe9', None),
                     (b"\xef\xbb\xbfabc", None)]:
        assert decode_body(body, ct).text == w3.html_to_unicode(ct, body)[1]


def test_flattened_pipe_and_box_tables_are_tables():
    text = ("Intro | Metric | A | B | | --- | --- | --- | | Decode C1 / C4 (tok/s) | 87.5 / 219.3 | 86.6 / 217.2 | "
            "Then ╭────┬──────╮ │ conc │ tok/s │ ├────┼──────┤ │ 2 │ 67.9 │ ╰────┴──────╯ done")
    tables = [b.table for b in iter_blocks(segment(text)) if b.kind == "table"]
    assert [t.shape for t in tables] == ["pipe", "box"]
    assert [c.value for c in tables[0].header] == ["Metric", "A", "B"]
    assert tables[0].rows[0][1].value == "87.5 / 219.3"
    assert [c.value for c in tables[1].rows[0]] == ["2", "67.9"]
    for t in tables:
        for row in [t.header, *t.rows]:
            for c in row:
                assert text[c.start:c.end] == c.text


def test_compound_cells_give_one_entry_per_concurrency_with_scope():
    text = "# Card\n\n| Metric | Build |\n| --- | --- |\n| Decode C1 / C4 / C8 (tok/s) | 87.5 / 219.3 / 308.1 |\n"
    es = scrapers.parse(text.encode(), kind="markdown").entries
    got = sorted((e.fields["concurrency"], e.fields["headline_tps"], e.fields["scope"]) for e in es)
    assert got == [(1, 87.5, "per_user"), (4, 219.3, "aggregate"), (8, 308.1, "aggregate")]


def test_selectors_pin_the_right_occurrence():
    text = "| run | tok/s |\n| --- | --- |\n| a | 8 |\n| b | 9 |\n| c | 8 |\n"
    r = scrapers.parse(text.encode(), kind="markdown")
    starts = []
    for e in r.entries:
        sel = e.selectors["headline_tps"]
        assert r.text[sel["start"]:sel["end"]] == sel["exact"] == e.quotes["headline_tps"]
        assert r.text[:sel["start"]].endswith(sel["prefix"]) and r.text[sel["end"]:].startswith(sel["suffix"])
        starts.append(sel["start"])
    assert len(set(starts)) == len(r.entries) == 3


def test_ratios_percentages_and_req_s_are_not_throughput():
    text = ("| Config | Output tok/s | Speedup | Request throughput (req/s) |\n| --- | --- | --- | --- |\n"
            "| base | 100 | 1.0x | 2.5 |\n| spec | 187 (+87%) | 1.87x | 4.1 |\n")
    vals = sorted(e.fields["headline_tps"] for e in scrapers.parse(text.encode(), kind="markdown").entries)
    assert vals == [100.0, 187.0]


def test_baseline_cancels_the_sections_speculation():
    text = ("# Bench\n\nAll runs use EAGLE-3 with 4 draft tokens on 1x H100.\n\n"
            "| Mode | Decode tok/s |\n| --- | --- |\n| speculative | 297 |\n| baseline (no spec) | 156 |\n")
    by = {e.fields["headline_tps"]: e.fields for e in scrapers.parse(text.encode(), kind="markdown").entries}
    assert by[297.0].get("draft_tokens") == 4
    assert "draft_tokens" not in by[156.0] and "spec_method" not in by[156.0]


def test_tool_outputs_mean_what_the_tool_means():
    log = ("============ Serving Benchmark Result ============\nMaximum request concurrency:  8\n"
           "Request throughput (req/s):   3.10\nOutput token throughput (tok/s):  412.5\n"
           "Total Token throughput (tok/s):  1650.2\n"
           "llama_print_timings: prompt eval time =   925.78 ms /    24 tokens (   38.57 ms per token,    25.92 tokens per second)\n"
           "llama_print_timings:        eval time =  4178.32 ms /    31 runs   (  134.78 ms per token,     7.42 tokens per second)\n")
    got = {(e.fields["headline_tps"], e.fields["phase"], e.fields["scope"], e.fields.get("concurrency"))
           for e in scrapers.parse(log.encode(), kind="text").entries}
    assert got == {(412.5, "decode", "aggregate", 8), (1650.2, "e2e", "aggregate", 8),
                   (25.92, "prefill", "per_user", None), (7.42, "decode", "per_user", None)}


@pytest.mark.skipif(not (REAL / "000_0610243c6a26dc31.txt").exists(), reason="real corpus not present")
def test_seeds():
    r0 = scrapers.parse((REAL / "000_0610243c6a26dc31.txt").read_bytes(), kind="text")
    ladder = sorted((e.fields.get("draft_tokens"), e.fields["headline_tps"]) for e in r0.entries
                    if e.fields.get("draft_tokens"))
    assert ladder == [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]
    assert all((e.fields.get("steady_low"), e.fields.get("steady_high")) == (373.0, 391.0)
               for e in r0.entries if e.fields.get("draft_tokens"))
    r2 = scrapers.parse((REAL / "002_a33fc600baaeb334.txt").read_bytes(), kind="text",
                        content_type="text/plain; charset=utf-8")
    dec = {(e.fields.get("concurrency"), e.fields["scope"], e.fields["headline_tps"]) for e in r2.entries
           if e.fields["phase"] == "decode"}
    sweep = [87.5, 147.4, 183.7, 219.3, 242.4, 274.9, 291.1, 308.1]      # section 6, nvfp4_ds_mla, C1..C8
    assert {(c, "per_user" if c == 1 else "aggregate", v) for c, v in enumerate(sweep, 1)} <= dec
    per_user = [87.5, 73.7, 61.2, 54.8, 48.5, 45.8, 41.6, 38.5]          # the per-request figures, C1..C8
    assert {(c, "per_user", v) for c, v in enumerate(per_user, 1)} <= dec
    assert any(e.fields["phase"] == "prefill" and e.fields["headline_tps"] == 2551 for e in r2.entries)
    assert any("@sha256:" in (e.fields.get("engine_image") or "") for e in r2.entries)
    r3 = scrapers.parse((REAL / "003_7c3e7ca5983ce71a.txt").read_bytes(), kind="text")
    e55 = next(e for e in r3.entries if e.fields["headline_tps"] == 55)
    assert "Count from 1 to 50" in (e55.fields.get("prompt") or "") and e55.fields.get("n_runs") == 1


# --- bad input: bounded time and memory, warnings, never a crash -----------------------------------

def _timed(body: bytes, kind: str, limit: float):
    t0 = time.monotonic()
    r = scrapers.parse(body, kind=kind)
    dt = time.monotonic() - t0
    assert dt < limit, f"{dt:.1f} s"
    return r


def test_hundred_thousand_row_table_is_cut_with_a_warning():
    rows = "".join(f"| m{i} | {i % 500 + 1}.5 |\n" for i in range(100_000))
    r = _timed(("| Model | tok/s |\n| --- | --- |\n" + rows).encode(), "markdown", 15)
    assert any("cut at" in w for w in r.warnings) and r.entries


def test_ten_thousand_columns():
    head = "| " + " | ".join(f"c{i}" for i in range(10_000)) + " |\n"
    sep = "|" + " --- |" * 10_000 + "\n"
    row = "| " + " | ".join("1" for _ in range(10_000)) + " |\n"
    r = _timed((head + sep + row).encode(), "markdown", 30)
    assert isinstance(r, scrapers.ParseResult)


def test_fifty_megabytes_of_text():
    body = (b"lorem ipsum dolor sit amet 12 34 " * 1_600_000)[:50_000_000]
    r = _timed(body, "text", 20)
    assert not r.entries and r.warnings


def test_deeply_nested_json_is_refused_with_a_warning():
    r = _timed(b"[" * 100_000 + b"]" * 100_000, "json", 10)
    assert not r.entries and any("nests deeper" in w or "not valid JSON" in w for w in r.warnings)


def test_binary_garbage():
    r = _timed(os.urandom(2_000_000), "text", 30)
    assert isinstance(r, scrapers.ParseResult) and (r.entries or r.warnings)


def test_a_page_that_defeats_every_reader_says_what_was_seen():
    text = "| Suite | Result |\n| --- | --- |\n| A | pass |\n\nThroughput was fine (tok/s below).\n"
    r = scrapers.parse(text.encode(), kind="markdown")
    assert not r.entries
    assert any("nothing parsed" in w and "1 table" in w for w in r.warnings)


def test_figures_seen_but_not_read_are_counted():
    text = "Aggregate tok/s\n\n| run | a | b |\n| --- | --- | --- |\n| x | 1 | 2 |\n"
    r = scrapers.parse(text.encode(), kind="markdown")
    assert any("not read" in w for w in r.warnings)


def test_aligned_columns_and_csv_in_code_blocks():
    text = ("# Bench on 2x RTX 3090\n\n```\nmodel                 backend   pp tok/s   tg tok/s\n"
            "Llama-3.1-8B Q4_K_M   CUDA      4521.3     132.8\nQwen2.5-14B Q4_K_M    CUDA      2210.7      71.2\n"
            "Mistral-7B Q8_0       CUDA      3890.1      98.4\n```\n\n```csv\nmodel,gpu,tokens_per_second\n"
            "Llama-3.1-8B,RTX 4090,131.4\nQwen2.5-7B,RTX 4090,140.2\nGemma-2-9B,RTX 4090,95.0\n```\n")
    es = scrapers.parse(text.encode(), kind="markdown").entries
    got = {(e.fields["headline_tps"], e.fields["phase"], e.fields.get("hardware"), e.fields.get("gpu_count"))
           for e in es}
    assert (4521.3, "prefill", "RTX 3090", 2) in got and (132.8, "decode", "RTX 3090", 2) in got
    assert (131.4, "decode", "RTX 4090", None) in got      # the title's count is of its 3090s
    assert len(es) == 9


def test_pasted_logs_of_llama_cpp_and_sglang():
    log = ("llama_perf_sampler_print:    sampling time =      10.12 ms /   138 runs   (    0.07 ms per token, "
           "13636.36 tokens per second)\n"
           "llama_perf_context_print: prompt eval time =     200.00 ms /    11 tokens (   18.18 ms per token,    "
           "55.00 tokens per second)\n"
           "llama_perf_context_print:        eval time =    3000.00 ms /   127 runs   (   23.62 ms per token,    "
           "42.33 tokens per second)\n"
           "Prefill. latency: 0.03245 s, throughput:   3944.18 token/s\n"
           "Decode.  median latency: 0.00712 s, median throughput:    140.45 token/s\n")
    got = {(e.fields["headline_tps"], e.fields["phase"]) for e in scrapers.parse(log.encode(), kind="text").entries}
    assert got == {(55.0, "prefill"), (42.33, "decode"), (3944.18, "prefill"), (140.45, "decode")}


def test_saved_json_in_a_code_block_is_read_by_its_tool():
    text = ('## Repro\n\nvLLM 0.10.1, 1x H100 80GB\n\n```json\n{"backend": "vllm", "model_id": "m", "max_concurrency": 4, '
            '"request_throughput": 3.2, "output_throughput": 512.3, "total_token_throughput": 2048.9, '
            '"max_output_tokens_per_s": 640.0}\n```\n')
    r = scrapers.parse(text.encode(), kind="markdown")
    got = {(e.fields["headline_tps"], e.fields["phase"], e.fields["scope"], e.fields["concurrency"]) for e in r.entries}
    assert got == {(512.3, "decode", "aggregate", 4), (2048.9, "e2e", "aggregate", 4), (640.0, "decode", "aggregate", 4)}
    for e in r.entries:
        sel = e.selectors["headline_tps"]
        assert r.text[sel["start"]:sel["end"]] == e.quotes["headline_tps"]


def test_ollama_verbose_and_unknown_key_value_output():
    text = ("Running llama3.1:8b on my M2 Max with ollama run --verbose:\n\n```\nprompt eval count:    26 token(s)\n"
            "prompt eval duration: 123ms\nprompt eval rate:     211.38 tokens/s\neval count:           298 token(s)\n"
            "eval duration:        5.123s\neval rate:            58.17 tokens/s\n```\n\n```\nModel: Llama-3.1-8B\n"
            "GPU: RTX 4090\nDecode speed (tok/s): 45.2\nRequest throughput (req/s): 3.1\nTTFT (ms): 120\n```\n")
    by = {e.fields["headline_tps"]: e.fields for e in scrapers.parse(text.encode(), kind="markdown").entries}
    assert set(by) == {211.38, 58.17, 45.2}
    assert by[211.38]["phase"] == "prefill" and by[58.17]["phase"] == "decode" and by[58.17]["engine"] == "Ollama"
    assert by[58.17]["model"] == "llama3.1:8b" and by[58.17]["seconds_stated"] == 5.123
    assert by[45.2]["model"] == "Llama-3.1-8B" and by[45.2]["hardware"] == "RTX 4090"


def test_hundred_thousand_row_html_table_and_json_list_finish_in_bounded_time():
    rows = "".join(f"<tr><td>m{i}</td><td>{i % 500 + 1}.5</td></tr>" for i in range(100_000))
    r = _timed(f"<table><tr><th>Model</th><th>tok/s</th></tr>{rows}</table>".encode(), "html", 60)
    assert len(r.entries) == 100_000
    body = json.dumps({"entries": [{"model": f"m{i}", "tokens_per_second": i + 0.5} for i in range(100_000)]})
    r = _timed(body.encode(), "json", 60)
    assert len(r.entries) == 100_000 and r.entries[-1].selectors["headline_tps"]["exact"] == "99999.5"


def test_ten_thousand_html_columns_say_what_was_seen():
    cols = "".join(f"<th>c{i}</th>" for i in range(10_000))
    row = "".join("<td>1</td>" for _ in range(10_000))
    r = _timed(f"<table><tr>{cols}</tr><tr>{row}</tr></table>".encode(), "html", 30)
    assert not r.entries and sum(w.startswith("nothing parsed") for w in r.warnings) == 1


def test_memory_stays_bounded_on_a_large_text():
    """50 MB of text in a fresh process: the peak resident size grows by less than three times the input."""
    import subprocess
    import sys

    code = ("import resource, scrapers\n"
            "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "body = (b'lorem ipsum dolor sit amet 12 34 ' * 1_600_000)[:50_000_000]\n"
            "r = scrapers.parse(body, kind='text')\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base, any('read the first' in w for w in r.warnings))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(Path(__file__).resolve().parent.parent))
    grown_kb, warned = out.stdout.split()
    assert warned == "True"
    assert int(grown_kb) * 1024 < 3 * 50_000_000, f"grew {int(grown_kb) / 1024:.0f} MB"


def test_html_tables_the_table_reader_passes_over_are_read_by_meaning():
    html = (b"<html><body><h1>Llama-3-8B on two cards</h1><table><tr><th>Model</th><th>GPU</th><th>Tokens/s</th></tr>"
            b"<tr><td>Llama-3-8B</td><td>RTX 4090</td><td>120.5</td></tr></table>"
            b"<h2>Per-card decode speed (tok/s)</h2><table><tr><th>Model</th><th>3090Ti</th><th>4090</th></tr>"
            b"<tr><td>Llama-3-8B</td><td>98.1</td><td>121.3</td></tr></table></body></html>")
    r = scrapers.parse(html, kind="html")
    got = {(e.fields["headline_tps"], e.fields.get("hardware")) for e in r.entries}
    assert got == {(120.5, "RTX 4090"), (98.1, "3090Ti"), (121.3, "4090")}
    for e in r.entries:
        sel = e.selectors["headline_tps"]
        assert r.text[sel["start"]:sel["end"]] == e.quotes["headline_tps"]


def test_a_section_states_the_conditions_of_its_figures_once():
    """Clocks, power limit, KV cache dtype and run lengths stated once in a section reach its figures."""
    page = ("# Bench\n\n## Setup\n\nAll runs: clocks locked at 2100 MHz, power limited to 300 W, "
            "`--kv-cache-dtype fp8 --max-model-len 4096`, `--random-output-len 128`.\n\n"
            "| model | GPU | tok/s |\n| --- | --- | --- |\n| Qwen3-8B | RTX 4090 | 120.5 |\n")
    r = scrapers.parse(page.encode(), kind="markdown", content_type="text/markdown; charset=utf-8")
    (e,) = r.entries
    assert e.fields["power"] == "300 W" and "locked" in e.fields["clocks"]
    assert e.fields["kv_cache"] == "fp8" and e.fields["context_length"] == 4096 and e.fields["gen_tokens"] == 128


def test_tuning_story_marks_earlier_figures_superseded():
    import scrapers

    text = ("## Tuning\n\nInitial single-request decode throughput was a disappointing ~20 tok/s. Enabling "
            "CUDAGraph doubled throughput to ~43 tok/s. Tuning NCCL_PROTO=LL further boosted it to ~57 tok/s.\n\n"
            "## Elsewhere\n\nA different rig reached 30 tok/s.\n")
    r = scrapers.parse(text.encode(), kind="markdown")
    by = {e.fields["headline_tps"]: e for e in r.entries}
    assert by[20.0].fields.get("superseded_by") == 57.0 or by[20.0].fields.get("superseded_by") == 43.0
    assert by[43.0].fields.get("superseded_by") == 57.0
    assert "superseded_by" not in by[57.0].fields
    assert "superseded_by" not in by[30.0].fields     # another section's figure is not part of the story
    sel = by[43.0].selectors["superseded_by"]
    assert r.text[sel["start"]:sel["end"]] == "57"


def test_fewer_experts_than_the_page_also_runs_is_a_lossy_note():
    import scrapers

    text = ("# MoE bench\n\nExpert selection strategy that selects fewer experts based on offline profiles.\n\n"
            "| Config | decode tok/s |\n| --- | --- |\n| 6 experts | 16.8 |\n| 8 experts | 13.4 |\n")
    r = scrapers.parse(text.encode(), kind="markdown")
    by = {e.fields["headline_tps"]: e for e in r.entries}
    assert "6 experts" in by[16.8].fields["lossy_note"] and "lossy_note" not in by[13.4].fields
    plain = text.replace("Expert selection strategy that selects fewer experts based on offline profiles.", "Results.")
    assert not any("lossy_note" in e.fields for e in scrapers.parse(plain.encode(), kind="markdown").entries)


def test_up_from_names_the_earlier_figure():
    import scrapers

    r = scrapers.parse(b"## Chat\n\nThis configuration produces about 13 tokens/second in typical use. "
                       b"Up from ~9 tokens/second with only the old cards.\n", kind="markdown")
    by = {e.fields["headline_tps"]: e for e in r.entries}
    assert by[9.0].fields.get("superseded_by") == 13.0 and "superseded_by" not in by[13.0].fields


def test_html_row_selectors_stay_in_their_own_row():
    """Model, engine and hardware cells come before the figure in a row: each entry's selectors pin the
    cells of its own <tr>, never the next row's, and a value repeated in two rows is pinned twice."""
    from pathlib import Path

    import scrapers

    root = Path(__file__).resolve().parent.parent
    r = scrapers.parse((root / "app/demo_data/decode-leaderboard.html").read_bytes(), kind="html",
                       content_type="text/html")
    assert len(r.entries) >= 6
    for e in r.entries:
        h = e.selectors["headline_tps"]
        for f, sel in e.selectors.items():
            if f in ("page_pin", "rig_clocks", "rig_power", "superseded_by"):
                continue      # page context: stated elsewhere on the page by design
            a, b = sorted((sel["start"], h["start"]))
            assert "<tr" not in r.text[a:b], (f, e.fields.get(f), e.fields["headline_tps"])
    twenty = [e.selectors["draft_tokens"]["start"] for e in r.entries if e.fields.get("draft_tokens") == 20]
    assert len(twenty) == len(set(twenty)) >= 2
