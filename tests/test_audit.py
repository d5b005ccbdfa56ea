"""The audit service on real rows (stored through the claims service), on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select

from app.models import Entry, Flag, Recipe
from app.audit.engine import audit_entries, flag_json, flags_for_entries
from app.audit.rules import RULESET_VERSION
from scrapers.fields import ParsedEntry
from tests.audit_data import GLM_NOTES, entry_by_draft, glm_entries, store


def test_seed_recipe_audit_end_to_end(backend_db):
    s_ = backend_db.settings
    with backend_db.session() as s:
        _, snap, summary = store(s, glm_entries())
        counts = audit_entries(s, s_, summary.entry_ids[-1:])  # one entry audits its whole recipe
        assert counts["entries"] == 6 and counts["recipes"] == 1
    with backend_db.session() as s:
        top = entry_by_draft(s, 64)
        assert (top.working_tps, top.basis, top.inflation_ratio) == (373.0, "steady_state", 2.69)
        assert (top.max_severity, top.severity_rank, top.decision_status) == ("critical", 4, "pending")
        assert top.flag_count == top.open_flag_count >= 4
        rules = {f.rule: f for f in s.scalars(select(Flag).where(Flag.entry_id == top.id))}
        for r in ("full_acceptance", "repeat_loop", "headline_above_steady_state", "ladder_top_rung"):
            assert rules[r].active and rules[r].ruleset_version == RULESET_VERSION
        ev = rules["headline_above_steady_state"].evidence
        assert (ev["numbers"]["ratio_to_low"], ev["numbers"]["ratio_to_high"]) == (2.69, 2.57)
        # stored host-free (issue 13): built into URLs when served
        assert rules["repeat_loop"].citation.startswith(f"/c/{snap.citation_id}?q=")
        assert ev["quotes"][0]["citation"].startswith(f"/c/{snap.citation_id}?q=")
        served = flag_json(rules["repeat_loop"], settings=s_)
        assert served["citation"].startswith(f"http://caveat.test/c/{snap.citation_id}?q=")
        assert served["evidence"]["quotes"][0]["citation"].startswith("http://caveat.test/c/")
        recipe = s.scalar(select(Recipe))
        assert (recipe.quotable_tps, recipe.basis) == (373.0, "steady_state")
        q = recipe.quotable
        assert (q["headline_tps"], q["quotable_tps"], q["inflation_ratio"]) == (1004.9, 373.0, 2.69)
        assert {"full_acceptance", "repeat_loop", "headline_above_steady_state", "ladder_top_rung"} <= {
            f["rule"] for f in q["flags"]}
        bottom = entry_by_draft(s, 8)
        assert bottom.working_tps == 373.0  # its recipe's working number, whichever rung it is
        listing = flags_for_entries(s, [top.id, bottom.id])
        assert listing[top.id][0]["severity"] == "critical"
        assert set(listing[top.id][0]) >= {"rule", "severity", "explanation", "citation"}


def test_flag_goes_inactive_when_rule_stops_firing_and_decisions_survive(backend_db):
    settings = backend_db.settings
    with backend_db.session() as s:
        src, _, summary = store(s, glm_entries())
        audit_entries(s, settings, summary.entry_ids)
        top = entry_by_draft(s, 64)
        loop = s.scalar(select(Flag).where(Flag.entry_id == top.id, Flag.rule == "repeat_loop"))
        loop.status = "dismissed"
        single = s.scalar(select(Flag).where(Flag.entry_id == top.id, Flag.rule == "single_run"))
        single.status = "confirmed"
        loop_id = loop.id
    # a re-crawl: the notes lose the attractor phrase, and a run count appears
    changed = glm_entries()
    changed[-1].fields["notes"] = "acceptance 64/1.00"
    changed[-1].quotes["notes"] = "acceptance 64/1.00"
    with backend_db.session() as s:
        from app.models import Source

        source = s.get(Source, src.id)
        _, _, summary = store(s, changed, source=source)
        audit_entries(s, settings, summary.entry_ids)
    with backend_db.session() as s:
        loop = s.get(Flag, loop_id)
        assert loop.active is False and loop.status == "dismissed"
        assert s.scalar(select(Flag).where(Flag.rule == "single_run", Flag.entry_id == loop.entry_id)).status == "confirmed"
        assert s.scalar(select(Flag).where(Flag.rule == "full_acceptance", Flag.entry_id == loop.entry_id)).active


def test_recipe_without_steady_state_and_clean_entry_uses_headline(db):
    clean = ParsedEntry(fields=dict(model="llama 7B", hardware="RTX 4090", gpu_count=1, engine="llama.cpp",
                                    engine_commit="b4567", test="tg512", gen_tokens=512, context_length=32768,
                                    headline_tps=131.42, spread=0.59, n_runs=5, concurrency=1),
                        quotes={"headline_tps": "131.42 ± 0.59"})
    with db.session() as s:
        _, _, summary = store(s, [clean])
        audit_entries(s, db.settings, summary.entry_ids)
        e = s.get(Entry, summary.entry_ids[0])
        assert (e.working_tps, e.basis, e.flag_count, e.decision_status, e.severity_rank) == (
            131.42, "headline", 0, "none", 0)


def test_flagged_entry_without_steady_state_gets_none_with_reason(db):
    flagged = ParsedEntry(fields=dict(model="M", hardware="H", engine="E", headline_tps=876.5,
                                      prompt="repeat a text verbatim", n_runs=1),
                          quotes={"prompt": "repeat a text verbatim"})
    with db.session() as s:
        _, _, summary = store(s, [flagged])
        audit_entries(s, db.settings, summary.entry_ids)
        e = s.get(Entry, summary.entry_ids[0])
        assert e.working_tps is None and e.basis == "none"
        assert "repetitive_prompt (high)" in e.basis_reason


def test_audit_is_idempotent(db):
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        audit_entries(s, db.settings, summary.entry_ids)
        before = {(f.entry_id, f.rule): (f.id, f.updated_at) for f in s.scalars(select(Flag))}
        audit_entries(s, db.settings, summary.entry_ids)
        after = {(f.entry_id, f.rule): (f.id, f.updated_at) for f in s.scalars(select(Flag))}
        assert before == after


def test_notes_quote_is_cited(db):
    with db.session() as s:
        _, snap, summary = store(s, glm_entries())
        audit_entries(s, db.settings, summary.entry_ids)
        q = s.scalar(select(Recipe)).quotable
        urls = [c["citation"] for c in q["citations"]]
        assert any("attractor" in u for u in urls) and GLM_NOTES
        assert q["steady_state"]["citation"].endswith("?q=373%20to%20391")
