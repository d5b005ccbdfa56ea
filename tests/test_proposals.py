"""The learned reader's proposals stored (issue 26 item 2): entries with status "proposed", their confidence,
selectors, evidence and the model that chose them; never in a recipe, a quotable answer, a working number or
a "Quote this"; listed with /api/entries?status=proposed, in the review queue, in the crawl summary; an add
(or fix) correction at a proposal's figure confirms it as a reviewer's entry, a reject drops it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import func, select

from app.audit import queue
from app.audit.engine import audit_all, audit_entries
from app.claims.store import store_parse
from app.crawl.workflow import reparse
from app.errors import BadRequest
from app.models import Correction, Entry, EntryVersion, Recipe, Snapshot
from app.review import corrections as review
from scrapers import learned
from scrapers.fields import ParsedEntry, ParseResult
from tests.audit_data import glm_entries, make_snapshot, make_source

# a real page (held-out set 12, labelled before any parser ran on it): pandas' printout of a benchmark's
# averages, no unit beside the figures; the rules read none of it, the learned reader proposes the tok/s ones
MISSED = (Path(__file__).parent / "data" / "real-heldout12" / "pages" /
          "results-tech-grandpa-llmperf-homelab-single-statistics.md").read_text()
FIGURES = {41.993347, 46.405024, 29.184001}
# the same model read by the rules elsewhere, at a figure above the proposals' decode figures
READ = """# Qwen2.5-14B-Instruct on the 7900 XTX

| Model | GPU | Engine | Decode tok/s |
| --- | --- | --- | --- |
| Qwen2.5-14B-Instruct | RX 7900 XTX | llama.cpp | 45.2 |
"""


def _crawl(cli, server):
    cli("source", "add", "missed", server.route("/missed.md", MISSED, content_type="text/markdown"),
        "--kind", "markdown")
    cli("source", "add", "read", server.route("/read.md", READ, content_type="text/markdown"), "--kind", "markdown")
    return cli("crawl", "read", "missed")


def _proposals(db):
    with db.Session() as s:
        return {e.headline_tps: e for e in s.scalars(select(Entry).where(Entry.status == "proposed",
                                                                          Entry.gone.is_(False)))}


def test_proposals_are_stored_with_confidence_selectors_evidence_and_model(cli, server, db, client):
    r = _crawl(cli, server)
    assert any(x.startswith("source ") and "proposed" in x for x in r.output.splitlines()), r.output
    missed_line = next(x for x in r.output.splitlines() if x.startswith("missed "))
    assert missed_line.split()[1] == "empty" and int(missed_line.split()[7]) == 3, r.output
    assert "learned reader proposes 3 figure(s)" in r.output and "figure(s) proposed by the learned reader" in r.output
    props = _proposals(db)
    assert set(props) == FIGURES
    net = learned.load()
    with db.Session() as s:
        for e in props.values():
            assert e.recipe_id is None and e.working_tps is None and e.basis == "none"
            assert "proposed by the learned reader" in e.basis_reason and e.confidence >= net.threshold
            v = s.get(EntryVersion, e.current_version_id)
            by = v.provenance["_chosen_by"]
            assert by["part"] == "learned" and by["model"] == learned.CHOSEN_BY
            assert by["model_version"] == net.model_version and by["confidence"] == e.confidence
            sel = v.provenance["_selectors"]["headline_tps"]
            assert MISSED[sel["start"]:sel["end"]] == sel["exact"] == v.provenance["headline_tps"]
            assert v.provenance["_context"].startswith("RTX ") and sel["exact"] in v.provenance["_context"]
            assert v.fields["phase"] == "decode" and by["phase"] == "decode"
    # the API: not among the read entries by default; listed with status=proposed, most confident first
    default = client.get("/api/entries").json()
    assert {e["headline_tps"] for e in default["entries"]} == {45.2}
    assert all(e["status"] == "read" and e["chosen_by"] == {"part": "rules"} for e in default["entries"])
    listed = client.get("/api/entries", params={"status": "proposed"}).json()
    assert {e["headline_tps"] for e in listed["entries"]} == set(props) and listed["total"] == 3
    confs = [e["confidence"] for e in listed["entries"]]
    assert confs == sorted(confs, reverse=True)
    one = listed["entries"][0]
    assert one["status"] == "proposed" and one["chosen_by"]["model_version"] == net.model_version
    assert one["evidence"] and "pos=" in one["citation"] and one["basis"] == "none"
    assert client.get("/api/entries", params={"status": "any"}).json()["total"] == 4
    bad = client.get("/api/entries", params={"status": "maybe"})
    assert bad.status_code == 400 and "read, proposed or any" in bad.json()["error"]
    detail = client.get(f"/api/entries/{props[41.993347].id}").json()
    assert detail["status"] == "proposed" and detail["provenance"]["headline_tps"]["selector"]["exact"] == "41.993347"


def test_proposals_never_feed_a_quotable_answer_or_a_working_number(cli, server, db, client):
    _crawl(cli, server)
    with db.Session() as s:
        recipes = list(s.scalars(select(Recipe)))
        assert len(recipes) == 1     # the rules' entry's recipe only: no proposal is in a recipe
        assert s.scalar(select(func.count()).select_from(Entry).where(Entry.recipe_id == recipes[0].recipe_id)) == 1
    answer = client.get("/api/quotable", params={"q": "qwen2.5"}).json()
    assert [a["quotable_tps"] for a in answer["recipes"]] == [45.2]
    assert all(c["value"] not in FIGURES for c in answer["recipes"][0]["citations"])
    assert client.get("/api/quotable", params={"q": "rtx"}).json()["total"] == 0   # no recipe from a proposal
    # the entry page of a proposal says do not quote, and why; never the green "Quote this"
    page = BeautifulSoup(client.get(f"/entries/{_proposals(db)[41.993347].id}").text, "html.parser")
    assert "Quote this" not in page.get_text() and "proposed by the learned reader" in page.get_text()
    # `caveat audit` over everything still gives a proposal nothing
    assert cli("audit", "--all").exit_code == 0
    with db.Session() as s:
        e = s.get(Entry, _proposals(db)[29.184001].id)
        assert e.working_tps is None and e.basis == "none" and e.flag_count == 0


def test_the_review_queue_lists_proposals_with_their_confidence(cli, server, db, client):
    _crawl(cli, server)
    queue.clear_cache()
    flagged = client.get("/queue.json").json()
    assert flagged["proposals"]["count"] == 3 and flagged["proposals"]["link"] == "/queue?status=proposed"
    assert all(e["status"] == "read" for e in flagged["entries"])
    data = client.get("/queue.json", params={"status": "proposed"}).json()
    assert data["total"] == 3 and {e["headline_tps"] for e in data["entries"]} == FIGURES
    assert [e["confidence"] for e in data["entries"]] == sorted((e["confidence"] for e in data["entries"]), reverse=True)
    assert all(e["status"] == "proposed" for e in data["entries"])
    html = BeautifulSoup(client.get("/queue", params={"status": "proposed"}).text, "html.parser")
    rows = html.select("tr.queue-row")
    assert len(rows) == 3 and all(r.select_one(".proposal-badge").get_text() == "proposal" for r in rows)
    assert rows[0].select_one(".confidence").get_text().endswith("% confident")
    front = BeautifulSoup(client.get("/queue").text, "html.parser")
    assert front.select_one("a.proposals-link").get_text().startswith("3 proposals")
    assert client.get("/queue.json", params={"status": "nope"}).status_code == 400


def test_the_crawl_json_counts_proposals(cli, server):
    cli("source", "add", "missed", server.route("/missed.md", MISSED, content_type="text/markdown"),
        "--kind", "markdown")
    out = json.loads(cli("crawl", "--json").stdout)
    rep = out["reports"][0]
    assert rep["proposed"] == 3 and rep["proposed_new"] == 3 and rep["new"] == 0
    again = json.loads(cli("crawl", "--json").stdout)["reports"][0]
    assert again["proposed"] == 3 and again["proposed_new"] == 0


def _cid(db) -> str:
    with db.Session() as s:
        return s.scalar(select(Snapshot.citation_id).join(Entry, Entry.last_snapshot_id == Snapshot.id)
                        .where(Entry.status == "proposed"))


def test_an_add_correction_confirms_a_proposal_as_a_reviewer_entry(cli, server, db, client):
    _crawl(cli, server)
    before = _proposals(db)
    cid = _cid(db)
    out = review.add_entry(db, db.settings, cid, "41.993347", "RTX A5000  ", "\n", {"hardware": "RTX A5000"},
                           "the tokens per second table's A5000 row", actor="alice")
    e = out["entry"]
    assert e["fields"]["headline_tps"] == 41.993347 and e["fields"]["phase"] == "decode"   # the proposal's phase
    assert e["fields"]["hardware"] == "RTX A5000" and e["status"] == "read"
    got = client.get(f"/api/entries/{out['entry_id']}").json()
    assert got["status"] == "read" and got["chosen_by"]["part"] == "reviewer"
    assert got["chosen_by"]["proposed_by"]["model_version"] == learned.load().model_version
    assert got["field_sources"]["headline_tps"] == "reviewer" and got["recipe_id"]
    after = _proposals(db)
    assert set(after) == set(before) - {41.993347}
    with db.Session() as s:
        assert s.get(Entry, before[41.993347].id).gone    # the proposal itself is gone from the page
    # the confirmed figure now counts: it is audited and in a recipe with a working number
    with db.Session() as s:
        confirmed = s.get(Entry, out["entry_id"])
        assert confirmed.basis != "none" and confirmed.working_tps == 41.993347
    # and stays confirmed through a reparse; the proposals not confirmed stay proposals
    reparse(db, db.settings, "missed")
    assert set(_proposals(db)) == set(before) - {41.993347}
    assert client.get(f"/api/entries/{out['entry_id']}").json()["status"] == "read"
    with db.Session() as s:      # the correction itself carries the proposal's names
        c = s.scalar(select(Correction).where(Correction.kind == "add"))
        assert c.fields == {"phase": "decode", "hardware": "RTX A5000"}
    # with no learned reader at all (or a model that no longer proposes it) the reviewer's entry is unchanged
    from tests.conftest import make_settings

    off = make_settings(db.settings.data_dir.parent, db.settings.database_url, learned_proposals=False)
    reparse(db, off, "missed")
    kept = client.get(f"/api/entries/{out['entry_id']}").json()
    assert kept["gone"] is False and kept["fields"]["phase"] == "decode" and kept["fields"]["hardware"] == "RTX A5000"
    assert kept["version"] == got["version"] and _proposals(db) == {}


def test_fix_confirms_and_reject_drops_a_proposal(cli, server, db):
    _crawl(cli, server)
    props = _proposals(db)
    out = review.fix_entry(db, db.settings, props[29.184001].id, {"hardware": "RTX A4000"}, "right, the A4000 row",
                           actor="alice")
    assert out["entry"]["fields"]["headline_tps"] == 29.184001 and out["entry"]["status"] == "read"
    assert out["entry"]["fields"]["hardware"] == "RTX A4000" and out["entry_id"] != props[29.184001].id
    review.reject_entry(db, db.settings, props[46.405024].id, "a mean nobody claims", actor="bob")
    assert set(_proposals(db)) == {41.993347}
    with db.Session() as s:
        assert s.get(Entry, props[46.405024].id).gone


def test_an_add_with_a_bad_selector_stores_nothing(cli, server, db):
    _crawl(cli, server)
    with pytest.raises(BadRequest, match="not in the archived text"):
        review.add_entry(db, db.settings, _cid(db), "41.993348", "", "", {}, "typo", actor="alice")
    assert len(_proposals(db)) == 3


def test_no_proposals_when_the_setting_is_off(cli, server, settings):
    from tests.conftest import make_settings

    off = make_settings(settings.data_dir.parent, settings.database_url, learned_proposals=False)
    cli("source", "add", "missed", server.route("/missed.md", MISSED, content_type="text/markdown"),
        "--kind", "markdown")
    rep = json.loads(cli("crawl", "--json", settings_override=off).stdout)["reports"][0]
    assert rep["proposed"] == 0


def _proposal(tps: float, quote: str, start: int, version: str = "v1.000000000000") -> ParsedEntry:
    return ParsedEntry(fields={"headline_tps": tps, "model": "GLM-5.3-Flash", "test": "tg128", "phase": "decode"},
                       quotes={"headline_tps": quote}, context="[tg128] | <ROCm> | " + quote,
                       selectors={"headline_tps": {"exact": quote, "prefix": "", "suffix": "", "start": start,
                                                   "end": start + len(quote)}},
                       chosen_by={"part": "learned", "model": learned.CHOSEN_BY, "model_version": version,
                                  "confidence": 0.91})


def test_stored_proposals_on_both_databases(backend_db):
    """SQLite and PostgreSQL alike: proposals stored beside the rules' entries, outside every recipe and
    audit; a proposal not made again goes; another model's proposal is another entry."""

    with backend_db.session() as s:
        src, snap = make_source(s), make_snapshot(s)
        result = ParseResult(kind="markdown", entries=glm_entries(), proposals=[_proposal(41.63, "41.63", 10),
                                                                               _proposal(38.92, "38.92", 30)])
        summary = store_parse(s, src, snap, result)
        assert summary.new == len(glm_entries()) and summary.proposed == 2 and summary.proposed_new == 2
        assert len(summary.proposal_ids) == 2 and not set(summary.proposal_ids) & set(summary.entry_ids)
        audit_entries(s, backend_db.settings, summary.entry_ids + summary.proposal_ids)
        audit_all(s, backend_db.settings)
        props = list(s.scalars(select(Entry).where(Entry.status == "proposed")))
        assert len(props) == 2 and all(e.recipe_id is None and e.basis == "none" and e.working_tps is None
                                       and e.confidence == 0.91 and e.flag_count == 0 for e in props)
        assert all(e.entry_key.startswith("p") for e in props)
        read = list(s.scalars(select(Entry).where(Entry.status == "read")))
        assert len(read) == len(glm_entries()) and all(e.recipe_id for e in read)
        # the same page again, one proposal made by another model version, the other not at all
        again = ParseResult(kind="markdown", entries=glm_entries(),
                            proposals=[_proposal(41.63, "41.63", 10, "v1.111111111111")])
        second = store_parse(s, src, snap, again)
        assert second.proposed == 1 and second.proposed_new == 1 and second.gone == 0
        live = list(s.scalars(select(Entry).where(Entry.status == "proposed", Entry.gone.is_(False))))
        assert [e.headline_tps for e in live] == [41.63] and live[0].id not in {e.id for e in props}
        assert all(s.get(Entry, e.id).gone for e in props)
