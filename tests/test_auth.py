"""Auth: scrypt passwords, API tokens stored as sha256, signed session cookies, CSRF, dependencies, CLI."""

from __future__ import annotations

import hashlib

import pytest
from fastapi import Depends, Form, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.db import Database
from app.errors import BadRequest, Conflict, Forbidden
from app.models import ApiToken, User
from app.services import auth


@pytest.fixture
def auth_app(app):
    """The real app plus three small routes that exercise the dependencies."""

    @app.get("/api/_t/me")
    def me(request: Request, user=Depends(auth.current_user)):
        return {"user": user.username if user else None, "method": request.state.auth_method}

    @app.post("/api/_t/login")
    def login(username: str = Form(...), password: str = Form(...), session=Depends(auth.get_session)):
        user = auth.authenticate(session, username, password)
        if user is None:
            return JSONResponse({"ok": False}, status_code=401)
        return auth.login_response(JSONResponse({"ok": True}), app.state.settings, user)

    @app.get("/api/_t/csrf")
    def csrf(request: Request):
        return {"token": auth.csrf_token(request)}

    @app.post("/api/_t/guarded")
    def guarded(request: Request, csrf_token: str = Form(""), user=Depends(auth.require_user)):
        auth.check_csrf(request, csrf_token)
        return {"ok": True, "user": user.username}

    @app.post("/api/_t/logout")
    def logout():
        return auth.logout_response(JSONResponse({"ok": True}))

    return app


def _add_user(db: Database, name="alice", pw="correct horse") -> None:
    with db.session() as s:
        auth.create_user(s, name, pw)


def test_password_hash_is_salted_scrypt_and_verifies():
    a, b = auth.hash_password("pass phrase"), auth.hash_password("pass phrase")
    assert a.startswith("scrypt$") and a != b
    assert auth.verify_password("pass phrase", a)
    assert not auth.verify_password("pass phrasE", a)
    assert not auth.verify_password("pass phrase", "md5$nonsense")


def test_create_user_and_authenticate(backend_db):
    with backend_db.session() as s:
        u = auth.create_user(s, "alice", "correct horse")
        assert "correct horse" not in u.password_hash
        with pytest.raises(Conflict, match="already exists"):
            auth.create_user(s, "alice", "another pass")
        with pytest.raises(BadRequest, match="at least 8"):
            auth.create_user(s, "bob", "short")
        with pytest.raises(BadRequest, match="not allowed"):
            auth.create_user(s, "bad name!", "long enough")
    with backend_db.session() as s:
        assert auth.authenticate(s, "alice", "correct horse").username == "alice"
        assert auth.authenticate(s, "alice", "wrong horse") is None
        assert auth.authenticate(s, "nobody", "correct horse") is None
        s.scalar(select(User)).is_active = False
    with backend_db.session() as s:
        assert auth.authenticate(s, "alice", "correct horse") is None


def test_token_is_stored_hashed_and_authenticates_bearer(auth_app, db):
    _add_user(db)
    with db.session() as s:
        plaintext = auth.create_token(s, "alice", "importer")
    with db.session() as s:
        row = s.scalar(select(ApiToken))
        assert row.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()
        assert plaintext not in row.token_hash
    with TestClient(auth_app) as c:
        r = c.get("/api/_t/me", headers={"Authorization": f"Bearer {plaintext}"})
        assert r.json() == {"user": "alice", "method": "token"}
        assert c.get("/api/_t/me", headers={"Authorization": "Bearer cvt_wrong"}).json()["user"] is None
    with db.session() as s:
        assert s.scalar(select(ApiToken)).last_used_at is not None
        auth.revoke_token(s, "alice", "importer")
    with TestClient(auth_app) as c:
        assert c.get("/api/_t/me", headers={"Authorization": f"Bearer {plaintext}"}).json()["user"] is None


def test_login_cookie_attributes_and_tampering(auth_app, db):
    _add_user(db)
    with TestClient(auth_app) as c:
        assert c.post("/api/_t/login", data={"username": "alice", "password": "nope nope"}).status_code == 401
        r = c.post("/api/_t/login", data={"username": "alice", "password": "correct horse"})
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(auth.SESSION_COOKIE + "=")
        low = cookie.lower()
        assert "httponly" in low and "samesite=lax" in low and "path=/" in low
        assert c.get("/api/_t/me").json() == {"user": "alice", "method": "cookie"}
        value = c.cookies.get(auth.SESSION_COOKIE)
        c.cookies.set(auth.SESSION_COOKIE, value[:-2] + ("AA" if not value.endswith("AA") else "BB"))
        assert c.get("/api/_t/me").json()["user"] is None


def test_password_change_ends_sessions(auth_app, db):
    _add_user(db)
    with TestClient(auth_app) as c:
        c.post("/api/_t/login", data={"username": "alice", "password": "correct horse"})
        assert c.get("/api/_t/me").json()["user"] == "alice"
        with db.session() as s:
            auth.set_password(s, "alice", "battery staple")
        assert c.get("/api/_t/me").json()["user"] is None


def test_logout_clears_cookie(auth_app, db):
    _add_user(db)
    with TestClient(auth_app) as c:
        c.post("/api/_t/login", data={"username": "alice", "password": "correct horse"})
        r = c.post("/api/_t/logout")
        assert auth.SESSION_COOKIE in r.headers["set-cookie"]
        assert c.get("/api/_t/me").json()["user"] is None


def test_csrf_bound_to_session(auth_app, db):
    _add_user(db)
    with TestClient(auth_app) as a, TestClient(auth_app) as b:
        a.post("/api/_t/login", data={"username": "alice", "password": "correct horse"})
        b.post("/api/_t/login", data={"username": "alice", "password": "correct horse"})
        token_a = a.get("/api/_t/csrf").json()["token"]
        assert a.post("/api/_t/guarded", data={"csrf_token": token_a}).json() == {"ok": True, "user": "alice"}
        r = b.post("/api/_t/guarded", data={"csrf_token": token_a})
        assert r.status_code == 403 and "another session" in r.json()["error"]
        r = a.post("/api/_t/guarded", data={})
        assert r.status_code == 403 and "no CSRF token" in r.json()["error"]
        r = a.post("/api/_t/guarded", data={"csrf_token": "garbage"})
        assert r.status_code == 403 and "not valid" in r.json()["error"]


def test_require_user_says_how_to_sign_in(auth_app):
    with TestClient(auth_app) as c:
        r = c.post("/api/_t/guarded", data={"csrf_token": "x"})
        assert r.status_code == 401
        assert "caveat token create" in r.json()["error"] and "/login" in r.json()["error"]


def test_check_csrf_rejects_other_key(auth_app, settings):
    from itsdangerous import URLSafeTimedSerializer

    forged = URLSafeTimedSerializer("other-key", salt="caveat-csrf").dumps("anon")
    with TestClient(auth_app) as c:
        r = c.post("/api/_t/guarded", data={"csrf_token": forged})
        assert r.status_code == 401  # not signed in at all
    scope = {"type": "http", "headers": [], "app": auth_app}
    with pytest.raises(Forbidden):
        auth.check_csrf(Request(scope), forged)
    assert auth.check_csrf(Request(scope), auth.csrf_token(Request(scope))) is None


def test_cli_user_add_and_token_create(cli, db):
    r = cli("user", "add", "carol", "--password-stdin", input="a long password\n")
    assert r.exit_code == 0, r.output
    assert "created user carol" in r.output
    r = cli("user", "add", "carol", "--password-stdin", input="a long password\n")
    assert r.exit_code == 1 and "already exists" in r.output
    r = cli("token", "create", "carol", "--name", "ci")
    assert r.exit_code == 0, r.output
    plaintext = r.stdout.strip().splitlines()[0]
    with db.session() as s:
        assert auth.user_for_token(s, plaintext).username == "carol"
    r = cli("token", "create", "nobody", "--name", "ci")
    assert r.exit_code == 1 and "caveat user add nobody" in r.output
