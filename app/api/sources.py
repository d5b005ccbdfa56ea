"""`GET /api/sources`: the followed sources with their last crawl's outcome."""

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.api.convention import page
from app.api.schemas import ERRORS, SourceList
from app.deps import get_session
from app.claims.sources import list_sources, source_json

router = APIRouter(tags=["sources"])
MAX_LIMIT = 500


@router.get("/api/sources", response_model=SourceList, responses=ERRORS, summary="Followed sources")
def sources(request: Request, limit: int = Query(100, ge=1, le=MAX_LIMIT), offset: int = Query(0, ge=0),
            session: Session = Depends(get_session)) -> dict:
    rows = list_sources(session)
    items = [source_json(session, s) for s in rows[offset:offset + limit]]
    return page(request, "sources", items, total=len(rows), limit=limit, offset=offset)
