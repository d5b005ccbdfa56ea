"""``/changes`` (and ``/changes.json``): what the crawls found changed, newest first, with filters
(source, kind, cited, entry, recipe, since) and paging; also the page a browser gets for
``/changes.atom`` (``feed_page``: the feed's events, readable, with its address for a feed reader)."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from app.deps import get_session
from app.errors import BadRequest
from app.models import User
from app.accounts import auth
from app.pages.changes import changes_page
from app.views.rendering import render

router = APIRouter(include_in_schema=False)


def _blank(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def _cited(value: str | None) -> bool | None:
    value = _blank(value)
    if value is None:
        return None
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise BadRequest(f"cited={value!r}: use true or false")


def _since(value: str | None) -> datetime | None:
    value = _blank(value)
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"since={value!r} is not an ISO 8601 time, e.g. 2026-12-01T12:00:00Z") from None


def _entry(value: str | None) -> int | None:
    value = _blank(value)
    if value is None:
        return None
    if not value.isdigit() or not 0 < int(value) < 2**31:
        raise BadRequest(f"entry_id={value!r}: an entry number, e.g. 1")
    return int(value)


def _page(request: Request, session: Session, as_json: bool, user=None, *, feed: bool = False):
    p = request.query_params
    path = "/changes.json" if as_json else "/changes"
    data = changes_page(session, request.app.state.settings, source=_blank(p.get("source")),
                        kind=_blank(p.get("kind")), cited=_cited(p.get("cited")), entry_id=_entry(p.get("entry_id")),
                        recipe_id=_blank(p.get("recipe_id")), since=_since(p.get("since")),
                        offset=_offset(p.get("offset")), path=path)
    extra = {"json_href": "/changes.json" + (f"?{request.url.query}" if request.url.query else "")} if feed else {}
    return render(request, "changes.html", data, as_json=as_json, user=user, feed_view=feed, **extra)


def _offset(value: str | None) -> int:
    value = _blank(value)
    if value is None:
        return 0
    if not value.isdigit() or int(value) > 10_000_000:
        raise BadRequest(f"offset={value!r}: a number from 0")
    return int(value)


@router.get("/changes")
def changes_view(request: Request, session: Session = Depends(get_session),
                 user: User | None = Depends(auth.current_user)):
    return _page(request, session, False, user)


@router.get("/changes.json")
def changes_json(request: Request, session: Session = Depends(get_session)):
    return _page(request, session, True)


def feed_page(request: Request, session: Session):
    """``/changes.atom`` opened in a browser (it asks for text/html, not a feed): the same events as a
    readable page that names the feed's address for a feed reader."""
    return _page(request, session, False, None, feed=True)


def wants_feed_page(request: Request) -> bool:
    """A browser's navigation asks for text/html and names no feed type; a feed reader names
    application/atom+xml (or XML, or anything) and gets the feed."""
    accept = request.headers.get("accept", "").lower()
    return "text/html" in accept and "atom" not in accept and "rss" not in accept
