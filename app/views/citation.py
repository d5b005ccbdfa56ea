"""``/c/{id}``: the citation page, its quote view (``?q=&prefix=&suffix=&pos=``) and the JSON twin
``/c/{id}.json`` (same query parameters). Non-canonical ids redirect to the canonical URL. A withdrawn
capture answers 410 with its tombstone, a restricted one 403; ``POST /c/{id}/access`` (signed in,
CSRF) withdraws, restricts or reinstates it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from app.errors import NotFound
from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.replay import citations
from app.replay import withdrawal
from app.audit import access
from app.measure import evidence
from app.pages.review import quote_corrections
from app.review.corrections import checked_marks
from urllib.parse import urlencode
from app.views.rendering import accepts_json, make_local, ok_first

router = APIRouter()


def _canonical(raw: str) -> str:
    cid = citations.get_canonical(raw)
    if cid is None:
        raise NotFound(f"{raw!r} is not a citation id: expected 8 letters and digits like ABCD-EFGH "
                       "(no 0, 1, I or O; case, spaces and dashes do not matter)")
    return cid


def _templates(request: Request):
    env = request.app.state.templates.env
    if "local" not in env.filters:

        env.filters["local"] = make_local(request.app.state.settings.base_url)
    return request.app.state.templates


def tombstone_response(request: Request, session: Session, snap, *, as_json: bool, user: User | None = None,
                       by=None):
    data = citations.tombstone(session, request.app.state.settings, snap, by)
    if as_json:
        return JSONResponse(ok_first(data), status_code=data["status"], headers={"Vary": "Accept"})
    csrf = auth.csrf_token(request) if user is not None else None
    return _templates(request).TemplateResponse(
        request, "tombstone.html", {"c": data, "user": user, "csrf": csrf,
                                    "json_href": f"/c/{snap.citation_id}.json"}, status_code=data["status"])


@router.api_route("/c/{typed}", methods=["GET", "HEAD"], include_in_schema=False)
def citation_page(typed: str, request: Request, q: str | None = None, prefix: str | None = None,
                  suffix: str | None = None, pos: str | None = None, session: Session = Depends(get_session),
                  user: User | None = Depends(auth.current_user)):
    raw = typed[:-5] if typed.endswith(".json") else typed
    as_json = typed.endswith(".json") or accepts_json(request)
    cid = _canonical(raw)
    if cid != raw:
        target = f"/c/{cid}{'.json' if typed.endswith('.json') else ''}"
        if request.url.query:
            target += "?" + request.url.query
        return RedirectResponse(target, status_code=301)
    settings = request.app.state.settings

    measured = evidence.find(session, cid)
    if measured is not None:
        data = evidence.page(session, settings, measured)
        if as_json:
            return JSONResponse(ok_first(data), headers={"Vary": "Accept"})
        return _templates(request).TemplateResponse(request, "measurement.html",
                                                    {"c": data, "json_href": f"/c/{cid}.json", "user": user})
    snap = citations.lookup_any(session, cid)   # withheld: its tombstone, below
    by = withdrawal.withholder(session, snap)   # itself, or the withheld record a revisit takes its bytes from
    if by is not None:
        return tombstone_response(request, session, snap, as_json=as_json, user=user, by=by)
    if q is not None:
        data = citations.quote_view(session, settings, cid, q, prefix, suffix, pos,
                                    whole=request.query_params.get("view") == "page")
        # a corrected figure: what was corrected, by whom, when and why, beside the reader's reading (issue 27)
        data["corrections"] = quote_corrections(session, cid, data.get("matched"), prefix, suffix,
                                                data.get("source_start"))
        template = "citation_quote.html"
    else:
        data = citations.citation(session, settings, cid)
        data["checked"] = checked_marks(session, cid)
        template = "citation.html"
    data["review_href"] = f"/c/{cid}/review"
    if as_json:
        return JSONResponse(ok_first(data), headers={"Vary": "Accept"})
    json_href = f"/c/{cid}.json" + (f"?{request.url.query}" if request.url.query else "")
    csrf = auth.csrf_token(request) if user is not None else None

    whole_query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "view"] + [("view", "page")])
    return _templates(request).TemplateResponse(request, template, {"c": data, "json_href": json_href,
                                                                    "user": user, "csrf": csrf,
                                                                    "whole_query": whole_query})


@router.post("/c/{typed}/access", include_in_schema=False)
async def change_access(typed: str, request: Request, user: User = Depends(auth.require_user)):
    """Withdraw, restrict or reinstate from the citation page (a signed-in reviewer; CSRF checked)."""
    form = await request.form()
    auth.check_write(request, form.get("csrf_token"))
    cid = _canonical(typed)
    action = str(form.get("action") or "")
    reason = str(form.get("reason") or "")
    db = request.app.state.db
    await run_in_threadpool(access.change_access, db, cid, action, reason, actor=user.username, user_id=user.id)
    return RedirectResponse(f"/c/{cid}", status_code=303)
