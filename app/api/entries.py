"""`GET /api/entries` (filtered, paginated) and `GET /api/entries/{id}` (with history and provenance)."""

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.main import get_session
from app.services.entries import MAX_LIMIT, get_entry, list_entries

router = APIRouter()


@router.get("/api/entries")
def entries(
    request: Request,
    source: str | None = None,
    model: str | None = None,
    recipe_id: str | None = None,
    flagged: bool | None = None,
    severity: str | None = None,
    rule: str | None = None,
    include_gone: bool = False,
    limit: int = Query(50, ge=1, le=MAX_LIMIT),
    offset: int = Query(0, ge=0),
    session: Session = Depends(get_session),
) -> dict:
    return list_entries(session, request.app.state.settings, source=source, model=model, recipe_id=recipe_id,
                        flagged=flagged, severity=severity, rule=rule, include_gone=include_gone,
                        limit=limit, offset=offset)


@router.get("/api/entries/{entry_id}")
def entry(entry_id: int, request: Request, session: Session = Depends(get_session)) -> dict:
    return get_entry(session, request.app.state.settings, entry_id)
