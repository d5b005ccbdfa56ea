"""`POST /api/tokens`: a signed-in user creates an API token for a program (shown once)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.api.convention import ok
from app.api.schemas import AUTH_ERRORS, TokenAnswer
from app.errors import Forbidden
from app.deps import get_session
from app.models import User
from app.accounts import auth

router = APIRouter(tags=["tokens"])


class TokenBody(BaseModel):
    name: str
    scopes: list[str] | None = None  # read, decide, measure, admin; default read, decide, measure
    days: int | None = None  # 1..366, default 90


@router.post("/api/tokens", status_code=201, response_model=TokenAnswer, responses=AUTH_ERRORS,
             summary="Create an API token for a program (shown once; authenticated)")
def create_token(body: TokenBody, request: Request, user: User = Depends(auth.require_writer),
                 session: Session = Depends(get_session)) -> dict:
    """A signed-in reviewer mints tokens of the reviewer scopes; a token mints only with the admin scope,
    and never a token of wider scope than its own."""
    scopes = auth.parse_scopes(body.scopes)
    if auth.is_cookie_auth(request) and "admin" in scopes:
        raise Forbidden("An admin token is made on the server: `caveat token create USER --name N --scope admin`.")
    if getattr(request.state, "auth_method", None) == "token":
        auth.require_scope(request, "admin")
        wider = set(scopes) - set(request.state.token_scopes)
        if wider:
            raise Forbidden(f"A token cannot mint a token of wider scope ({', '.join(sorted(wider))}).")
    token = auth.create_token(session, user.username, body.name, scopes, body.days)
    return ok({"name": body.name, "token": token, "scopes": list(scopes),
               "note": "Shown once; only its hash is stored."})
