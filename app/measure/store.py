"""Archive a finished measurement and record it: every exchange as WARC ``response`` and ``request``
records through the capture writer (under its lock), a ``metadata`` record with the parameters and
results, one fsync, then the ``snapshots`` rows and the ``measurements`` row in one commit. A failure
anywhere cuts the file back to where this measurement started and commits nothing.

Each response becomes a snapshot like any capture's (so `caveat reindex` and `caveat verify` see
exactly what they would see after a crawl); the measurement's own citation id is derived from its
metadata record's WARC-Record-ID, and ``/c/{id}`` shows the measurement.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

from sqlalchemy import insert, or_, select

from app.audit.engine import audit_recipes
from app.audit.measurements import measurement_json
from app.db import Database
from app.errors import NotFound
from app.models import Measurement, Recipe, Snapshot, User
from app.measure.client import Exchange
from app.measure.prompts import shared_ngrams
from app.measure.run import Outcome, summarise
from app.storage.tlog import append_written, sign_latest
from app.storage.warcfiles import WarcStore
from archive.citeid import citation_id_for_record
from archive.surt import surt
from archive.timestamps import bump, parse_ts17, ts17
from archive.warcwriter import build_record, build_request, build_response

METADATA_TYPE = "application/json"
_COLUMNS = [c.key for c in Snapshot.__table__.columns if c.key != "id"]
_DROP = {"transfer-encoding", "content-length"}


def check_recipe(db: Database, recipe_id: str | None) -> None:
    """Before any request: a named recipe must exist (a run that cannot be stored is not started)."""
    if not recipe_id:
        return
    with db.Session() as s:
        if s.scalar(select(Recipe.id).where(Recipe.recipe_id == recipe_id)) is None:
            raise NotFound(f"No recipe {recipe_id!r}; find its id with `caveat quote MODEL`, or leave out --recipe.")


def response_head(ex: Exchange) -> bytes:
    """Status line and headers as received, minus Transfer-Encoding (the body is stored de-chunked),
    Content-Length set to the bytes stored."""
    lines = [f"{ex.http_version} {ex.status} {ex.reason}"]
    lines += [f"{k}: {v}" for k, v in ex.response_headers if k.lower() not in _DROP]
    lines.append(f"Content-Length: {len(ex.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _timings(ex: Exchange) -> dict:
    t0 = ex.t_sent or 0.0
    return {"index": ex.index, "kind": ex.kind, "headers_ms": round((ex.t_head - t0) * 1000, 3) if ex.t_head else None,
            "chunk_arrivals_ms": [round((t - t0) * 1000, 3) for t in ex.arrivals],
            "usage_completion_tokens": ex.usage_tokens, "usage_prompt_tokens": ex.prompt_tokens,
            "model_reported": ex.model_reported}


def _unique_ts(session, key: str, wanted: str, used: set[str]) -> str:
    taken = set(session.scalars(select(Snapshot.timestamp).where(Snapshot.surt == key, Snapshot.timestamp >= wanted)))
    ts = wanted
    while ts in taken or ts in used:
        ts = bump(ts)
    used.add(ts)
    return ts


def _citation_ids(session, record_ids: list[str]) -> dict[str, str]:
    """A citation id per record id, unique across snapshots and measurements (clashes take the next)."""
    out: dict[str, str] = {}
    for rid in record_ids:
        attempt = 0
        while True:
            cid = citation_id_for_record(rid, attempt)
            clash = cid in out.values() or session.scalar(select(Snapshot.id).where(Snapshot.citation_id == cid)) \
                or session.scalar(select(Measurement.id).where(Measurement.citation_id == cid))
            if not clash:
                out[rid] = cid
                break
            attempt += 1
    return out


def store(db: Database, outcome: Outcome, *, user: User | None = None, notice=None) -> dict:
    """Archive the outcome's finished exchanges and record the measurement; returns its JSON object."""
    plan = outcome.plan
    result = summarise(outcome)
    settings = db.settings
    passed = bool(result["output_check"]["passed"])
    with WarcStore(db, notice=notice) as ws:
        ws.rotate_if_full()
        writer = ws.writer
        start = writer.size
        try:
            with db.Session() as s:
                rows: list[dict] = []
                used: dict[str, set[str]] = {}
                refs = []
                for ex, summary in zip(outcome.exchanges, result["requests"]):
                    url = plan.endpoint.url(ex.path)
                    key = surt(url)
                    ts = _unique_ts(s, key, ts17(ex.started_at), used.setdefault(key, set()))
                    body = bytes(ex.body)
                    sha = hashlib.sha256(body).digest()
                    rec = writer.append(build_response(url, ts, response_head(ex), body, len(body), sha,
                                                       level=writer.level))
                    req = writer.append(build_request(url, ts, ex.request_head + ex.request_body,
                                                      concurrent_to=rec.record_id, level=writer.level))
                    rows.append(dict(url=url, surt=key, timestamp=ts, captured_at=parse_ts17(ts), status=ex.status,
                                     mime="text/event-stream", record_type="response", warc_file=writer.path.name,
                                     offset=rec.offset, length=rec.length, record_id=rec.record_id,
                                     request_offset=req.offset, request_length=req.length,
                                     payload_digest=rec.payload_digest, block_digest=rec.block_digest,
                                     sha256=sha.hex(), payload_length=len(body), refers_to_id=None,
                                     refers_to_record_id=None, redirect_to=None, origin="capture", source_id=None,
                                     fixity="unchecked", citation_id=None, access="public"))
                    refs.append({**_timings(ex), "response_record_id": rec.record_id,
                                 "request_record_id": req.record_id, "warc_file": writer.path.name})
                meta_doc = {"caveat_measurement": 1, "recipe_id": plan.recipe_id, "result": result, "exchanges": refs}
                meta_body = json.dumps(meta_doc, ensure_ascii=False, indent=1, default=str).encode("utf-8")
                meta_url = plan.endpoint.url(outcome.path)
                meta_ts = ts17(datetime.now(timezone.utc))
                fields = [("WARC-Target-URI", meta_url)]
                if refs:
                    fields.append(("WARC-Concurrent-To", refs[0]["response_record_id"]))
                meta = writer.append(build_record("metadata", fields, content_type=METADATA_TYPE, ts=meta_ts,
                                                  head=meta_body, level=writer.level))
                writer.sync()  # durable before any row points at it
                cids = _citation_ids(s, [r["record_id"] for r in rows] + [meta.record_id])
                for r in rows:
                    r["citation_id"] = cids[r["record_id"]]
                snaps = []
                if rows:
                    values = [{c: r.get(c) for c in _COLUMNS} for r in rows]
                    by_record = {x.record_id: x for x in s.scalars(insert(Snapshot).returning(Snapshot), values)}
                    snaps = [by_record[r["record_id"]] for r in rows]
                for summary, snap in zip(result["requests"], snaps):
                    summary["snapshot_citation_id"] = snap.citation_id
                m = Measurement(recipe_id=plan.recipe_id, tps=float(result["decode_tps"] or 0.0),
                                non_repeating_prompts=not shared_ngrams(outcome.prompt_set),
                                output_checked=passed, n_runs=sum(1 for r in result["requests"] if r["kind"] == "unique"),
                                method=f"caveat measure: {plan.prompts} non-repeating prompts, max_tokens "
                                       f"{plan.max_tokens}, concurrency {plan.concurrency}, {outcome.path}",
                                notes=None if passed else "; ".join(result["output_check"]["problems"])[:2000],
                                measured_at=outcome.started_at, user_id=user.id if user else None, origin="measure",
                                endpoint=plan.endpoint.base, model=plan.model, engine=result["engine"],
                                citation_id=cids[meta.record_id], warc_file=writer.path.name,
                                record_id=meta.record_id, offset=meta.offset, length=meta.length, result=result)
                s.add(m)
                s.flush()
                if plan.recipe_id:
                    audit_recipes(s, settings, [plan.recipe_id])
                s.commit()
                out = measurement_json(m, settings)
        except BaseException:
            writer.truncate(start)
            writer.sync()
            raise
        append_written(settings, writer.path.name, writer.take_appended())
        with db.Session() as s:
            ws.update_cdxj(list(s.scalars(select(Snapshot).where(Snapshot.record_id.in_([r["record_id"] for r in rows])))))
    sign_latest(settings)
    return out
