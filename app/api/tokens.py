"""`POST /api/tokens`: a signed-in user creates an API token for a program (shown once)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.api.convention import ok
from app.api.schemas import AUTH_ERRORS, TokenAnswer
from app.errors import Forbidden
from app.deps import get_session
from app.models import ApiToken, User
from app.accounts import auth
from app.accounts.tokens import aware

router = APIRouter(tags=["tokens"])


class TokenBody(BaseModel):
    name: str
    scopes: list[str] | None = None  # read, decide, measure, admin; default read, decide, measure
    days: int | None = None  # 1..366, default 90


@router.post("/api/tokens", status_code=201, response_model=TokenAnswer, responses=AUTH_ERRORS,
             summary="Create an API token for a program (shown once; authenticated)")
def create_token(body: TokenBody, request: Request, user: User = Depends(auth.require_writer),
                 session: Session = Depends(get_session)) -> dict:
    """A signed-in reviewer mints tokens of the reviewer scopes (no parent); a token mints only with the
    admin scope, and its child never has a wider scope, a later expiry, or outlives its revocation."""
    scopes = auth.parse_scopes(body.scopes)
    if auth.is_cookie_auth(request) and "admin" in scopes:
        raise Forbidden("An admin token is made on the server: `caveat token create USER --name N --scope admin`.")
    parent = None
    if getattr(request.state, "auth_method", None) == "token":
        auth.require_scope(request, "admin")
        parent = session.get(ApiToken, request.state.token_id)
        if parent is None:  # removed while this request ran: a token-made token always has its parent
            raise Forbidden("The token asking for a new token is no longer live.")
    token = auth.create_token(session, user.username, body.name, scopes, body.days, parent=parent)
    row = auth.token_row(session, token)
    capped = parent is not None and aware(row.expires_at) == aware(parent.expires_at)
    return ok({"name": body.name, "token": token, "scopes": list(scopes), "expires_at": row.expires_at,
               "parent": parent.name if parent is not None else None,
               "note": "Shown once; only its hash is stored." + (
                   " Its expiry is capped at the expiry of the token that minted it." if capped else "")})
