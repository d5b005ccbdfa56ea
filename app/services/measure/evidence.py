"""The citation page of a measurement (``/c/{id}``): the measurement as the API returns it, its
evidence record (the WARC ``metadata`` record) re-read with its digest recomputed, and each exchange's
own snapshot citation."""

from __future__ import annotations

import json

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.models import Measurement
from archive.citeid import normalize_citation_id
from archive.reader import RecordUnreadable, read_record


def find(session: Session, citation_id: str) -> Measurement | None:
    cid = normalize_citation_id(citation_id)
    if cid is None:
        return None
    return session.scalar(select(Measurement).where(Measurement.citation_id == cid))


def fixity(settings: Settings, m: Measurement) -> tuple[str, str, dict | None]:
    """(ok|failed, message, the metadata record's JSON) from the WARC bytes, read now."""
    try:
        rec = read_record(settings.warc_dir / m.warc_file, m.offset, m.length, max_bytes=settings.decode_max_bytes)
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
    from app.services.measurements import measurement_json

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
