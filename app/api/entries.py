"""`GET /api/entries` (filtered, paginated) and `GET /api/entries/{id}` (with history and provenance)."""

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.api.convention import ok, page
from app.api.schemas import ERRORS, EntryDetail, EntryList
from app.deps import get_session
from app.pages.entries import MAX_LIMIT, get_entry, list_entries
from app.audit.measurements import used_by_recipes

router = APIRouter(tags=["entries"])


@router.get("/api/entries", response_model=EntryList, responses=ERRORS, summary="Entries, filtered and paged")
def entries(
    request: Request,
    source: str | None = Query(None, description="Source name, whole (404 if unknown)."),
    model: str | None = Query(None, description="Model name, whole, any case."),
    recipe_id: str | None = Query(None, description="e.g. r-3f9c0a1b2d4e"),
    flagged: bool | None = Query(None, description="true: at least one flag that counts; false: none."),
    severity: str | None = Query(None, description="critical, high, medium or low."),
    rule: str | None = Query(None, description="A rule id, e.g. full_acceptance."),
    status: str | None = Query(None, description="read (the default), proposed (the learned reader's "
                               "proposals, most confident first) or any."),
    include_gone: bool = False,
    limit: int = Query(50, ge=1, le=MAX_LIMIT),
    offset: int = Query(0, ge=0),
    session: Session = Depends(get_session),
) -> dict:
    found = list_entries(session, request.app.state.settings, source=source, model=model, recipe_id=recipe_id,
                         flagged=flagged, severity=severity, rule=rule, include_gone=include_gone,
                         limit=limit, offset=offset, status=status)
    items = with_measurements(session, request, found["entries"])
    return page(request, "entries", items, total=found["total"], limit=limit, offset=offset)


@router.get("/api/entries/{entry_id}", response_model=EntryDetail, responses=ERRORS,
            summary="One entry with its fields, provenance and history")
def entry(entry_id: int, request: Request, session: Session = Depends(get_session)) -> dict:
    return ok(with_measurements(session, request, [get_entry(session, request.app.state.settings, entry_id)])[0])


def with_measurements(session: Session, request: Request, items: list[dict]) -> list[dict]:
    """Each entry with ``measurement``: the one its working number rests on when the basis is
    ``measured``, else null."""
    measured = [e["recipe_id"] for e in items if e.get("basis") == "measured"]
    refs = used_by_recipes(session, request.app.state.settings, measured) if measured else {}
    return [{**e, "measurement": refs.get(e["recipe_id"]) if e.get("basis") == "measured" else None}
            for e in items]
