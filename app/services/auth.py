"""Accounts, API tokens, signed session cookies and CSRF; the FastAPI dependencies that use them.

- Passwords: ``hashlib.scrypt`` with a random 16-byte salt, stored as
  ``scrypt$<n>$<r>$<p>$<salt b64>$<hash b64>``; checked with a constant-time compare.
- API tokens: ``cvt_`` + 43 random characters, shown once; only their sha256 (hex) is stored.
  Programs send ``Authorization: Bearer <token>``.
- Session cookie ``caveat_session``: HttpOnly, SameSite=Lax, path ``/``, signed (itsdangerous) with
  ``settings.get_secret_key()``. It holds the user id, a random nonce and a fingerprint of the
  password hash, so changing a password ends every session.
- CSRF: a signed token bound to the session's nonce (anonymous visitors get one bound to "anon").
  Only cookie-authenticated form posts need it; bearer-token requests carry no ambient credentials.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from datetime import timedelta, timezone

from fastapi import Depends, Request
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized, UnsupportedMediaType
from app.main import get_session
from app.models import ApiToken, User, utcnow

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


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


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
    return user


# -- API tokens ------------------------------------------------------------------------------------
def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(session: Session, username: str, name: str) -> str:
    """A new API token for ``username``; the plaintext is returned once and never stored."""
    user = _existing_user(session, username)
    if not (name or "").strip():
        raise BadRequest("A token needs a name saying what it is for, e.g. --name ci-importer.")
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(user_id=user.id, name=name.strip()[:100], token_hash=_token_hash(plaintext)))
    session.flush()
    return plaintext


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
    if row is None or row.revoked_at is not None:
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


def _pw_fingerprint(user: User) -> str:
    return hashlib.sha256(user.password_hash.encode("utf-8")).hexdigest()[:16]


def session_cookie_value(settings: Settings, user: User) -> str:
    return _serializer(settings, "session").dumps(
        {"u": user.id, "n": secrets.token_urlsafe(16), "p": _pw_fingerprint(user)})


def _read_session(request: Request) -> dict | None:
    raw = request.cookies.get(SESSION_COOKIE)
    if not raw:
        return None
    try:
        data = _serializer(request.app.state.settings, "session").loads(raw, max_age=SESSION_MAX_AGE)
    except (BadSignature, SignatureExpired):
        return None
    return data if isinstance(data, dict) and "u" in data else None


def login_response(response, settings: Settings, user: User):
    """Set the signed session cookie on ``response`` (after a successful ``authenticate``)."""
    response.set_cookie(
        SESSION_COOKIE, session_cookie_value(settings, user), max_age=SESSION_MAX_AGE,
        path="/", httponly=True, samesite="lax", secure=settings.base_url.startswith("https://"),
    )
    return response


def logout_response(response):
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response


# -- CSRF ------------------------------------------------------------------------------------------
def _csrf_binding(request: Request) -> str:
    data = _read_session(request)
    return str(data.get("n")) if data else "anon"


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
        user = user_for_token(session, header[7:].strip())
        if user is not None:
            request.state.auth_method = "token"
        return user
    data = _read_session(request)
    if data is None:
        return None
    user = session.get(User, data["u"])
    if user is None or not user.is_active or data.get("p") != _pw_fingerprint(user):
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
