"""``POST /api/citations``: the citation URL of a snapshot, or of a quote inside it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.api.convention import ok
from app.api.schemas import ERRORS, QuoteCitation
from app.api.snapshots import quote_body, snapshot_body
from app.errors import BadRequest
from app.deps import get_session
from app.replay import citations
from app.watch.changes import mark_citation

router = APIRouter(tags=["snapshots"])


class CitationRequest(BaseModel):
    snapshot: str | None = Field(None, description="Citation id of the snapshot, e.g. ABCD-EFGH.")
    url: str | None = Field(None, description="Or: an archived URL; its newest capture is cited.")
    q: str | None = Field(None, description="Exact text to cite inside the snapshot (whitespace-insensitive).")
    prefix: str | None = Field(None, description="Text right before the quote (TextQuoteSelector prefix).")
    suffix: str | None = Field(None, description="Text right after the quote (TextQuoteSelector suffix).")


@router.post("/api/citations", response_model=QuoteCitation, responses=ERRORS,
             summary="The citation URL of a snapshot, or of a quote inside it")
def create_citation(body: CitationRequest, request: Request, session: Session = Depends(get_session)) -> dict:
    settings = request.app.state.settings
    if body.snapshot:
        cid = body.snapshot
    elif body.url:
        cid = citations.snapshot_for_url(session, body.url).citation_id
    else:
        raise BadRequest('name the snapshot: {"snapshot": "ABCD-EFGH", "q": "text"} or {"url": "https://...", "q": ...}')
    if body.q:
        answer = quote_body(citations.make_quote_citation(session, settings, cid, body.q, body.prefix, body.suffix))
        _mark_cited(session, cid)
        return answer
    snap = citations.lookup(session, settings, cid)   # withheld: 410/403 with the tombstone
    _mark_cited(session, snap.citation_id)
    data = snapshot_body(citations.snapshot_json(settings, snap))
    return ok({"id": snap.citation_id, "url": data["url"], "citation": data["citation_url"],
               "citation_url": data["citation_url"], "quote": None, "snapshot": data})


def _mark_cited(session: Session, citation_id: str) -> None:
    """Change events on the entries of a cited snapshot are marked ``cited`` (issue 17)."""
    mark_citation(session, citation_id)
    session.commit()
