"""``/login`` and ``/logout`` for reviewers (accounts come from `caveat user add`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from app.main import get_session
from app.models import User
from app.services import auth
from app.views.rendering import redirect, render, safe_next

router = APIRouter(include_in_schema=False)


@router.get("/login")
def login_form(request: Request, next: str | None = None, user: User | None = Depends(auth.current_user)):
    return render(request, "login.html", {"next": safe_next(next)}, as_json=False, user=user, json_href=None)


@router.post("/login")
async def login(request: Request, session: Session = Depends(get_session)):
    form = await request.form()
    auth.check_csrf(request, form.get("csrf_token"))
    target = safe_next(str(form.get("next") or ""))
    user = auth.authenticate(session, str(form.get("username") or ""), str(form.get("password") or ""))
    if user is None:
        data = {"next": target, "error": "Wrong username or password. Accounts are made with `caveat user add NAME`.",
                "username": str(form.get("username") or "")}
        return render(request, "login.html", data, as_json=False, status=401, json_href=None)
    return auth.login_response(redirect(target), request.app.state.settings, user)


@router.post("/logout")
async def logout(request: Request, user: User | None = Depends(auth.current_user)):
    form = await request.form()
    auth.check_csrf(request, form.get("csrf_token"))
    return auth.logout_response(redirect("/queue"))
