"""Field-level precision and recall of the parsers over the hand-written corpus in tests/data/corpus.

Each page ``<kind>/<name>.<ext>`` has ``<name>.expected.json`` beside it: the entries a careful reader
extracts (canonical fields; ``label``/``headline_label`` are presentation and not scored) and substrings
the warnings must contain. Entries are matched greedily by the number of agreeing fields.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

import scrapers

CORPUS = Path(__file__).parent / "data" / "corpus"
UNSCORED = {"lead", "around", "label", "headline_label",
            "page_pin", "rig_clocks", "rig_power", "caption"}   # page context carried for the rules, not claims
PAGES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and not p.name.endswith(".expected.json"))


def _expected(page: Path) -> dict:
    return json.loads(page.with_name(page.stem + ".expected.json").read_text())


def same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()) == " ".join(b.split())
    return a == b


def score(expected: list[dict], parsed: list[dict]) -> tuple[int, int, int]:
    """(true positives, expected field count, parsed field count) after greedy matching."""
    parsed = [{k: v for k, v in p.items() if k not in UNSCORED} for p in parsed]
    left = list(range(len(parsed)))
    tp = 0
    for exp in expected:
        best, best_n = None, -1
        for i in left:
            n = sum(1 for k, v in exp.items() if k in parsed[i] and same(parsed[i][k], v))
            if n > best_n:
                best, best_n = i, n
        if best is not None and best_n > 0:
            left.remove(best)
            tp += best_n
    return tp, sum(len(e) for e in expected), sum(len(p) for p in parsed)


def test_corpus_has_three_pages_per_kind():
    for kind in scrapers.KINDS:
        assert len([p for p in PAGES if p.parent.name == kind]) >= 3, kind
    assert len(PAGES) >= 12


def test_precision_and_recall_over_the_corpus():
    tp = n_exp = n_got = 0
    report = []
    for page in PAGES:
        exp = _expected(page)
        result = scrapers.parse(page.read_bytes(), kind=page.parent.name)
        t, e, g = score(exp["entries"], [x.fields for x in result.entries])
        tp, n_exp, n_got = tp + t, n_exp + e, n_got + g
        report.append(f"{page.relative_to(CORPUS)}: {t}/{e} expected found, {g} parsed")
    precision, recall = tp / n_got, tp / n_exp
    print("\n".join(report), f"\nprecision {precision:.3f} recall {recall:.3f}")
    assert precision >= 0.95 and recall >= 0.95, "\n".join(report)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_each_page(page):
    exp = _expected(page)
    result = scrapers.parse(page.read_bytes(), kind=page.parent.name)
    assert len(result.entries) == len(exp["entries"])
    warnings = " ".join(result.warnings + [w for e in result.entries for w in e.warnings])
    for want in exp["warnings_contain"]:
        assert want in warnings, f"missing warning {want!r} in {warnings!r}"
    if not exp["entries"]:
        assert result.warnings, "a page where nothing parses must say so"


def _visible_text(page: Path) -> str:
    raw = page.read_bytes()
    if page.suffix == ".html":
        soup = BeautifulSoup(raw, "lxml")
        parts = [soup.get_text(" ")]
        parts += [str(el.get("title")) for el in soup.find_all(title=True)]
        return " ".join(" ".join(parts).split())
    return raw.decode("utf-8")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_quotes_are_exact_text_of_the_document(page):
    text = _visible_text(page)
    result = scrapers.parse(page.read_bytes(), kind=page.parent.name)
    for e in result.entries:
        for f, q in e.quotes.items():
            needle = " ".join(q.split()) if page.suffix == ".html" else q
            assert needle in text, f"{f}: quote {q!r} not in the document"
        if "headline_tps" in e.quotes:
            digits = re.sub(r"\D", "", e.quotes["headline_tps"])
            assert digits and digits[0] in re.sub(r"\D", "", str(e.fields["headline_tps"]))


def _ladder(entries):
    return [(e.fields.get("draft_tokens"), e.fields["headline_tps"]) for e in entries
            if "GLM-5.3-Flash" in (e.fields.get("model") or "") and e.fields.get("draft_tokens")]


@pytest.mark.parametrize("name,kind", [("json/localmaxxing.json", "json"), ("html/ladder.html", "html")])
def test_seed_ladder_and_headline_conditions(name, kind):
    result = scrapers.parse((CORPUS / name).read_bytes(), kind=kind)
    ladder = sorted(_ladder(result.entries))
    assert ladder == [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]
    top = next(e for e in result.entries if e.fields["headline_tps"] == 1004.9)
    f = top.fields
    assert (f["steady_low"], f["steady_high"]) == (373.0, 391.0)
    assert f["acceptance_rate"] == 1.0 and f["gpu_count"] == 2 and f["tp"] == 2
    assert f["notes"].startswith("acceptance 64/1.00 on locked attractor")
    assert top.quotes["headline_tps"] in ("1004.9", "1,004.9")
    assert "steady state 373-391" in top.quotes["steady_low"]
