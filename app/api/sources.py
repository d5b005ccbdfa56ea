"""`GET /api/sources`: the followed sources with their last crawl's outcome."""

from fastapi import APIRouter, Depends
from sqlalchemy.orm import Session

from app.main import get_session
from app.services.sources import list_sources, source_json

router = APIRouter()


@router.get("/api/sources")
def sources(session: Session = Depends(get_session)) -> dict:
    return {"sources": [source_json(session, s) for s in list_sources(session)]}
