"""Reviewer decisions (authenticated writes): `POST /api/flags/{id}/decision`, `GET /api/decisions`.
Measurements are in ``measurements.py``.

Programs authenticate with `Authorization: Bearer <token>` and send JSON (`application/json` only).
A request authenticated by the session cookie must carry its CSRF token whatever its content type: the
form's `csrf_token` field, or the `X-CSRF-Token` header for JSON.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.api.convention import ok, page
from app.api.schemas import AUTH_ERRORS, ERRORS, DecisionAnswer, DecisionList
from app.errors import BadRequest
from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.audit import decisions
from app.review.decisions import archive_decision

router = APIRouter(tags=["decisions"])


class DecisionBody(BaseModel):
    action: str = Field(..., description="confirm or dismiss")
    note: str = Field(..., description="Why; kept in the audit log.")


async def _body(request: Request) -> tuple[dict, bool]:
    """The request's fields and whether they came from a form; any other body must be
    ``application/json`` (a ``text/plain`` post is refused, whatever it holds)."""
    ctype = auth.media_type(request)
    if ctype in auth.FORM_TYPES:
        form = await request.form()
        return {k: v for k, v in form.items() if isinstance(v, str)}, True
    auth.require_json(request)
    raw = await request.body()
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise BadRequest('The body is not JSON; send {"action": "dismiss", "note": "why"}.') from None
    if not isinstance(data, dict):
        raise BadRequest('The body must be a JSON object, e.g. {"action": "dismiss", "note": "why"}.')
    return data, False


@router.post("/api/flags/{flag_id}/decision", response_model=DecisionAnswer, responses=AUTH_ERRORS,
             summary="Confirm or dismiss a flag, with a note (authenticated)",
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["action", "note"],
                 "properties": {"action": {"type": "string", "enum": ["confirm", "dismiss"]},
                                "note": {"type": "string"}}}}}}})
async def flag_decision(flag_id: int, request: Request, user: User = Depends(auth.require_user),
                        session: Session = Depends(get_session)):
    data, is_form = await _body(request)
    auth.check_write(request, data.get("csrf_token") if is_form else None)
    auth.require_scope(request, "decide")
    try:
        body = DecisionBody(**{k: data.get(k) for k in ("action", "note") if data.get(k) is not None})
    except Exception:
        raise BadRequest('Send both "action" (confirm or dismiss) and "note" (why).') from None
    def record():  # in a worker thread and committed there: a write must never block the event loop
        done = decisions.decide(session, user, flag_id, body.action, body.note, settings=request.app.state.settings)
        session.commit()
        # kept in the WARC files too, so `caveat reindex` restores it (issue 29 item 2)
        archive_decision(request.app.state.db, done["id"], user.username)
        return done

    result = await run_in_threadpool(record)
    nxt = data.get("next") if is_form else None
    if nxt and nxt.startswith("/") and not nxt.startswith("//") and not urlsplit(nxt).netloc:
        return RedirectResponse(nxt, status_code=303)
    return ok({"decision": result})


@router.get("/api/decisions", response_model=DecisionList, responses=ERRORS,
            summary="The append-only audit log of decisions, newest first")
def decision_log(request: Request, entry_id: int | None = Query(None, ge=1), flag_id: int | None = Query(None, ge=1),
                 before_id: int | None = Query(None, ge=1, description="Only decisions older than this id."),
                 limit: int = Query(100, ge=1, le=decisions.MAX_LIST), offset: int = Query(0, ge=0),
                 session: Session = Depends(get_session)) -> dict:
    rows = decisions.list_decisions(session, entry_id=entry_id, flag_id=flag_id, limit=limit, before_id=before_id,
                                    offset=offset)
    total = decisions.count_decisions(session, entry_id=entry_id, flag_id=flag_id, before_id=before_id)
    return page(request, "decisions", rows, total=total, limit=limit, offset=offset)
