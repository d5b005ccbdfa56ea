"""``GET /api/snapshots?url=``, ``GET /api/snapshots/{id}`` and ``GET /api/snapshots/{id}/quote?q=``;
``id`` is the citation id (any spelling ``normalize_citation_id`` accepts)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.main import get_session
from app.services import citations

router = APIRouter()


@router.get("/api/snapshots")
def list_snapshots(request: Request, url: str | None = None,
                   limit: int = Query(100, ge=1, le=citations.MAX_LIST),
                   session: Session = Depends(get_session)) -> dict:
    """Captures of ``url`` (matched by SURT key), newest first."""
    return citations.list_snapshots(session, request.app.state.settings, url, limit=limit)


@router.get("/api/snapshots/{citation_id}")
def get_snapshot(citation_id: str, request: Request, session: Session = Depends(get_session)) -> dict:
    return citations.snapshot_by_id(session, request.app.state.settings, citation_id)


@router.get("/api/snapshots/{citation_id}/quote")
def quote(citation_id: str, request: Request, q: str | None = None, prefix: str | None = None,
          suffix: str | None = None, session: Session = Depends(get_session)) -> dict:
    """The citation URL of ``q`` inside the snapshot; 404 when the text is not there."""
    return citations.make_quote_citation(session, request.app.state.settings, citation_id, q or "", prefix, suffix)
