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
from app.accounts import auth, users


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
        return auth.login_response(JSONResponse({"ok": True}), app.state.settings, user, session)

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


def test_password_hash_is_salted_argon2id_and_verifies():
    a, b = auth.hash_password("pass phrase"), auth.hash_password("pass phrase")
    assert a.startswith("$argon2id$v=19$m=19456,t=2,p=1$") and a != b
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



def test_old_scrypt_hashes_verify_and_are_rehashed_at_sign_in(db):
    with db.session() as s:
        user = auth.create_user(s, "old", "correct horse")
        user.password_hash = users._legacy_scrypt_hash("correct horse")
    with db.session() as s:
        assert auth.authenticate(s, "old", "correct horse") is not None
    with db.session() as s:
        stored = auth.get_user(s, "old").password_hash
        assert stored.startswith("$argon2id$") and auth.verify_password("correct horse", stored)
        assert auth.authenticate(s, "old", "wrong horse") is None


def _login_page_token(client) -> str:
    import re

    return re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text).group(1)


def _attempt(client, password, username="alice"):
    return client.post("/login", data={"username": username, "password": password, "next": "/queue",
                                       "csrf_token": _login_page_token(client)}, follow_redirects=False)


def test_failed_sign_ins_are_limited_per_account_with_retry_after(app, client, db):
    _add_user(db)
    for _ in range(10):
        assert _attempt(client, "wrong horse").status_code == 401
    blocked = _attempt(client, "correct horse")  # even the right password waits now
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in blocked.text
    _add_user(db, "bob", "another horse")
    assert _attempt(client, "another horse", "bob").status_code == 303  # another account is not blocked


def test_sign_in_limits_are_shared_through_redis(tmp_path, sqlite_template):
    """Two app instances (two server processes) on one Redis see each other's failed attempts."""
    import shutil
    import uuid

    import redis
    from fastapi.testclient import TestClient

    from app.main import create_app
    from tests.conftest import make_settings

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/0").ping()
    except Exception:  # pragma: no cover - Redis runs on this kind of machine and in CI
        pytest.fail("Redis is not reachable at 127.0.0.1:6379; it runs on this machine kind")
    (tmp_path / "data").mkdir()
    shutil.copy(sqlite_template, tmp_path / "data" / "caveat.db")
    settings = make_settings(tmp_path, f"sqlite:///{tmp_path / 'data' / 'caveat.db'}",
                             redis_url="redis://127.0.0.1:6379/0", login_limit_account="3 per 15 minutes")
    name = f"u{uuid.uuid4().hex[:8]}"
    first, second = create_app(settings), create_app(settings.model_copy())
    with first.state.db.session() as s:
        auth.create_user(s, name, "correct horse")
    with TestClient(first, base_url="http://caveat.test") as a, TestClient(second, base_url="http://caveat.test") as b:
        for c in (a, b, a):
            assert _attempt(c, "wrong horse", name).status_code == 401
        assert _attempt(b, "correct horse", name).status_code == 429
    first.state.db.dispose()
    second.state.db.dispose()


def test_logout_ends_the_session_on_the_server(app, client, db):
    _add_user(db)
    assert _attempt(client, "correct horse").status_code == 303
    cookie = client.cookies.get(auth.SESSION_COOKIE)
    import re

    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/queue").text).group(1)
    assert client.post("/logout", data={"csrf_token": token}, follow_redirects=False).status_code in (302, 303)
    client.cookies.set(auth.SESSION_COOKIE, cookie)  # the cookie replayed after logout
    r = client.post("/api/tokens", json={"name": "after-logout"}, headers={"x-csrf-token": token})
    assert r.status_code == 401


def test_cli_revokes_a_users_sessions(app, client, db, cli):
    _add_user(db)
    assert _attempt(client, "correct horse").status_code == 303
    listed = cli("user", "sessions", "alice")
    assert listed.exit_code == 0 and "1 live session" in listed.output
    revoked = cli("user", "sessions", "alice", "--revoke")
    assert revoked.exit_code == 0 and "revoked 1" in revoked.output
    assert client.get("/queue").status_code == 200 and "Sign in" in client.get("/queue").text


def test_login_form_token_is_bound_to_its_pre_session_cookie(app, client, db):
    """Login CSRF: a token from another browser's login form does not sign this browser in."""
    from fastapi.testclient import TestClient

    _add_user(db)
    with TestClient(app, base_url="http://caveat.test") as attacker:
        stolen = _login_page_token(attacker)
    client.get("/login")  # the victim's own pre-session cookie
    r = client.post("/login", data={"username": "alice", "password": "correct horse", "csrf_token": stolen},
                    follow_redirects=False)
    assert r.status_code == 403 and auth.SESSION_COOKIE not in client.cookies


def test_tokens_have_scopes_an_expiry_and_a_listing(app, client, db, cli):
    from datetime import timedelta

    from app.models import ApiToken, utcnow

    _add_user(db)
    with db.session() as s:
        reader = auth.create_token(s, "alice", "reader", "read", 30)
        admin = auth.create_token(s, "alice", "minter", "admin", 1)
        old = auth.create_token(s, "alice", "old", "read,decide", 5)
        s.scalar(select(ApiToken).where(ApiToken.name == "old")).expires_at = utcnow() - timedelta(seconds=1)
    hdr = lambda t: {"authorization": f"Bearer {t}"}  # noqa: E731
    assert client.post("/api/measurements", json={"recipe_id": "r-x", "tps": 1, "non_repeating_prompts": True,
                                                  "output_checked": True}, headers=hdr(reader)).status_code == 403
    assert client.post("/api/flags/1/decision", json={"action": "dismiss", "note": "n"},
                       headers=hdr(reader)).status_code == 403
    assert client.post("/api/tokens", json={"name": "more"}, headers=hdr(reader)).status_code == 403
    wider = client.post("/api/tokens", json={"name": "more", "scopes": ["decide"]}, headers=hdr(admin))
    assert wider.status_code == 403 and "wider scope" in wider.json()["error"]
    assert client.post("/api/tokens", json={"name": "more", "scopes": ["admin"]}, headers=hdr(admin)).status_code == 201
    assert client.post("/api/flags/1/decision", json={"action": "dismiss", "note": "n"},
                       headers=hdr(old)).status_code == 401  # expired: signs in nobody
    listed = cli("token", "list", "alice")
    assert listed.exit_code == 0
    assert "reader" in listed.output and "read " in listed.output and "expired" in listed.output
    assert reader not in listed.output and admin not in listed.output  # never shown again
    bad = cli("token", "create", "alice", "--name", "x", "--scope", "root")
    assert bad.exit_code != 0 and "Unknown scope" in bad.output


def _cli(settings, *args):
    from click.testing import CliRunner

    from app.cli import main
    from app.cli.context import CliContext

    return CliRunner().invoke(main, list(args), obj=CliContext(settings), catch_exceptions=False)


def test_a_minted_token_never_outlives_outranks_or_survives_its_parent(backend_settings):
    """Issue 24, item 10: a 1-day admin token could mint a 366-day admin token (and so renew itself
    forever). A child's expiry is capped at its parent's, its scopes stay within them, and revoking the
    parent (from the CLI) revokes every token below it; a session's tokens have no parent."""
    from datetime import timedelta

    from fastapi.testclient import TestClient

    from app.accounts.tokens import aware
    from app.main import create_app
    from app.models import utcnow

    application = create_app(backend_settings)
    db = application.state.db
    _add_user(db)
    with db.session() as s:
        root = auth.create_token(s, "alice", "root", "read,admin", 1)
    hdr = lambda t: {"authorization": f"Bearer {t}"}  # noqa: E731
    with TestClient(application, base_url="http://caveat.test") as c:
        r = c.post("/api/tokens", json={"name": "renewed", "scopes": ["read", "admin"], "days": 366},
                   headers=hdr(root))
        assert r.status_code == 201 and r.json()["parent"] == "root" and "capped" in r.json()["note"]
        child = r.json()["token"]
        grand = c.post("/api/tokens", json={"name": "grand", "scopes": ["read"]}, headers=hdr(child))
        assert grand.status_code == 201
        grand = grand.json()["token"]
        wider = c.post("/api/tokens", json={"name": "w", "scopes": ["read", "decide"]}, headers=hdr(child))
        assert wider.status_code == 403 and "wider scope" in wider.json()["error"]
        with db.session() as s:
            rows = {t.name: t for t in s.scalars(select(ApiToken))}
            limit = aware(rows["root"].expires_at)
            for name in ("renewed", "grand"):
                assert aware(rows[name].expires_at) <= limit  # never outlives its parent
                assert aware(rows[name].expires_at) < utcnow() + timedelta(days=1, minutes=1)
            assert rows["renewed"].parent_id == rows["root"].id and rows["grand"].parent_id == rows["renewed"].id
            assert set(rows["renewed"].scopes.split(",")) <= {"read", "admin"}
        assert c.get("/api/health", headers=hdr(grand)).status_code == 200
        assert _cli(backend_settings, "token", "list", "alice").output.count("minted by") == 2
        revoked = _cli(backend_settings, "token", "revoke", "alice", "--name", "root")
        assert revoked.exit_code == 0 and "revoked 3 token(s)" in revoked.output
        for t in (root, child, grand):  # the whole lineage signs in nobody
            assert c.post("/api/tokens", json={"name": "again", "scopes": ["read"]}, headers=hdr(t)).status_code == 401
    with db.session() as s:
        assert all(t.revoked_at is not None for t in s.scalars(select(ApiToken)))
    application.state.db.dispose()


def test_a_token_with_a_revoked_ancestor_signs_in_nobody(db):
    """Even when a parent is revoked by hand (not through `caveat token revoke`), its children stop."""
    from app.models import utcnow

    _add_user(db)
    with db.session() as s:
        parent_plain = auth.create_token(s, "alice", "p", "read,admin", 10)
        parent = auth.token_row(s, parent_plain)
        child = auth.create_token(s, "alice", "c", "read", 30, parent=parent)
        assert auth.user_for_token(s, child).username == "alice"
        parent.revoked_at = utcnow()
    with db.session() as s:
        assert auth.user_for_token(s, child) is None
        with pytest.raises(Forbidden, match="no longer live"):
            auth.create_token(s, "alice", "c2", "read", 1, parent=auth.token_row(s, parent_plain))


def test_a_signed_in_session_mints_tokens_without_a_parent(app, client, db):
    _add_user(db)
    assert _attempt(client, "correct horse").status_code == 303
    import re

    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/queue").text).group(1)
    r = client.post("/api/tokens", json={"name": "from-session", "days": 366}, headers={"x-csrf-token": token})
    assert r.status_code == 201 and r.json()["parent"] is None
    with db.session() as s:
        assert s.scalar(select(ApiToken)).parent_id is None
