"""Measurements: a throughput we measured ourselves (or a trusted harness did) for a recipe.

Only a measurement on non-repeating prompts with checked output counts as the ``measured`` basis;
others are kept (and listed) but do not move the working number. Recording one re-audits the recipe.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Measurement, Recipe, User
from app.audit.answer import evidence_url, measurement_url, reference, utc_iso  # noqa: F401  (re-exported)
from app.audit.engine import audit_recipes

MAX_LIST = 500


def _parse_when(value) -> datetime:
    if value is None or value == "":
        return datetime.now(timezone.utc)
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"measured_at {value!r} is not an ISO 8601 time, e.g. 2026-12-01T10:00:00Z.") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def record(session: Session, settings: Settings, user: User | None, *, recipe_id: str, tps: float,
           non_repeating_prompts: bool, output_checked: bool, n_runs: int | None = None, method: str | None = None,
           notes: str | None = None, measured_at=None) -> dict:
    if session.scalar(select(Recipe.id).where(Recipe.recipe_id == recipe_id)) is None:
        raise NotFound(f"No recipe {recipe_id!r}; find its id with `caveat quote MODEL`.")
    try:
        tps = float(tps)
    except (TypeError, ValueError):
        raise BadRequest(f"tps must be a number of tokens per second, not {tps!r}.") from None
    if not math.isfinite(tps) or tps <= 0:
        raise BadRequest(f"tps must be a positive number of tokens per second, not {tps!r}.")
    if n_runs is not None and n_runs < 1:
        raise BadRequest("n_runs must be 1 or more.")
    m = Measurement(recipe_id=recipe_id, tps=tps, non_repeating_prompts=bool(non_repeating_prompts),
                    output_checked=bool(output_checked), n_runs=n_runs, method=method, notes=notes,
                    measured_at=_parse_when(measured_at), user_id=user.id if user else None)
    session.add(m)
    session.flush()
    audit_recipes(session, settings, [recipe_id])
    return measurement_json(m, settings)


def counts(m: Measurement) -> bool:
    return bool(m.non_repeating_prompts and m.output_checked and m.verified is not False)


def measurement_json(m: Measurement, settings: Settings | None = None) -> dict:
    """A measurement as the API returns it. One made by `caveat measure` also carries its whole result
    (decode_tps, percentiles, ttft_ms, requests, repeat_test, output_check, ...; docs/measure.md), its
    ``measurement_id`` and, as ``citation``, its evidence page ``/c/{id}``."""
    api = measurement_url(settings, m.id) if settings is not None else f"/api/measurements/{m.id}"
    out = {"id": m.id, "recipe_id": m.recipe_id, "tps": m.tps, "non_repeating_prompts": m.non_repeating_prompts,
           "output_checked": m.output_checked, "verified": m.verified is not False,
           "verification": m.verification, "counts_as_measured": counts(m), "n_runs": m.n_runs,
           "method": m.method, "notes": m.notes, "measured_at": utc_iso(m.measured_at), "citation": api}
    if m.origin == "measure":
        out.update(m.result or {})
        out.update({"measurement_id": m.id, "origin": "measure", "citation": evidence_url(settings, m),
                    "citation_id": m.citation_id, "api_url": api, "endpoint": m.endpoint, "model": m.model,
                    "engine": m.engine, "evidence": {"warc_file": m.warc_file, "record_id": m.record_id,
                                                     "offset": m.offset, "length": m.length}})
    return out


def list_for_recipe(session: Session, recipe_id: str, settings: Settings | None = None) -> list[dict]:
    q = select(Measurement).where(Measurement.recipe_id == recipe_id).order_by(Measurement.id)
    return [measurement_json(m, settings) for m in session.scalars(q)]


def list_measurements(session: Session, settings: Settings, *, recipe_id: str | None = None, limit: int = 100,
                      offset: int = 0) -> tuple[list[dict], int]:
    """One page of measurements (oldest first), optionally of one recipe, and how many match."""
    if limit < 1 or limit > MAX_LIST:
        raise BadRequest(f"limit must be between 1 and {MAX_LIST}.")
    conds = [Measurement.recipe_id == recipe_id] if recipe_id else []
    if recipe_id and session.scalar(select(Recipe.id).where(Recipe.recipe_id == recipe_id)) is None:
        raise NotFound(f"No recipe {recipe_id!r}; find its id with `caveat quote MODEL`.")
    total = session.scalar(select(func.count(Measurement.id)).where(*conds)) or 0
    rows = session.scalars(select(Measurement).where(*conds).order_by(Measurement.id).limit(limit).offset(offset))
    return [measurement_json(m, settings) for m in rows], total


def get_measurement(session: Session, measurement_id: int) -> Measurement:
    m = session.get(Measurement, measurement_id) if 0 < measurement_id < 2**63 else None
    if m is None:
        raise NotFound(f"No measurement {measurement_id}; `caveat measurement list` shows them.")
    return m


def remove(session: Session, settings: Settings, measurement_id: int) -> dict:
    """Delete a measurement (recorded by mistake) and re-audit its recipe."""
    m = get_measurement(session, measurement_id)
    gone = measurement_json(m, settings)
    session.delete(m)
    session.flush()
    if gone["recipe_id"]:
        audit_recipes(session, settings, [gone["recipe_id"]])
    return gone


def used_by_recipes(session: Session, settings: Settings, recipe_ids) -> dict[str, dict]:
    """For each recipe, the measurement its ``measured`` basis rests on (its lowest one that counts),
    as the reference an answer carries: ``{id, tps, measured_at, n_runs, method, citation}``."""
    ids = sorted({r for r in recipe_ids if r})
    out: dict[str, dict] = {}
    for part in [ids[i:i + 500] for i in range(0, len(ids), 500)]:
        q = (select(Measurement).where(Measurement.recipe_id.in_(part), Measurement.non_repeating_prompts.is_(True),
                                       Measurement.output_checked.is_(True), Measurement.verified.is_(True))
             .order_by(Measurement.recipe_id, Measurement.tps, Measurement.id))
        for m in session.scalars(q):
            if m.recipe_id not in out:
                out[m.recipe_id] = reference(m, settings)
    return out
