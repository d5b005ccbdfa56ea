"""API tokens: ``cvt_`` + 43 random characters, shown once; only their sha256 (hex) is stored. Each has
scopes (``read``, ``decide``, ``measure``, ``admin``) and an expiry; programs send ``Authorization: Bearer``.

A token minted with another token (``POST /api/tokens`` with an admin token) records it as its parent:
its scopes are a subset of the parent's, its expiry is capped at the parent's, revoking the parent
revokes it, and it signs in nobody once any ancestor is revoked or expired. A token cannot renew itself."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta, timezone

from fastapi import Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.accounts.users import _existing_user
from app.errors import BadRequest, Conflict, Forbidden, NotFound
from app.models import ApiToken, User, utcnow

TOKEN_PREFIX = "cvt_"


# -- API tokens ------------------------------------------------------------------------------------
def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


SCOPES = ("read", "decide", "measure", "correct", "admin")
DEFAULT_SCOPES = ("read", "decide", "measure")
SESSION_SCOPES = DEFAULT_SCOPES + ("correct",)   # a signed-in reviewer may also correct entries (issue 27)
DEFAULT_TOKEN_DAYS = 90
MAX_TOKEN_DAYS = 366


def parse_scopes(scopes) -> tuple[str, ...]:
    items = [x.strip().lower() for x in (scopes.split(",") if isinstance(scopes, str) else (scopes or [])) if x.strip()]
    bad = [x for x in items if x not in SCOPES]
    if bad:
        raise BadRequest(f"Unknown scope(s) {', '.join(bad)}: use {', '.join(SCOPES)} (comma-separated).")
    return tuple(x for x in SCOPES if x in items) or DEFAULT_SCOPES


def aware(d: datetime | None) -> datetime | None:
    return d if d is None or d.tzinfo else d.replace(tzinfo=timezone.utc)


def create_token(session: Session, username: str, name: str, scopes=None, days: int | None = None,
                 parent: ApiToken | None = None) -> str:
    """A new API token for ``username`` with these scopes, expiring in ``days`` (default 90, at most 366);
    the plaintext is returned once and never stored. With ``parent`` (the token that asks for it) the
    new token is the parent's child: scopes within the parent's, expiry at most the parent's."""
    user = _existing_user(session, username)
    wanted = parse_scopes(scopes)
    if parent is not None:
        if token_state(parent) != "live":
            raise Forbidden("The token asking for a new token is no longer live.")
        if parent.user_id != user.id:
            raise Forbidden("A token mints tokens only for its own user.")
        wider = set(wanted) - set(parent.scopes.split(","))
        if wider:
            raise Forbidden(f"A token cannot mint a token of wider scope ({', '.join(sorted(wider))}); "
                            f"this token has {parent.scopes.replace(',', ', ')}.")
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
    expires = utcnow() + timedelta(days=days)
    if parent is not None and parent.expires_at is not None:
        expires = min(expires, aware(parent.expires_at))  # never outlives the token that made it
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(user_id=user.id, name=name.strip()[:100], token_hash=_token_hash(plaintext),
                         scopes=",".join(wanted), expires_at=expires,
                         parent_id=parent.id if parent is not None else None))
    session.flush()
    return plaintext


def token_row(session: Session, token: str) -> ApiToken | None:
    """The stored row of a plaintext token (live or not), or None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    return session.scalar(select(ApiToken).where(ApiToken.token_hash == _token_hash(token)))


def _descendants(session: Session, roots: list[ApiToken]) -> list[ApiToken]:
    out, frontier = [], [t.id for t in roots]
    seen = set(frontier)
    while frontier:
        kids = session.scalars(select(ApiToken).where(ApiToken.parent_id.in_(frontier))).all()
        kids = [k for k in kids if k.id not in seen]
        seen.update(k.id for k in kids)
        out.extend(kids)
        frontier = [k.id for k in kids]
    return out


def _lineage_live(session: Session, row: ApiToken) -> bool:
    """True when the token and every token above it are live (a revoked or expired ancestor ends it)."""
    seen = set()
    while row is not None:
        if row.id in seen or token_state(row) != "live":
            return False
        seen.add(row.id)
        row = session.get(ApiToken, row.parent_id) if row.parent_id is not None else None
    return True


def list_tokens(session: Session, username: str | None = None) -> list[tuple[ApiToken, str]]:
    q = select(ApiToken, User.username).join(User, User.id == ApiToken.user_id).order_by(User.username, ApiToken.id)
    if username:
        q = q.where(User.username == _existing_user(session, username).username)
    return [(t, u) for t, u in session.execute(q)]


def token_state(t: ApiToken) -> str:
    if t.revoked_at is not None:
        return "revoked"
    exp = aware(t.expires_at)
    if exp is not None and exp <= utcnow():
        return "expired"
    return "live"


def require_scope(request: Request, scope: str) -> None:
    """A bearer token must carry ``scope`` (a signed-in reviewer's session may read, decide, measure and
    correct)."""
    method = getattr(request.state, "auth_method", None)
    granted = getattr(request.state, "token_scopes", ()) if method == "token" else SESSION_SCOPES
    if scope not in granted:
        raise Forbidden(f"This needs the {scope!r} scope; the token has {', '.join(granted) or 'none'}. Create one "
                        f"with `caveat token create USER --name NAME --scope {scope}`.")


def revoke_token(session: Session, username: str, name: str) -> int:
    """Revoke ``username``'s live tokens named ``name`` and every token minted from them (at any depth);
    returns how many were revoked in all."""
    user = _existing_user(session, username)
    tokens = session.scalars(select(ApiToken).where(
        ApiToken.user_id == user.id, ApiToken.name == name, ApiToken.revoked_at.is_(None))).all()
    if not tokens:
        raise NotFound(f"User {username!r} has no live token named {name!r}.")
    now = utcnow()
    revoked = 0
    for t in [*tokens, *_descendants(session, list(tokens))]:
        if t.revoked_at is None:
            t.revoked_at, revoked = now, revoked + 1
    session.flush()
    return revoked


def user_for_token(session: Session, token: str) -> User | None:
    row = token_row(session, token)
    if row is None or not _lineage_live(session, row):
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
