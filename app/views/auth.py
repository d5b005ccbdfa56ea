"""``/login`` and ``/logout`` for reviewers (accounts come from `caveat user add`).

Sign-in is rate limited per client address (``X-Forwarded-For`` only from ``CAVEAT_TRUSTED_PROXIES``)
and per account, except for a browser holding a device cookie from an earlier sign-in to that account,
which is limited by its own failures instead (failed attempts only; 429 with ``Retry-After``), the password is checked off the event loop (Argon2id takes tens of milliseconds),
the form's CSRF token is bound to a pre-session cookie, and a session lives on the server: logout ends
it for good.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.views.rendering import redirect, render, safe_next
import secrets

router = APIRouter(include_in_schema=False)


@router.get("/login")
def login_form(request: Request, next: str | None = None, user: User | None = Depends(auth.current_user)):
    if user is None:

        request.state.presession = request.cookies.get(auth.PRESESSION_COOKIE) or secrets.token_urlsafe(24)
    resp = render(request, "login.html", {"next": safe_next(next)}, as_json=False, user=user, json_href=None)
    if user is None:
        auth.presession(request, resp)
    return resp


@router.post("/login")
async def login(request: Request, session: Session = Depends(get_session)):
    form = await request.form()
    auth.check_csrf(request, form.get("csrf_token"))
    settings = request.app.state.settings
    target = safe_next(str(form.get("next") or ""))
    username = str(form.get("username") or "")
    client = auth.client_address(request)  # X-Forwarded-For only from CAVEAT_TRUSTED_PROXIES
    device = auth.known_device(request, username)  # a browser that signed in to this account before
    wait = auth.login_allowed(settings, username, client, device)
    if wait:
        data = {"next": target, "username": username,
                "error": f"Too many failed sign-ins; try again in {wait} s."}
        resp = render(request, "login.html", data, as_json=False, status=429, json_href=None)
        resp.headers["Retry-After"] = str(wait)
        return resp
    def check_and_start():
        # The password check (tens of ms), the rehash and the new session row, committed in the worker
        # thread: nothing here may block the event loop on the database's write lock.
        user = auth.authenticate(session, username, str(form.get("password") or ""))
        cookie = auth.start_session(session, settings, user, auth.client_of(request)) if user is not None else None
        session.commit()
        return user, cookie

    user, cookie = await run_in_threadpool(check_and_start)
    if user is None:
        auth.login_failed(settings, username, client, device)
        data = {"next": target, "error": "Wrong username or password. Accounts are made with `caveat user add NAME`.",
                "username": username}
        return render(request, "login.html", data, as_json=False, status=401, json_href=None)
    resp = auth.set_session_cookie(redirect(target), settings, cookie)
    return resp if device else auth.set_device_cookie(resp, settings, user.username)


@router.post("/logout")
async def logout(request: Request, session: Session = Depends(get_session),
                 user: User | None = Depends(auth.current_user)):
    form = await request.form()
    auth.check_csrf(request, form.get("csrf_token"))

    def end():
        auth.logout(session, request)
        session.commit()

    await run_in_threadpool(end)
    return auth.logout_response(redirect("/queue"))
