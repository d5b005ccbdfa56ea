"""`POST /api/tokens`: a signed-in user creates an API token for a program (shown once)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.main import get_session
from app.models import User
from app.services import auth

router = APIRouter()


class TokenBody(BaseModel):
    name: str


@router.post("/api/tokens", status_code=201)
def create_token(body: TokenBody, user: User = Depends(auth.require_writer),
                 session: Session = Depends(get_session)) -> dict:
    token = auth.create_token(session, user.username, body.name)
    return {"ok": True, "name": body.name, "token": token, "note": "Shown once; only its hash is stored."}
