"""Corrections of entries (issue 27), authenticated writes: `PATCH /api/entries/{id}` (fix fields),
`POST /api/entries` (a missed figure, from a snapshot and a quote selector), `POST /api/entries/{id}/reject`
("not a claim"), `POST /api/entries/{id}/clauses` (a reviewer's reading of one clause of the notes: benign,
or the condition of a rule; issue 25), `GET /api/entries/{id}/corrections`.

A signed-in reviewer (with the session's CSRF token: the form's `csrf_token` field or the `X-CSRF-Token`
header) or a bearer token with the `correct` scope. Fixes and rejections carry the entry's version: the
`If-Match` header (the `etag` of `GET /api/entries/{id}`, e.g. `"v3"`), or a `version` field; a stale one
answers 412 with the entry's current state in `detail.current`, and nothing is stored.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.accounts import auth
from app.api.convention import ok
from app.api.schemas import AUTH_ERRORS, CorrectionAnswer
from app.claims.corrections import CORRECTABLE
from app.deps import get_session
from app.errors import BadRequest
from app.models import User
from app.review import corrections as review

router = APIRouter(tags=["corrections"])
_FORM_SKIP = ("csrf_token", "why", "version", "next")


async def _body(request: Request) -> tuple[dict, bool]:
    ctype = auth.media_type(request)
    if ctype in auth.FORM_TYPES:
        form = await request.form()
        return {k: v for k, v in form.items() if isinstance(v, str)}, True
    auth.require_json(request)
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        raise BadRequest('The body is not JSON; send {"fields": {"model": "..."}, "why": "..."}.') from None
    if not isinstance(data, dict):
        raise BadRequest('The body must be a JSON object, e.g. {"fields": {"model": "..."}, "why": "..."}.')
    return data, False


def _authorise(request: Request, data: dict, is_form: bool, session: Session) -> None:
    auth.check_write(request, data.get("csrf_token") if is_form else None)
    auth.require_scope(request, "correct")
    session.commit()  # what signing in wrote (a token's last use): the workflow writes in its own sessions


def _fields(data: dict, is_form: bool) -> dict:
    if not is_form:
        fields = data.get("fields", {})
        if not isinstance(fields, dict):
            raise BadRequest('"fields" must be an object of field -> value')
        return fields
    # a form sends every field; the ones left empty are not corrected
    return {k: v.strip() for k, v in data.items() if k in CORRECTABLE and k not in _FORM_SKIP and v.strip()}


def _answer(request: Request, data: dict, is_form: bool, result: dict, status: int = 200):
    nxt = data.get("next") if is_form else None
    if nxt and nxt.startswith("/") and not nxt.startswith("//") and not urlsplit(nxt).netloc:
        return RedirectResponse(nxt, status_code=303)
    entry = result.get("entry") or {}
    resp = JSONResponse(ok({"correction_id": result["correction_id"], "entry_id": result.get("entry_id"),
                            "entry": entry, "event_id": result.get("event_id"), "warnings": result.get("warnings", [])}),
                        status_code=status)
    if entry.get("version"):
        resp.headers["ETag"] = review.etag(entry["version"])
    return resp


def _version(request: Request, data: dict):
    return review.parse_version(request.headers.get("if-match") or data.get("version"))


@router.patch("/api/entries/{entry_id}", responses=AUTH_ERRORS, response_model=CorrectionAnswer,
              summary="Correct an entry's fields, with a reason (authenticated; If-Match: the entry's etag)")
async def fix_entry(entry_id: int, request: Request, user: User = Depends(auth.require_user),
                    session: Session = Depends(get_session)):
    data, is_form = await _body(request)
    _authorise(request, data, is_form, session)
    fields, version = _fields(data, is_form), _version(request, data)
    result = await run_in_threadpool(
        review.fix_entry, request.app.state.db, request.app.state.settings, entry_id, fields, data.get("why"),
        actor=user.username, user_id=user.id, version=version)
    return _answer(request, data, is_form, result)


# an HTML form cannot send PATCH: the entry page's form posts here
@router.post("/api/entries/{entry_id}/fix", responses=AUTH_ERRORS, include_in_schema=False)
async def fix_entry_form(entry_id: int, request: Request, user: User = Depends(auth.require_user),
                    session: Session = Depends(get_session)):
    return await fix_entry(entry_id, request, user, session)


@router.post("/api/entries/{entry_id}/reject", responses=AUTH_ERRORS, response_model=CorrectionAnswer,
             summary="Reject an entry as not a claim, with a reason (authenticated; If-Match: the entry's etag)")
async def reject_entry(entry_id: int, request: Request, user: User = Depends(auth.require_user),
                    session: Session = Depends(get_session)):
    data, is_form = await _body(request)
    _authorise(request, data, is_form, session)
    result = await run_in_threadpool(
        review.reject_entry, request.app.state.db, request.app.state.settings, entry_id, data.get("why"),
        actor=user.username, user_id=user.id, version=_version(request, data))
    return _answer(request, data, is_form, result)


@router.post("/api/entries", responses=AUTH_ERRORS, status_code=201, response_model=CorrectionAnswer,
             summary="Add a figure the reader missed, from a snapshot and a quote selector (authenticated)")
async def add_entry(request: Request, user: User = Depends(auth.require_user),
                    session: Session = Depends(get_session)):
    data, is_form = await _body(request)
    _authorise(request, data, is_form, session)
    quote = data.get("quote") if isinstance(data.get("quote"), dict) else data
    snapshot = data.get("snapshot")
    if not isinstance(snapshot, str) or not isinstance(quote.get("exact"), str):
        raise BadRequest('Send "snapshot" (a citation id) and "quote": {"exact", "prefix", "suffix"}.')
    result = await run_in_threadpool(
        review.add_entry, request.app.state.db, request.app.state.settings, snapshot, quote.get("exact"),
        str(quote.get("prefix") or ""), str(quote.get("suffix") or ""), _fields(data, is_form), data.get("why"),
        actor=user.username, user_id=user.id)
    return _answer(request, data, is_form, result, status=201)


@router.post("/api/entries/{entry_id}/clauses", responses=AUTH_ERRORS, response_model=CorrectionAnswer,
             summary="Read one clause of an entry's notes: benign, or a rule's condition (authenticated; If-Match)")
async def read_clause(entry_id: int, request: Request, user: User = Depends(auth.require_user),
                      session: Session = Depends(get_session)):
    """Body: `{"clause": TEXT, "reading": "benign" | "condition", "rule": RULE (a condition), "why": TEXT}`,
    the clause's text as the entry's `notes_reading` gives it. The form sends `reading=benign` or
    `reading=RULE`."""
    data, is_form = await _body(request)
    _authorise(request, data, is_form, session)
    reading, rule = data.get("reading"), data.get("rule")
    if is_form and reading not in (None, "", "benign", "condition"):
        reading, rule = "condition", reading     # the form's one select: benign or a rule id
    result = await run_in_threadpool(
        review.read_clause, request.app.state.db, request.app.state.settings, entry_id, data.get("clause"),
        reading, data.get("why"), rule=rule, actor=user.username, user_id=user.id, version=_version(request, data))
    return _answer(request, data, is_form, result)
