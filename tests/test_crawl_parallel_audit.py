"""A long page is audited in two processes at once (issue 10's linear crawl): the result is exactly what
one process gives, on SQLite and on PostgreSQL, and a worker's failure fails the crawl, not the claims."""

from __future__ import annotations

from sqlalchemy import select

import app.crawl.workflow as crawl_service

import app.watch.schedule as schedule_service
from app.db import Database
from app.models import Entry, Flag, Recipe
from app.audit.engine import audit_all
from app.claims.sources import add_source
from tests.helpers import LocalServer

MODELS = ["GLM-5.3-Flash", "Qwen3-235B-A22B", "Llama-3.3-70B", "gpt-oss-120b"]
GPUS = ["RTX PRO 6000 Blackwell", "H100 SXM", "RTX 5090"]


def _page(n: int) -> str:
    rows = []
    for i in range(n):
        model, gpu = MODELS[i % 4], GPUS[(i // 4) % 3]
        draft = [None, 8, 20, 64][(i // 12) % 4]
        notes = ["", "steady state 373-391 tok/s", "acceptance 64/1.00 on locked attractor", "best of 5 runs"][i % 4]
        tps = 100 + (i * 37) % 900 + 0.5
        rows.append(f"<tr><td>{model}</td><td>{gpu}</td><td>SGLang {['0.5.4', 'nightly'][i % 2]}</td><td>NVFP4</td>"
                    f"<td>{draft or ''}</td><td>{tps:,}</td><td>user{i % 50}</td><td>{notes}</td></tr>")
    return ("<html><body><h2>Decode speed</h2><table><tr><th>Model</th><th>GPU</th><th>Engine</th><th>Quant</th>"
            "<th>Draft tokens</th><th>Tokens/s</th><th>Submitter</th><th>Notes</th></tr>" + "".join(rows)
            + "</table></body></html>")


def _state(db: Database) -> tuple[dict, dict, dict]:
    with db.session() as s:
        entries = {e.entry_key: (e.working_tps, e.basis, e.basis_reason, e.inflation_ratio, e.max_severity,
                                 e.flag_count) for e in s.scalars(select(Entry))}
        flags = {}
        for f in s.scalars(select(Flag).where(Flag.active.is_(True))):
            flags.setdefault(f.entry_id, set()).add((f.rule, f.severity, f.explanation))
        recipes = {r.recipe_id: (r.quotable_tps, r.basis) for r in s.scalars(select(Recipe))}
    return entries, flags, recipes


def test_a_long_page_audited_in_two_processes_is_audited_as_by_one(backend_settings, monkeypatch):
    monkeypatch.setattr(crawl_service, "AUDIT_BATCH", 60)          # about ten batches of whole recipes
    monkeypatch.setattr(crawl_service, "AUDIT_PARALLEL_MIN", 100)
    ran = []
    real = crawl_service._audit_in_processes
    monkeypatch.setattr(crawl_service, "_audit_in_processes",
                        lambda *a, **k: (ran.append(a[3]), real(*a, **k))[1])
    settings = backend_settings.model_copy(update={"audit_processes": 2})
    db = Database(settings)
    srv = LocalServer()
    srv.start()
    try:
        url = srv.route("/board", _page(600))
        with db.session() as s:
            add_source(s, "board", url, "html")
        report = schedule_service.crawl(db, settings)[0]
        assert report.status in ("ok", "warnings"), report.error
        assert ran == [2], "the parallel path ran, with two processes"
        parallel = _state(db)
        assert len(parallel[0]) == 600 and all(v[1] is not None for v in parallel[0].values())
        assert parallel[1], "flags were raised"
        with db.session() as s:       # the same entries audited again in one process change nothing
            audit_all(s, settings)
        assert _state(db) == parallel
    finally:
        srv.stop()
        db.dispose()


def test_a_failing_audit_process_fails_the_crawl_and_keeps_the_claims(settings, monkeypatch):
    monkeypatch.setattr(crawl_service, "AUDIT_BATCH", 60)
    monkeypatch.setattr(crawl_service, "AUDIT_PARALLEL_MIN", 100)
    settings = settings.model_copy(update={"audit_processes": 2})
    db = Database(settings)
    srv = LocalServer()
    srv.start()
    try:
        url = srv.route("/board", _page(300))
        with db.session() as s:
            add_source(s, "board", url, "html")
        # the second batch goes to the other process (batches alternate): make it one that cannot be audited
        real = crawl_service._audit_batches
        monkeypatch.setattr(crawl_service, "_audit_batches",
                            lambda s, ids: (lambda b: [b[0], ["not an id"], *b[1:]])(real(s, ids)))
        report = schedule_service.crawl(db, settings)[0]
        assert report.status == "failed"
        assert any(w.startswith("audit: ") for w in report.summary.warnings)
        with db.session() as s:
            assert s.query(Entry).count() == 300      # what was parsed and stored is kept
    finally:
        srv.stop()
        db.dispose()
