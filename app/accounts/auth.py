"""Accounts, API tokens, server-side sessions, sign-in rate limits and CSRF; the FastAPI dependencies.

- Passwords: Argon2id (argon2-cffi; m = 19 MiB, t = 2, p = 1, OWASP's minimum). Older scrypt hashes
  (``scrypt$<n>$<r>$<p>$<salt>$<hash>``) still verify and are rehashed at the next sign-in.
- Sign-in: failed attempts are counted per account and per client address (``limits``: in memory, or
  in Redis with ``CAVEAT_REDIS_URL``); past ``CAVEAT_LOGIN_LIMIT_*`` the login answers 429 with
  ``Retry-After``. The hash is checked off the event loop.
- Sessions: the cookie ``caveat_session`` (HttpOnly, SameSite=Lax, signed) holds a random token whose
  sha256 names a ``login_sessions`` row; logout, a password change and `caveat user sessions NAME
  --revoke` revoke rows, after which the cookie signs in nobody.
- API tokens: ``cvt_`` + 43 random characters, shown once; only their sha256 (hex) is stored.
  Programs send ``Authorization: Bearer <token>``.
- CSRF: a signed token bound to the session (anonymous visitors: to a random pre-session cookie, so a
  login form's token from another browser is refused). Every cookie-authenticated write carries it,
  whatever its content type (``check_write``); bearer-token requests carry no ambient credentials.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from datetime import timedelta, timezone

import time

from fastapi import Depends, Request
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, Forbidden, Unauthorized, UnsupportedMediaType
from app.deps import get_session
from app.models import ApiToken, Decision, LoginSession, Measurement, User, utcnow
from app.accounts.tokens import (  # noqa: F401  (re-exported: the faces use auth.<name>)
    DEFAULT_SCOPES, DEFAULT_TOKEN_DAYS, MAX_TOKEN_DAYS, SCOPES, TOKEN_PREFIX, create_token, list_tokens, parse_scopes,
    _token_hash, require_scope, revoke_token, token_row, token_state, user_for_token,
)
from app.accounts.users import (  # noqa: F401  (re-exported)
    MIN_PASSWORD, USERNAME_RE, _DUMMY_HASH, _existing_user, authenticate, create_user, get_user, hash_password,
    needs_rehash, verify_password,
)

SESSION_COOKIE = "caveat_session"
SESSION_MAX_AGE = 14 * 24 * 3600
CSRF_MAX_AGE = 24 * 3600
_KEYS: dict[int, str] = {}


# -- signing ---------------------------------------------------------------------------------------
def _secret(settings: Settings) -> str:
    key = _KEYS.get(id(settings))
    if key is None:
        key = _KEYS[id(settings)] = settings.get_secret_key()
    return key


def _serializer(settings: Settings, purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(_secret(settings), salt=f"caveat-{purpose}")


def _session_row(request: Request):
    """The live ``LoginSession`` the request's cookie names (cached on the request), or None."""
    if hasattr(request.state, "login_session"):
        return request.state.login_session
    request.state.login_session = None
    raw = request.cookies.get(SESSION_COOKIE)
    if not raw:
        return None
    try:
        data = _serializer(request.app.state.settings, "session").loads(raw, max_age=SESSION_MAX_AGE)
    except (BadSignature, SignatureExpired):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("s"), str):
        return None  # a cookie from before server-side sessions: signs in nobody
    with request.app.state.db.Session() as s:
        row = s.scalar(select(LoginSession).where(LoginSession.token_hash == _token_hash(data["s"])))
        if row is None or row.revoked_at is not None:
            return None
        expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=timezone.utc)
        if expires <= utcnow():
            return None
        s.expunge(row)
    request.state.login_session = row
    return row


def _read_session(request: Request) -> dict | None:
    row = _session_row(request)
    return {"u": row.user_id, "n": row.token_hash[:32]} if row is not None else None


def start_session(session: Session, settings: Settings, user: User, client: str | None = None) -> str:
    """Record a new server-side session for ``user``; returns the signed cookie value that names it."""
    token = secrets.token_urlsafe(32)
    session.add(LoginSession(user_id=user.id, token_hash=_token_hash(token), created_at=utcnow(),
                             expires_at=utcnow() + timedelta(seconds=SESSION_MAX_AGE), client=client))
    session.flush()
    return _serializer(settings, "session").dumps({"s": token})


def set_session_cookie(response, settings: Settings, cookie: str):
    """Put the signed session cookie (from ``start_session``) on ``response``."""
    response.set_cookie(SESSION_COOKIE, cookie, max_age=SESSION_MAX_AGE, path="/", httponly=True, samesite="lax",
                        secure=settings.base_url.startswith("https://"))
    response.delete_cookie(PRESESSION_COOKIE, path="/")
    return response


def _trusted(networks, host: str) -> bool:
    try:
        addr = ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return False
    return any(addr in n for n in networks)


def client_address(request: Request) -> str:
    """The client's address: the TCP peer, unless the peer is one of ``CAVEAT_TRUSTED_PROXIES``; then
    the right-most address of ``X-Forwarded-For`` that is not itself a trusted proxy (what each proxy
    appended; anything left of it the client could have written). Without trusted proxies the header
    is ignored, so a client cannot pick a new address per attempt."""
    peer = request.client.host if request.client else "unknown"
    networks = request.app.state.settings.trusted_proxy_networks
    if not networks or not _trusted(networks, peer):
        return peer
    hops = [h.strip() for v in request.headers.getlist("x-forwarded-for") for h in v.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(networks, hop):
            return hop[:64]
    return hops[0][:64] if hops else peer


def client_of(request: Request) -> str:
    """Who signed in, for `caveat user sessions`: the client address and user agent."""
    return f"{client_address(request)} {request.headers.get('user-agent', '')}"[:200]


def login_response(response, settings: Settings, user: User, session: Session, request: Request | None = None):
    """Start a server-side session for ``user`` and set its signed cookie on ``response``."""
    client = client_of(request) if request is not None else None
    return set_session_cookie(response, settings, start_session(session, settings, user, client))


def logout(session: Session, request: Request) -> None:
    """End the request's session on the server (the cookie then signs in nobody, even if kept)."""
    row = _session_row(request)
    if row is not None:
        live = session.get(LoginSession, row.id)
        if live is not None and live.revoked_at is None:
            live.revoked_at = utcnow()
            session.flush()


def revoke_sessions(session: Session, user: User) -> int:
    rows = session.scalars(select(LoginSession).where(LoginSession.user_id == user.id,
                                                      LoginSession.revoked_at.is_(None))).all()
    for r in rows:
        r.revoked_at = utcnow()
    session.flush()
    return len(rows)


def list_sessions(session: Session, username: str) -> list[LoginSession]:
    user = _existing_user(session, username)
    return list(session.scalars(select(LoginSession).where(LoginSession.user_id == user.id)
                                .order_by(LoginSession.id)))


def logout_response(response):
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response


# -- sign-in rate limits ---------------------------------------------------------------------------
_LIMITERS: dict[str, tuple] = {}


def _limiter(settings: Settings):
    key = settings.redis_url or f"memory:{id(settings)}"  # in memory: per server (settings object)
    got = _LIMITERS.get(key)
    if got is None:
        storage = storage_from_string(key if settings.redis_url else "memory://")
        got = _LIMITERS[key] = (MovingWindowRateLimiter(storage), parse(settings.login_limit_account),
                                parse(settings.login_limit_client))
    return got


def login_allowed(settings: Settings, username: str, client: str, device: str | None = None) -> int:
    """0 when a sign-in attempt may be checked now, else the seconds to wait (counting failed attempts
    only). Every attempt is limited per client address. The per-account limit applies to browsers that
    have never signed in to this account; a browser that has (``device``: its device cookie, from
    ``known_device``) is limited by its own count of failures instead, so an attacker who exhausts the
    account's limit from elsewhere does not lock its owner out."""
    limiter, per_account, per_client = _limiter(settings)
    waits = []
    own = f"device:{device}" if device else f"account:{username.lower()}"
    for item, ident in ((per_account, own), (per_client, f"client:{client}")):
        if not limiter.test(item, "caveat-login", ident):
            reset, _ = limiter.get_window_stats(item, "caveat-login", ident)
            waits.append(max(1, int(reset - time.time()) + 1))
    return max(waits, default=0)


def login_failed(settings: Settings, username: str, client: str, device: str | None = None) -> None:
    limiter, per_account, per_client = _limiter(settings)
    limiter.hit(per_account, "caveat-login", f"device:{device}" if device else f"account:{username.lower()}")
    limiter.hit(per_client, "caveat-login", f"client:{client}")


DEVICE_COOKIE = "caveat_device"
DEVICE_MAX_AGE = 365 * 24 * 3600


def known_device(request: Request, username: str) -> str | None:
    """The id of this browser's device cookie when it was issued at a successful sign-in to
    ``username`` (signed with the server's key), else None."""
    raw = request.cookies.get(DEVICE_COOKIE)
    if not raw:
        return None
    try:
        data = _serializer(request.app.state.settings, "device").loads(raw, max_age=DEVICE_MAX_AGE)
    except (BadSignature, SignatureExpired):
        return None
    if not isinstance(data, dict) or str(data.get("u", "")).lower() != username.lower() or not data.get("d"):
        return None
    return str(data["d"])


def set_device_cookie(response, settings: Settings, username: str):
    """Mark this browser as one that has signed in to ``username`` (see ``login_allowed``)."""
    value = _serializer(settings, "device").dumps({"u": username.lower(), "d": secrets.token_urlsafe(16)})
    response.set_cookie(DEVICE_COOKIE, value, max_age=DEVICE_MAX_AGE, path="/login", httponly=True,
                        samesite="strict", secure=settings.base_url.startswith("https://"))
    return response


# -- CSRF ------------------------------------------------------------------------------------------
PRESESSION_COOKIE = "caveat_presession"


def _csrf_binding(request: Request) -> str:
    """A signed-in visitor's token is bound to their session; an anonymous one (the login form) to a
    random pre-session cookie, so a token from another browser cannot log this one in (login CSRF)."""
    data = _read_session(request)
    if data:
        return str(data.get("n"))
    pre = request.cookies.get(PRESESSION_COOKIE) or getattr(request.state, "presession", None)
    return f"pre:{pre}" if pre else "anon:none"


def presession(request: Request, response) -> None:
    """Give an anonymous visitor the pre-session cookie their login form's CSRF token is bound to."""
    if request.cookies.get(PRESESSION_COOKIE) or _read_session(request):
        return
    value = getattr(request.state, "presession", None) or secrets.token_urlsafe(24)
    request.state.presession = value
    response.set_cookie(PRESESSION_COOKIE, value, max_age=CSRF_MAX_AGE, path="/", httponly=True, samesite="lax",
                        secure=request.app.state.settings.base_url.startswith("https://"))


def csrf_token(request: Request) -> str:
    """A token for a form's hidden ``csrf_token`` field, bound to the visitor's session."""
    return _serializer(request.app.state.settings, "csrf").dumps(_csrf_binding(request))


def check_csrf(request: Request, token: str | None) -> None:
    """Raise Forbidden unless ``token`` was issued by ``csrf_token`` for this same session."""
    fix = "Reload the page and submit the form again."
    if not token:
        raise Forbidden(f"The form had no CSRF token. {fix}")
    try:
        bound = _serializer(request.app.state.settings, "csrf").loads(token, max_age=CSRF_MAX_AGE)
    except SignatureExpired:
        raise Forbidden(f"The form's CSRF token has expired. {fix}") from None
    except BadSignature:
        raise Forbidden(f"The form's CSRF token is not valid. {fix}") from None
    if not hmac.compare_digest(str(bound), _csrf_binding(request)):
        raise Forbidden(f"The form's CSRF token belongs to another session. {fix}")


# -- FastAPI dependencies --------------------------------------------------------------------------
def current_user(request: Request, session: Session = Depends(get_session)) -> User | None:
    """The signed-in user (Bearer token first, then the session cookie), or None.

    Sets ``request.state.auth_method`` to ``"token"``, ``"cookie"`` or ``None``.
    """
    request.state.auth_method = None
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        token = header[7:].strip()
        user = user_for_token(session, token)
        if user is not None:
            request.state.auth_method = "token"
            row = token_row(session, token)
            request.state.token_scopes = tuple((row.scopes or "").split(","))
            request.state.token_id = row.id
        return user
    data = _read_session(request)
    if data is None:
        return None
    user = session.get(User, data["u"])
    if user is None or not user.is_active:
        return None
    request.state.auth_method = "cookie"
    return user


def require_user(user: User | None = Depends(current_user)) -> User:
    if user is None:
        raise Unauthorized(
            "Sign in first: log in at /login, or send 'Authorization: Bearer <token>' with a token from "
            "`caveat token create USERNAME --name NAME`."
        )
    return user


def is_cookie_auth(request: Request) -> bool:
    return getattr(request.state, "auth_method", None) == "cookie"


CSRF_HEADER = "x-csrf-token"
JSON_TYPES = ("application/json",)
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def check_write(request: Request, form_token: str | None = None) -> None:
    """The one CSRF rule of every state-changing route: a cookie-authenticated request must carry the
    CSRF token of its session (the form's ``csrf_token`` field or the ``X-CSRF-Token`` header) whatever
    its content type; a bearer-token request carries no ambient credential and needs none."""
    if is_cookie_auth(request):
        check_csrf(request, form_token or request.headers.get(CSRF_HEADER))


def require_json(request: Request) -> None:
    """JSON bodies only as ``application/json`` (a ``text/plain`` form post can then never pass for one)."""
    if media_type(request) not in JSON_TYPES:
        raise UnsupportedMediaType(f"Send the body as JSON with 'Content-Type: application/json' (got "
                                   f"{media_type(request) or 'no content type'!r}).")


def require_writer(request: Request, user: User = Depends(require_user)) -> User:
    """For JSON write routes: a signed-in user, a JSON body, and the CSRF rule of ``check_write``."""
    require_json(request)
    check_write(request)
    return user


def set_password(session: Session, username: str, password: str) -> User:
    user = _existing_user(session, username)
    if len(password or "") < MIN_PASSWORD:
        raise BadRequest(f"The password is too short: use at least {MIN_PASSWORD} characters.")
    user.password_hash = hash_password(password)
    revoke_sessions(session, user)  # a new password ends every session
    session.flush()
    return user


def list_users(session: Session) -> list[dict]:
    """Every account with its state and how many live tokens and decisions it has."""
    out = []
    for u in session.scalars(select(User).order_by(User.username)):
        tokens = [t for t in session.scalars(select(ApiToken).where(ApiToken.user_id == u.id)) if token_state(t) == "live"]
        decided = session.scalar(select(func.count(Decision.id)).where(Decision.user_id == u.id)) or 0
        out.append({"id": u.id, "username": u.username, "active": u.is_active, "created_at": u.created_at,
                    "live_tokens": len(tokens), "decisions": decided})
    return out


def remove_user(session: Session, username: str) -> dict:
    """Remove an account: its sessions and tokens stop working at once. A user with decisions or
    measurements is kept, deactivated (the audit log names who decided); any other is deleted."""
    user = _existing_user(session, username)
    revoke_sessions(session, user)
    now = utcnow()
    revoked = 0
    for t in session.scalars(select(ApiToken).where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))):
        t.revoked_at, revoked = now, revoked + 1
    referenced = (session.scalar(select(func.count(Decision.id)).where(Decision.user_id == user.id)) or 0) + (
        session.scalar(select(func.count(Measurement.id)).where(Measurement.user_id == user.id)) or 0)
    if referenced:
        user.is_active = False
        session.flush()
        return {"username": user.username, "removed": "deactivated", "tokens_revoked": revoked,
                "reason": "kept (deactivated) because the audit log names it"}
    session.flush()
    session.delete(user)
    session.flush()
    return {"username": username, "removed": "deleted", "tokens_revoked": revoked, "reason": "no decisions or measurements"}
