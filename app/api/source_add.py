"""`POST /api/sources`: follow a new source (authenticated, `admin` scope), e.g. a browser source."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.api.convention import ok
from typing import Literal

from app.api.schemas import AUTH_ERRORS, Open, SourceBody
from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.claims.sources import add_source, source_json

router = APIRouter(tags=["sources"])


class SourceIn(BaseModel):
    name: str
    url: str
    kind: str | None = Field(None, description="json, html, markdown or text; left out: guessed at the first crawl.")
    browser: bool = Field(False, description="Crawl with Chromium: the rendered DOM is parsed and cited (issue 16).")


class SourceAnswer(Open):
    ok: Literal[True]
    source: SourceBody


@router.post("/api/sources", status_code=201, response_model=SourceAnswer, responses=AUTH_ERRORS,
             summary="Follow a new source (authenticated, admin scope); nothing is fetched until a crawl")
def create_source(body: SourceIn, request: Request, user: User = Depends(auth.require_writer),
                  session: Session = Depends(get_session)) -> dict:
    auth.require_scope(request, "admin")
    src = add_source(session, body.name, body.url, body.kind, browser=body.browser, settings=request.app.state.settings)
    return ok({"source": source_json(session, src)})
