"""``/sources`` (and ``/sources.json``): each followed source with its last crawl, status and warnings;
``POST /sources/crawl`` crawls one now (signed in, CSRF-checked)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.pages.view_models import sources_page
from app.claims.sources import get_source
from app.views.rendering import redirect, render
from app.watch.worker import enqueue

router = APIRouter(include_in_schema=False)


@router.get("/sources")
def sources_view(request: Request, session: Session = Depends(get_session),
                 user: User | None = Depends(auth.current_user)):
    return render(request, "sources.html", sources_page(session), as_json=False, user=user,
                  crawled=request.query_params.get("crawled"))


@router.get("/sources.json")
def sources_json(request: Request, session: Session = Depends(get_session)):
    return render(request, "sources.html", sources_page(session), as_json=True)


@router.post("/sources/crawl")
async def crawl_now(request: Request, session: Session = Depends(get_session),
                    user: User = Depends(auth.require_user)):
    form = await request.form()
    auth.check_csrf(request, form.get("csrf_token"))
    src = get_source(session, str(form.get("name") or ""))
    session.commit()  # release the request's read transaction before the crawl row is written (SQLite)

    # queued, answered at once (issue 17): the job queue runs it; the page shows its progress
    _, new = await run_in_threadpool(enqueue, request.app.state.db, src, "manual")
    status = "queued" if new else "already queued or running"
    return redirect(f"/sources?crawled={quote(src.name)}&status={quote(status)}#source-{src.id}")
