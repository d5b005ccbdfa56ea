"""``/c/{id}``: the citation page, its quote view (``?q=&prefix=&suffix=&pos=``) and the JSON twin
``/c/{id}.json`` (same query parameters). Non-canonical ids redirect to the canonical URL."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy.orm import Session

from app.errors import NotFound
from app.main import get_session
from app.services import citations

router = APIRouter()


@router.api_route("/c/{typed}", methods=["GET", "HEAD"], include_in_schema=False)
def citation_page(typed: str, request: Request, q: str | None = None, prefix: str | None = None,
                  suffix: str | None = None, pos: str | None = None, session: Session = Depends(get_session)):
    as_json = typed.endswith(".json")
    raw = typed[:-5] if as_json else typed
    cid = citations.get_canonical(raw)
    if cid is None:
        raise NotFound(f"{raw!r} is not a citation id: expected 8 letters and digits like ABCD-EFGH "
                       "(no 0, 1, I or O; case, spaces and dashes do not matter)")
    if cid != raw:
        target = f"/c/{cid}{'.json' if as_json else ''}"
        if request.url.query:
            target += "?" + request.url.query
        return RedirectResponse(target, status_code=301)
    settings = request.app.state.settings
    if q is not None:
        data = citations.quote_view(session, settings, cid, q, prefix, suffix, pos)
        template = "citation_quote.html"
    else:
        data = citations.citation(session, settings, cid)
        template = "citation.html"
    if as_json:
        return JSONResponse(data)
    env = request.app.state.templates.env
    if "local" not in env.filters:
        from app.views.rendering import make_local

        env.filters["local"] = make_local(settings.base_url)
    json_href = f"/c/{cid}.json" + (f"?{request.url.query}" if request.url.query else "")
    return request.app.state.templates.TemplateResponse(request, template, {"c": data, "json_href": json_href})
