"""``/audit-log`` (and ``/audit-log.json``): every reviewer decision, newest first, from the
append-only ``decisions`` table."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from app.main import get_session
from app.models import User
from app.services import auth
from app.services.pages import audit_log_page
from app.views.rendering import render

router = APIRouter(include_in_schema=False)


def _view(request, session, user, before_id, as_json):
    return render(request, "auditlog.html", audit_log_page(session, before_id), as_json=as_json, user=user)


@router.get("/audit-log")
def audit_log(request: Request, before_id: int | None = Query(None), session: Session = Depends(get_session),
              user: User | None = Depends(auth.current_user)):
    return _view(request, session, user, before_id, False)


@router.get("/audit-log.json")
def audit_log_json(request: Request, before_id: int | None = Query(None), session: Session = Depends(get_session)):
    return _view(request, session, None, before_id, True)
