"""``GET /api/snapshots?url=``, ``GET /api/snapshots/{id}`` and ``GET /api/snapshots/{id}/quote?q=``;
``id`` is the citation id (any spelling ``normalize_citation_id`` accepts).

In every answer ``url`` is the archived page's address; citation URLs are ``citation`` (of a quote) and
``citation_url`` (of the whole snapshot)."""

from __future__ import annotations

from datetime import datetime, timezone

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.api.convention import ok, page
from app.api.schemas import ERRORS, QuoteCitation, Snapshot, SnapshotList
from app.errors import BadRequest
from app.deps import get_session
from app.models import Snapshot as SnapshotRow
from app.replay import citations, withdrawal
from app.replay.wayback import captures
from archive.surt import surt

router = APIRouter(tags=["snapshots"])


def captured_at(timestamp: str | None) -> str | None:
    """ISO 8601 UTC of a yyyyMMddhhmmss[fff] capture timestamp."""
    if not timestamp or len(timestamp) < 14 or not timestamp[:14].isdigit():
        return None
    when = datetime.strptime(timestamp[:14], "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    ms = timestamp[14:17]
    if ms.isdigit():
        when = when.replace(microsecond=int(ms.ljust(3, "0")) * 1000)
    return when.isoformat()


def snapshot_body(data: dict) -> dict:
    return {**data, "captured_at": captured_at(data.get("timestamp"))}


def quote_body(data: dict) -> dict:
    """The quote answer with one meaning per field: ``citation`` is the quote's citation URL, ``url`` the
    archived page's address."""
    out = {k: v for k, v in data.items() if k not in ("url", "ok")}
    snap = snapshot_body(data["snapshot"])
    return ok({**out, "citation": data["url"], "url": snap["url"], "snapshot": snap})


@router.get("/api/snapshots", response_model=SnapshotList, responses=ERRORS,
            summary="Captures of a URL (matched by SURT key), newest first")
def list_snapshots(request: Request, url: str | None = Query(None, description="The archived page's address."),
                   limit: int = Query(100, ge=1, le=citations.MAX_LIST), offset: int = Query(0, ge=0),
                   session: Session = Depends(get_session)) -> dict:
    if not url:
        raise BadRequest("give the archived page's address: /api/snapshots?url=https://example.org/page")
    total = session.scalar(select(func.count(SnapshotRow.id)).where(SnapshotRow.surt == surt(url),
                                                                  withdrawal.public_condition()))
    rows = captures(session, url, limit=offset + limit)[offset:]
    settings = request.app.state.settings
    items = [snapshot_body(citations.snapshot_json(settings, s)) for s in rows]
    return page(request, "snapshots", items, total=total or 0, limit=limit, offset=offset)


@router.get("/api/snapshots/{citation_id}", response_model=Snapshot, responses=ERRORS,
            summary="One snapshot, its fixity checked on this read")
def get_snapshot(citation_id: str, request: Request, session: Session = Depends(get_session)) -> dict:
    return ok(snapshot_body(citations.snapshot_by_id(session, request.app.state.settings, citation_id)))


@router.get("/api/snapshots/{citation_id}/quote", response_model=QuoteCitation, responses=ERRORS,
            summary="The citation URL of a quote inside a snapshot; 404 when the text is not there")
def quote(citation_id: str, request: Request,
          q: str | None = Query(None, description="Exact text to cite (whitespace-insensitive)."),
          prefix: str | None = None, suffix: str | None = None,
          pos: int | None = Query(None, ge=0, le=2**40,
                                  description="Where the quote starts in the decoded source (a selector's start)."),
          session: Session = Depends(get_session)) -> dict:
    if not q or not q.strip():
        raise BadRequest("give the text to cite: /api/snapshots/ABCD-EFGH/quote?q=373%20to%20391")
    return quote_body(citations.make_quote_citation(session, request.app.state.settings, citation_id, q,
                                                    prefix, suffix, pos))
