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

import base64
import hashlib
import hmac
import re
import secrets
from datetime import timedelta, timezone

import time

from argon2 import PasswordHasher
from argon2 import Type as Argon2Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from fastapi import Depends, Request
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized, UnsupportedMediaType
from app.main import get_session
from app.models import ApiToken, LoginSession, User, utcnow

SESSION_COOKIE = "caveat_session"
SESSION_MAX_AGE = 14 * 24 * 3600
CSRF_MAX_AGE = 24 * 3600
TOKEN_PREFIX = "cvt_"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MIN_PASSWORD = 8
USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
_KEYS: dict[int, str] = {}


# -- passwords -------------------------------------------------------------------------------------
def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024, dklen=32)


# Argon2id at OWASP's minimum (m = 19 MiB, t = 2, p = 1). Hashes from before (scrypt) still verify and
# are replaced by an Argon2id hash at the user's next sign-in.
_ARGON2 = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1, hash_len=32, salt_len=16,
                         type=Argon2Type.ID)


def hash_password(password: str) -> str:
    return _ARGON2.hash(password)


def _legacy_scrypt_hash(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    if stored.startswith("$argon2"):
        try:
            return _ARGON2.verify(stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def needs_rehash(stored: str) -> bool:
    if not stored.startswith("$argon2"):
        return True
    try:
        return _ARGON2.check_needs_rehash(stored)
    except InvalidHashError:
        return True


_DUMMY_HASH = hash_password(secrets.token_hex(8))


# -- users -----------------------------------------------------------------------------------------
def get_user(session: Session, username: str) -> User | None:
    return session.scalar(select(User).where(User.username == username))


def create_user(session: Session, username: str, password: str) -> User:
    if not USERNAME_RE.match(username or ""):
        raise BadRequest(
            f"Username {username!r} is not allowed: use 1-100 letters, digits, '_', '.', '@' or '-', "
            "starting with a letter or digit."
        )
    if len(password or "") < MIN_PASSWORD:
        raise BadRequest(f"The password is too short: use at least {MIN_PASSWORD} characters.")
    if get_user(session, username) is not None:
        raise Conflict(f"User {username!r} already exists; pick another name or sign in as that user.")
    user = User(username=username, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    return user


def _existing_user(session: Session, username: str) -> User:
    user = get_user(session, username)
    if user is None:
        raise NotFound(f"No user {username!r}. Create one with `caveat user add {username}`.")
    return user


def set_password(session: Session, username: str, password: str) -> User:
    user = _existing_user(session, username)
    if len(password or "") < MIN_PASSWORD:
        raise BadRequest(f"The password is too short: use at least {MIN_PASSWORD} characters.")
    user.password_hash = hash_password(password)
    revoke_sessions(session, user)  # a new password ends every session
    session.flush()
    return user


def authenticate(session: Session, username: str, password: str) -> User | None:
    """The active user with this name and password, or None (same work either way)."""
    user = get_user(session, username or "")
    if user is None:
        verify_password(password or "", _DUMMY_HASH)
        return None
    if not verify_password(password or "", user.password_hash) or not user.is_active:
        return None
    if needs_rehash(user.password_hash):  # an scrypt hash from before: Argon2id from now on
        user.password_hash = hash_password(password)
        session.flush()
    return user


# -- API tokens ------------------------------------------------------------------------------------
def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


SCOPES = ("read", "decide", "measure", "admin")
DEFAULT_SCOPES = ("read", "decide", "measure")
DEFAULT_TOKEN_DAYS = 90
MAX_TOKEN_DAYS = 366


def parse_scopes(scopes) -> tuple[str, ...]:
    items = [x.strip().lower() for x in (scopes.split(",") if isinstance(scopes, str) else (scopes or [])) if x.strip()]
    bad = [x for x in items if x not in SCOPES]
    if bad:
        raise BadRequest(f"Unknown scope(s) {', '.join(bad)}: use {', '.join(SCOPES)} (comma-separated).")
    return tuple(x for x in SCOPES if x in items) or DEFAULT_SCOPES


def create_token(session: Session, username: str, name: str, scopes=None, days: int | None = None) -> str:
    """A new API token for ``username`` with these scopes, expiring in ``days`` (default 90, at most 366);
    the plaintext is returned once and never stored."""
    user = _existing_user(session, username)
    if not (name or "").strip():
        raise BadRequest("A token needs a name saying what it is for, e.g. --name ci-importer.")
    for other in session.scalars(select(ApiToken).where(ApiToken.user_id == user.id,
                                                          ApiToken.name == name.strip()[:100])):
        if token_state(other) == "live":
            raise Conflict(f"{username} already has a live token named {name.strip()!r}; pick another name, or "
                           f"revoke it first: `caveat token revoke {username} --name {name.strip()}`.")
    days = DEFAULT_TOKEN_DAYS if days is None else int(days)
    if not 1 <= days <= MAX_TOKEN_DAYS:
        raise BadRequest(f"A token lives 1 to {MAX_TOKEN_DAYS} days; {days} was asked for.")
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(user_id=user.id, name=name.strip()[:100], token_hash=_token_hash(plaintext),
                         scopes=",".join(parse_scopes(scopes)), expires_at=utcnow() + timedelta(days=days)))
    session.flush()
    return plaintext


def list_tokens(session: Session, username: str | None = None) -> list[tuple[ApiToken, str]]:
    q = select(ApiToken, User.username).join(User, User.id == ApiToken.user_id).order_by(User.username, ApiToken.id)
    if username:
        q = q.where(User.username == _existing_user(session, username).username)
    return [(t, u) for t, u in session.execute(q)]


def token_state(t: ApiToken) -> str:
    if t.revoked_at is not None:
        return "revoked"
    exp = t.expires_at
    if exp is not None and (exp if exp.tzinfo else exp.replace(tzinfo=timezone.utc)) <= utcnow():
        return "expired"
    return "live"


def require_scope(request: Request, scope: str) -> None:
    """A bearer token must carry ``scope`` (a signed-in reviewer's session may read, decide and measure)."""
    method = getattr(request.state, "auth_method", None)
    granted = getattr(request.state, "token_scopes", ()) if method == "token" else DEFAULT_SCOPES
    if scope not in granted:
        raise Forbidden(f"This needs the {scope!r} scope; the token has {', '.join(granted) or 'none'}. Create one "
                        f"with `caveat token create USER --name NAME --scope {scope}`.")


def revoke_token(session: Session, username: str, name: str) -> int:
    user = _existing_user(session, username)
    tokens = session.scalars(select(ApiToken).where(
        ApiToken.user_id == user.id, ApiToken.name == name, ApiToken.revoked_at.is_(None))).all()
    if not tokens:
        raise NotFound(f"User {username!r} has no live token named {name!r}.")
    for t in tokens:
        t.revoked_at = utcnow()
    session.flush()
    return len(tokens)


def user_for_token(session: Session, token: str) -> User | None:
    if not token.startswith(TOKEN_PREFIX):
        return None
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == _token_hash(token)))
    if row is None or token_state(row) != "live":
        return None
    user = session.get(User, row.user_id)
    if user is None or not user.is_active:
        return None
    now = utcnow()
    last = row.last_used_at
    if last is not None and last.tzinfo is None:
        last = last.replace(tzinfo=timezone.utc)
    if last is None or now - last > timedelta(minutes=1):
        row.last_used_at = now
    return user


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


def client_of(request: Request) -> str:
    """Who signed in, for `caveat user sessions`: the client address and user agent."""
    host = request.client.host if request.client else "?"
    return f"{host} {request.headers.get('user-agent', '')}"[:200]


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


def login_allowed(settings: Settings, username: str, client: str) -> int:
    """0 when a sign-in attempt may be checked now, else the seconds to wait (per account and per client
    address, counting failed attempts only)."""
    limiter, per_account, per_client = _limiter(settings)
    waits = []
    for item, ident in ((per_account, f"account:{username.lower()}"), (per_client, f"client:{client}")):
        if not limiter.test(item, "caveat-login", ident):
            reset, _ = limiter.get_window_stats(item, "caveat-login", ident)
            waits.append(max(1, int(reset - time.time()) + 1))
    return max(waits, default=0)


def login_failed(settings: Settings, username: str, client: str) -> None:
    limiter, per_account, per_client = _limiter(settings)
    limiter.hit(per_account, "caveat-login", f"account:{username.lower()}")
    limiter.hit(per_client, "caveat-login", f"client:{client}")


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
            row = session.scalar(select(ApiToken.scopes).where(ApiToken.token_hash == _token_hash(token)))
            request.state.token_scopes = tuple((row or "").split(","))
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


def list_users(session: Session) -> list[dict]:
    """Every account with its state and how many live tokens and decisions it has."""
    from app.models import Decision

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
    from app.models import Decision, Measurement

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
