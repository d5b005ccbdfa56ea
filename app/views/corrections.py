"""The reviewer's correction forms (issue 27), signed in and CSRF-checked like the decision form:

- ``POST /entries/{id}/correct``: fix fields (``action=fix``) or reject the entry as not a claim
  (``action=reject``), with a reason and the entry's ``version`` (a hidden field): a stale version answers
  409 with the entry page showing its current state and what was sent, and stores nothing;
- ``GET /c/{id}/review`` (and ``/c/{id}/review.json``): the archived page view with every figure marked;
- ``POST /c/{id}/entries``: add a figure the reader missed, at the position the view gave;
- ``POST /c/{id}/checked``: "every figure checked" on that snapshot's page.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.accounts import auth
from app.claims.corrections import CORRECTABLE
from app.deps import get_session
from app.errors import BadRequest, NotFound, PreconditionFailed
from app.models import User
from app.pages.review import archived_view
from app.pages.view_models import entry_page
from app.replay import citations
from app.review import corrections as review
from app.views.rendering import redirect, render

router = APIRouter(include_in_schema=False)


def _canonical(raw: str) -> str:
    cid = citations.get_canonical(raw)
    if cid is None:
        raise NotFound(f"{raw!r} is not a citation id: expected 8 letters and digits like ABCD-EFGH")
    return cid


async def _form(request: Request) -> dict:
    form = await request.form()
    auth.check_write(request, form.get("csrf_token"))
    return {k: v for k, v in form.items() if isinstance(v, str)}


def _changed(form: dict, current: dict) -> dict:
    """The fields the form changes: the ones whose text differs from the entry's current value (an
    emptied field clears it)."""
    out = {}
    for name in CORRECTABLE:
        if name not in form:
            continue
        sent, now = form[name].strip(), current.get(name)
        if sent != ("" if now is None else str(now)):
            out[name] = sent or None
    return out


@router.post("/entries/{entry_id}/correct")
async def correct_entry(entry_id: int, request: Request, session: Session = Depends(get_session),
                        user: User = Depends(auth.require_user)):
    form = await _form(request)
    action = form.get("action") or "fix"
    db, settings = request.app.state.db, request.app.state.settings
    try:
        version = review.parse_version(form.get("version"))
        if action == "reject":
            result = await run_in_threadpool(review.reject_entry, db, settings, entry_id, form.get("why"),
                                             actor=user.username, user_id=user.id, version=version)
        elif action == "fix":
            current = review.entry_state(session, entry_id)["fields"]
            fields = _changed(form, current)
            result = await run_in_threadpool(review.fix_entry, db, settings, entry_id, fields, form.get("why"),
                                             actor=user.username, user_id=user.id, version=version)
        else:
            raise BadRequest(f"unknown action {action!r}: the form fixes (action=fix) or rejects (action=reject)")
    except (PreconditionFailed, BadRequest) as err:
        session.rollback()
        stale = isinstance(err, PreconditionFailed)
        data = entry_page(session, settings, entry_id)
        data["problem"] = {"status": 409 if stale else 400, "stale": stale, "message": str(err.message),
                           "sent": {k: form.get(k) for k in (*CORRECTABLE, "why", "action") if form.get(k)},
                           "current": err.detail.get("current") if stale else None}
        return render(request, "entry.html", data, as_json=False, user=user, status=data["problem"]["status"])
    return redirect(f"/entries/{entry_id}?corrected={result['correction_id']}#corrected-notice")


@router.get("/c/{typed}/review")
@router.get("/c/{typed}/review.json")
def review_view(typed: str, request: Request, session: Session = Depends(get_session),
                user: User | None = Depends(auth.current_user)):
    as_json = request.url.path.endswith(".json")
    cid = _canonical(typed)
    data = archived_view(session, request.app.state.settings, cid)
    return render(request, "review_page.html", data, as_json=as_json, user=user,
                  added=request.query_params.get("added"), checked=request.query_params.get("checked"))


def _public(request: Request, session: Session, typed: str, user: User | None) -> str:
    """The canonical id of a capture a form may write about: a withheld one answers its tombstone (403 /
    410) whoever asks, as every route naming a capture does; then the reviewer must be signed in."""
    cid = _canonical(typed)
    citations.lookup(session, request.app.state.settings, cid)
    auth.require_user(user)
    return cid


@router.post("/c/{typed}/entries")
async def add_figure(typed: str, request: Request, session: Session = Depends(get_session),
                     user: User | None = Depends(auth.current_user)):
    cid = _public(request, session, typed, user)
    form = await _form(request)
    try:
        at = (int(form.get("start") or ""), int(form.get("end") or ""))
    except ValueError:
        raise BadRequest("the form did not say where the figure is (start, end); select it again on the "
                         f"archived page view /c/{cid}/review") from None
    fields = {k: v.strip() for k, v in form.items() if k in CORRECTABLE and v.strip()}
    result = await run_in_threadpool(review.add_entry, request.app.state.db, request.app.state.settings, cid,
                                     "", "", "", fields, form.get("why"), actor=user.username, user_id=user.id, at=at)
    if result.get("entry_id"):
        return redirect(f"/entries/{result['entry_id']}?corrected={result['correction_id']}#corrected-notice")
    return redirect(f"/c/{cid}/review?added={result['correction_id']}#added-notice")


@router.post("/c/{typed}/checked")
async def mark_checked(typed: str, request: Request, session: Session = Depends(get_session),
                       user: User | None = Depends(auth.current_user)):
    cid = _public(request, session, typed, user)
    form = await _form(request)
    result = await run_in_threadpool(review.mark_checked, request.app.state.db, request.app.state.settings, cid,
                                     form.get("why"), actor=user.username, user_id=user.id)
    return redirect(f"/c/{cid}/review?checked={result['correction_id']}#checked")
