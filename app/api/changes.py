"""Issue 17's API: ``GET /api/changes``, ``/changes.atom``, crawl now (``POST /api/sources/{name}/crawl``),
the crawls' progress (``GET /api/crawls``), a source's schedule (``POST /api/sources/{name}/schedule``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import Response
from pydantic import Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.api.convention import ok, page
from app.api.schemas import AUTH_ERRORS, ERRORS, Open, Page
from app.errors import BadRequest, NotFound
from app.deps import get_session
from app.models import ChangeEvent, Crawl, Source, User
from app.accounts import auth
from app.watch import changes
from app.replay.citations import public_base
from app.claims.sources import get_source
from app.watch.worker import enqueue
from app.watch.jobs import queue_for
from app.watch.schedule import parse_every, schedule_json, set_schedule as set_
from app.pages.changes import feed_created
from app.views.changes import feed_page, wants_feed_page

router = APIRouter(tags=["changes"])
MAX_LIMIT = changes.MAX_LIMIT


class ChangeSide(Open):
    figures: dict | None = Field(None, description="The entry's figures (headline_tps, steady_low, ...).")
    flags: list[str] | None = Field(None, description="Rules of the flags standing on the entry.")
    quotable: dict | None = Field(None, description="The recipe's quotable answer: quotable_tps and basis.")
    snapshot: str | None = Field(None, description="Citation id of the snapshot this side was read from.")
    citation: str | None = Field(None, description="Citation URL of the changed figure in that snapshot.")


class ChangeBody(Open):
    id: int
    kind: str = Field(..., description="changed, vanished or returned.")
    scope: str = Field(..., description="entry, or page (the whole page vanished or came back).")
    source: str | None
    entry_id: int | None
    recipe_id: str | None
    cited: bool = Field(..., description="Someone relied on it: a citation via POST /api/citations, or a "
                                         "quotable answer served for its recipe.")
    changes: dict = Field(..., description="What changed: name -> [old, new].")
    old: ChangeSide | None
    new: ChangeSide | None
    created_at: str


class ChangeList(Page):
    changes: list[ChangeBody]


class ChangeOne(Open):
    ok: Literal[True]
    change: ChangeBody


class CrawlBody(Open):
    id: int
    source: str | None
    status: str = Field(..., description="queued, running, then ok, warnings, empty, failed, postponed or skipped.")
    trigger: str | None = Field(None, description="schedule, manual (crawl now), cli, retry.")
    entries_new: int
    entries_changed: int
    entries_unchanged: int
    not_modified: bool = Field(..., description="The server answered 304 to a conditional request.")


class CrawlList(Page):
    crawls: list[CrawlBody]


class CrawlOne(Open):
    ok: Literal[True]
    crawl: CrawlBody


class CrawlQueued(CrawlOne):
    queued: bool = Field(..., description="False when a crawl of the source was already queued or running.")
    status_url: str


class ScheduleAnswer(Open):
    ok: Literal[True]
    source: str
    schedule: dict


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"since={value!r} is not an ISO 8601 time, e.g. 2026-12-01T12:00:00Z") from None


@router.get("/api/changes", response_model=ChangeList, responses=ERRORS, summary="Change events found by the crawls, newest first")
def list_changes(request: Request,
                 source: str | None = Query(None, description="Source name."),
                 entry_id: int | None = Query(None, ge=1), recipe_id: str | None = Query(None, max_length=40),
                 kind: str | None = Query(None, description="changed, vanished or returned."),
                 cited: bool | None = Query(None, description="Only events on cited entries (true) or the others."),
                 since: str | None = Query(None, description="ISO 8601: events at or after this time."),
                 limit: int = Query(50, ge=1, le=MAX_LIMIT), offset: int = Query(0, ge=0, le=10_000_000),
                 session: Session = Depends(get_session)) -> dict:
    rows, total = changes.list_changes(session, request.app.state.settings, source=source, entry_id=entry_id,
                                       recipe_id=recipe_id, kind=kind, cited=cited, since=_since(since),
                                       limit=limit, offset=offset)
    return page(request, "changes", rows, total=total, limit=limit, offset=offset)


@router.get("/api/changes/{event_id}", response_model=ChangeOne, responses=ERRORS, summary="One change event")
def get_change(event_id: int, request: Request, session: Session = Depends(get_session)) -> dict:
    e = session.get(ChangeEvent, event_id) if 0 < event_id < 2**31 else None
    if e is None:
        raise NotFound(f"No change event {event_id}.")
    return ok({"change": changes.events_json(session, request.app.state.settings, [e])[0]})


@router.get("/changes.atom", include_in_schema=False)
def changes_feed(request: Request, source: str | None = Query(None), kind: str | None = Query(None),
                 cited: bool | None = Query(None), limit: int = Query(50, ge=1, le=changes.FEED_MAX),
                 session: Session = Depends(get_session)) -> Response:
    """The newest events as Atom (at most 200; older ones are at /api/changes with offset); a browser
    (asking for HTML, not a feed) gets them as a readable page instead (``app.views.changes``)."""
    if wants_feed_page(request):
        resp = feed_page(request, session)
        resp.headers["Vary"] = "Accept"
        return resp
    settings = request.app.state.settings
    rows, _ = changes.list_changes(session, settings, source=source, kind=kind, cited=cited, limit=limit)
    base = public_base(settings)
    self_url = base + request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return Response(changes.atom(settings, rows, self_url=self_url, base=base,
                                 created=None if rows else feed_created(session, settings)),
                    media_type="application/atom+xml; charset=utf-8", headers={"Vary": "Accept"})


def crawl_json(c: Crawl, name: str | None, job: str | None = None) -> dict:
    return {"id": c.id, "source": name, "source_id": c.source_id, "kind": c.kind, "status": c.status,
            "trigger": c.trigger, "job_status": job, "queued_at": c.queued_at, "started_at": c.started_at,
            "finished_at": c.finished_at, "entries_new": c.entries_new, "entries_changed": c.entries_changed,
            "entries_unchanged": c.entries_unchanged, "warnings": len(c.warnings or []),
            "not_modified": c.conditional == "not-modified", "error": c.error}


@router.post("/api/sources/{name}/crawl", status_code=202, response_model=CrawlQueued, responses=AUTH_ERRORS,
             summary="Crawl a source now: queued, answered at once (authenticated)")
def crawl_now(name: str, request: Request, session: Session = Depends(get_session),
              user: User = Depends(auth.require_writer)) -> dict:
    auth.require_scope(request, "decide")
    src = get_source(session, name)
    session.commit()
    crawl_id, new = enqueue(request.app.state.db, src, "manual")
    c = session.get(Crawl, crawl_id)
    session.refresh(c)
    return ok({"queued": new, "crawl": crawl_json(c, src.name), "status_url": f"/api/crawls/{crawl_id}"})


@router.get("/api/crawls", response_model=CrawlList, responses=ERRORS, summary="Crawls, newest first: queued, running, done, with counts")
def list_crawls(request: Request, source: str | None = Query(None),
                status: str | None = Query(None, description="queued, running, ok, warnings, empty, failed..."),
                limit: int = Query(50, ge=1, le=MAX_LIMIT), offset: int = Query(0, ge=0, le=10_000_000),
                session: Session = Depends(get_session)) -> dict:
    q, cq = select(Crawl, Source.name).join(Source, Source.id == Crawl.source_id), select(func.count(Crawl.id))
    if source is not None:
        sid = session.scalar(select(Source.id).where(Source.name == source))
        q, cq = q.where(Crawl.source_id == sid), cq.where(Crawl.source_id == sid)
    if status is not None:
        q, cq = q.where(Crawl.status == status), cq.where(Crawl.status == status)
    total = session.scalar(cq) or 0
    found = list(session.execute(q.order_by(Crawl.id.desc()).limit(limit).offset(offset)))
    jobs = _job_states(request, [c for c, _ in found])
    rows = [crawl_json(c, n, jobs.get(c.id)) for c, n in found]
    return page(request, "crawls", rows, total=total, limit=limit, offset=offset)


def _job_states(request: Request, crawls: list[Crawl]) -> dict[int, str]:
    """The queue's own state (todo, doing...) of the jobs of crawls still queued or running."""
    if not any(c.status in ("queued", "running") for c in crawls):
        return {}

    try:
        return queue_for(request.app.state.db).jobs()
    except Exception:  # noqa: BLE001 - the crawl rows answer on their own
        return {}


@router.get("/api/crawls/{crawl_id}", response_model=CrawlOne, responses=ERRORS, summary="One crawl's progress")
def get_crawl(crawl_id: int, request: Request, session: Session = Depends(get_session)) -> dict:
    c = session.get(Crawl, crawl_id) if 0 < crawl_id < 2**31 else None
    if c is None:
        raise NotFound(f"No crawl {crawl_id}.")
    name = session.scalar(select(Source.name).where(Source.id == c.source_id))
    return ok({"crawl": crawl_json(c, name, _job_states(request, [c]).get(c.id))})


@router.post("/api/sources/{name}/schedule", response_model=ScheduleAnswer, responses=AUTH_ERRORS,
             summary="Set a source's re-crawl interval (authenticated, admin scope)")
def set_schedule(name: str, request: Request, body: dict = Body(..., examples=[{"every": "6h"}]),
                 session: Session = Depends(get_session), user: User = Depends(auth.require_writer)) -> dict:
    auth.require_scope(request, "admin")
    every = body.get("every") if isinstance(body, dict) else None
    if not isinstance(every, str):
        raise BadRequest('send {"every": "6h"} (30m, 6h, 1d, 1h30m; "off" removes the schedule)')
    src = set_(session, get_source(session, name), parse_every(every))
    session.commit()
    return ok({"source": src.name, "schedule": schedule_json(src)})
