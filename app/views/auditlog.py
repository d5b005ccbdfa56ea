"""``/audit-log`` (and ``/audit-log.json``): every reviewer decision, newest first, from the
append-only ``decisions`` table."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.pages.view_models import audit_log_page
from app.views.rendering import accepts_json, render

router = APIRouter(include_in_schema=False)


def _view(request, session, user, before_id, offset, as_json):
    as_json = as_json or accepts_json(request)
    data = audit_log_page(session, before_id, offset)
    if as_json and data["next"]:
        data["next"] = data["next"].replace("/audit-log?", "/audit-log.json?", 1)
    return render(request, "auditlog.html", data, as_json=as_json, user=user)


@router.get("/audit-log")
def audit_log(request: Request, before_id: int | None = Query(None), offset: int = Query(0, ge=0),
              session: Session = Depends(get_session),
              user: User | None = Depends(auth.current_user)):
    return _view(request, session, user, before_id, offset, False)


@router.get("/audit-log.json")
def audit_log_json(request: Request, before_id: int | None = Query(None), offset: int = Query(0, ge=0),
                   session: Session = Depends(get_session)):
    return _view(request, session, None, before_id, offset, True)
