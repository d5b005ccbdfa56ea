"""The citation page of a measurement (``/c/{id}``): the measurement as the API returns it, its
evidence record (the WARC ``metadata`` record) re-read with its digest recomputed, and each exchange's
own snapshot citation."""

from __future__ import annotations

from contextlib import nullcontext

import json
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.audit.engine import audit_recipes
from app.audit.measurements import measurement_json
from app.config import Settings
from app.models import Measurement, Recipe, Snapshot
from app.measure.store import _citation_ids
from app.storage.indexing import MetadataHandler, register_metadata_handler
from app.measure.prompts import shared_ngrams
from app.measure.recheck import recheck
from archive.citeid import normalize_citation_id
from app.storage.objects import read_stored
from archive.reader import RecordUnreadable, read_record


def find(session: Session, citation_id: str) -> Measurement | None:
    cid = normalize_citation_id(citation_id)
    if cid is None:
        return None
    return session.scalar(select(Measurement).where(Measurement.citation_id == cid))


def fixity(settings: Settings, m: Measurement) -> tuple[str, str, dict | None]:
    """(ok|failed, message, the metadata record's JSON) from the WARC bytes, read now."""
    try:
        rec = read_stored(settings, m.warc_file, m.offset, m.length, max_bytes=settings.decode_max_bytes)
    except (RecordUnreadable, OSError) as exc:
        return "failed", f"the evidence record cannot be read: {exc}", None
    problems = list(rec.problems)
    if rec.header("WARC-Record-ID") != m.record_id:
        problems.append(f"record id in file is {rec.header('WARC-Record-ID')}, the measurement says {m.record_id}")
    if rec.block_digest_ok is False:
        problems.append("block digest mismatch")
    try:
        doc = json.loads(rec.block)
    except ValueError:
        doc = None
        problems.append("the evidence record is not JSON")
    if problems:
        return "failed", "; ".join(problems), doc
    return "ok", f"the evidence record's block digest ({rec.header('WARC-Block-Digest')}) matches its bytes, " \
                 "recomputed now", doc


def page(session: Session, settings: Settings, m: Measurement) -> dict:
    data = measurement_json(m, settings)
    state, message, doc = fixity(settings, m)
    data["fixity"] = state
    data["fixity_message"] = message
    data["kind"] = "measurement"
    if doc is not None:
        # the archived result is the evidence: say so when the database's copy differs from it
        archived = dict(doc.get("result") or {})
        stored = {k: v for k, v in (m.result or {}).items() if k != "requests"}
        archived.pop("requests", None)
        data["matches_archive"] = archived == stored
    return data


def is_measurement_record(content_type: str | None, block: bytes) -> bool:
    """Whether a ``metadata`` record may be a measurement's evidence (JSON; a block too large for the
    indexer to keep is empty here and is read again by :func:`restore`)."""
    return (content_type or "").startswith("application/json") and (not block or b'"caveat_measurement"' in block[:64])


def restore(db, path, records: list[tuple[int, int, str, bytes]], *, session=None) -> int:
    """Re-create the measurement rows the WARC files hold (`caveat reindex`): one per ``metadata``
    record `caveat measure` wrote, (offset, length, WARC-Record-ID, block), that has no row. The
    citation id is derived from the record id as before; who ran it is not in the WARC and is left
    empty. The stated result is recomputed from the exchange records it names (:mod:`app.measure.recheck`);
    one whose figures or checks do not follow is restored unverified and never counts. Returns how many
    were restored. With ``session`` (`caveat import-warc`) the rows join that
    transaction and are committed by its owner."""
    made = 0
    recipes: set[str] = set()
    warc_file = path.name
    with (nullcontext(session) if session is not None else db.Session()) as s:
        for offset, length, record_id, block in records:
            if not record_id or s.scalar(select(Measurement.id).where(Measurement.record_id == record_id)):
                continue
            try:
                if not block:
                    block = read_record(path, offset, length, max_bytes=db.settings.decode_max_bytes).block
                doc = json.loads(block)
                if not isinstance(doc, dict) or doc.get("caveat_measurement") != 1:
                    continue
                result = doc["result"]
                started = datetime.fromisoformat(str(result["started_at"]).replace("Z", "+00:00"))
            except (ValueError, KeyError, TypeError, RecordUnreadable, OSError):
                continue
            by_record = {e.get("response_record_id"): e.get("index") for e in doc.get("exchanges") or []}
            cids = dict(s.execute(select(Snapshot.record_id, Snapshot.citation_id)
                                  .where(Snapshot.record_id.in_([r for r in by_record if r]))).all())
            index_cid = {by_record[r]: c for r, c in cids.items()}
            for req in result.get("requests") or []:
                if req.get("index") in index_cid:
                    req["snapshot_citation_id"] = index_cid[req["index"]]
            recipe_id = doc.get("recipe_id")
            if recipe_id and s.scalar(select(Recipe.id).where(Recipe.recipe_id == recipe_id)) is None:
                recipe_id = None  # the recipe is not (yet) in this database: kept, feeds nothing
            passed = bool((result.get("output_check") or {}).get("passed"))
            verdict = recheck(s, db.settings, doc)  # the figures must follow from the archived exchanges
            m = Measurement(recipe_id=recipe_id, tps=float(result.get("decode_tps") or 0.0),
                            non_repeating_prompts=not shared_ngrams([r.get("prompt") or "" for r in
                                                                     result.get("requests") or []
                                                                     if r.get("kind") == "unique"]),
                            output_checked=passed,
                            n_runs=sum(1 for r in result.get("requests") or [] if r.get("kind") == "unique"),
                            method=f"caveat measure: {result.get('prompts')} non-repeating prompts, max_tokens "
                                   f"{result.get('max_tokens')}, concurrency {result.get('concurrency')}, "
                                   f"{result.get('api')}",
                            notes=None if passed else "; ".join((result.get("output_check") or {}).get("problems", []))[:2000],
                            measured_at=started, origin="measure", endpoint=result.get("endpoint"),
                            model=result.get("model"), engine=result.get("engine"),
                            citation_id=_citation_ids(s, [record_id])[record_id], warc_file=warc_file,
                            record_id=record_id, offset=offset, length=length, result=result,
                            verified=verdict.verified, verification=verdict.message[:2000])
            s.add(m)
            s.flush()
            made += 1
            if recipe_id:
                recipes.add(recipe_id)
        if recipes:
            audit_recipes(s, db.settings, sorted(recipes))
        if session is None:
            s.commit()
        else:
            s.flush()  # the caller's transaction commits it, with the snapshots it came with
    return made


def _parse_measurement(content_type, block):
    return True if is_measurement_record(content_type, block) else None


def _restore(db, path, items) -> int:
    return restore(db, path, [(o, n, rid, block) for o, n, rid, block, _ in items])


# A `caveat measure` evidence record found by the indexer (reindex, catch-up) becomes its measurement row.
register_metadata_handler(MetadataHandler("measurement", _parse_measurement, _restore, order=20))
