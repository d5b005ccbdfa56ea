"""``/queue`` (and ``/queue.json``): the flagged entries waiting for a reviewer, with filters and counts."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.audit.queue import QueueFilters, filter_link, review_queue
from app.views.rendering import accepts_json, render

router = APIRouter(include_in_schema=False)

FACETS = (("severity", "Severity"), ("decision", "Decision"), ("rule", "Rule"), ("source", "Source"),
          ("model", "Model"))


def _queue(request: Request, session: Session, user: User | None, as_json: bool, severity, rule, source, model,
           decision, sort, page, status=None):
    as_json = as_json or accepts_json(request)
    filters = QueueFilters(severity=severity, rule=rule, source=source, model=model, decision=decision,
                           sort=sort or "severity", page=page, status=status)
    data = review_queue(session, request.app.state.settings, filters)
    f = QueueFilters(**{k: v for k, v in data["filters"].items()}, page=data["page"])

    def link(fmt: str = "", **changes) -> str:
        return filter_link(f, fmt, **changes)

    if as_json:   # the API's list envelope beside the page's own paging (page=N stays its query)
        data = {**data, "count": len(data["entries"]), "limit": data["per_page"],
                "offset": (data["page"] - 1) * data["per_page"],
                "next": link(".json", page=data["next_page"]) if data.get("next_page") else None}

    return render(request, "queue.html", data, as_json=as_json, user=user, link=link, facets=FACETS,
                  filters=f)


@router.get("/queue")
def queue_page(request: Request, severity: str | None = None, rule: str | None = None, source: str | None = None,
               model: str | None = None, decision: str | None = None, sort: str | None = None,
               page: int = Query(1), status: str | None = None, session: Session = Depends(get_session),
               user: User | None = Depends(auth.current_user)):
    return _queue(request, session, user, False, severity, rule, source, model, decision, sort, page, status)


@router.get("/queue.json")
def queue_json(request: Request, severity: str | None = None, rule: str | None = None, source: str | None = None,
               model: str | None = None, decision: str | None = None, sort: str | None = None,
               page: int = Query(1), status: str | None = None, session: Session = Depends(get_session)):
    return _queue(request, session, None, True, severity, rule, source, model, decision, sort, page, status)
