"""`GET /api/recipes/{recipe_id}/quotable` and `GET /api/quotable`: the number a reader may quote.

The single-recipe route is the hot path: it serves the JSON text the audit cached in
``recipes.quotable`` straight from one indexed row, without an ORM session or a re-serialise.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy.orm import Session

from app.main import get_session
from app.services.quotable import get_quotable, list_quotable, quotable_raw

router = APIRouter()
_PATH = re.compile(r"^/api/recipes/([A-Za-z0-9_.-]{1,40})/quotable$")


class QuotableFastPath:
    """ASGI middleware answering a GET for a cached quotable answer before FastAPI's routing and
    dependency machinery; anything else (and any recipe not yet cached) falls through to the router."""

    def __init__(self, app, state):
        self.app = app
        self.state = state
        self._conn = None  # one autocommit connection per worker, used only from the event loop

    def _read(self, recipe_id: str) -> str | None:
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = self.state.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            try:
                return quotable_raw(self._conn, recipe_id)
            except Exception:
                conn, self._conn = self._conn, None
                try:
                    conn.invalidate()
                except Exception:
                    pass
                if attempt == 2:
                    raise
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            m = _PATH.match(scope["path"])
            if m:
                raw = self._read(m.group(1))
                if raw is not None:
                    body = raw.encode("utf-8")
                    await send({"type": "http.response.start", "status": 200, "headers": [
                        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
        await self.app(scope, receive, send)


def install(app) -> None:
    """Put the fast path in front of the application (called by ``create_app``)."""
    app.add_middleware(QuotableFastPath, state=app.state)


def _slow(request: Request, recipe_id: str) -> dict:
    db = request.app.state.db
    with db.Session.begin() as session:  # audits a recipe not yet audited, or raises NotFound
        return get_quotable(session, request.app.state.settings, recipe_id)


@router.get("/api/recipes/{recipe_id}/quotable")
async def recipe_quotable(recipe_id: str, request: Request):
    with request.app.state.db.engine.connect() as conn:
        raw = quotable_raw(conn, recipe_id)
    if raw is not None:
        return Response(content=raw, media_type="application/json")
    return await run_in_threadpool(_slow, request, recipe_id)


@router.get("/api/quotable")
def quotable_list(request: Request, model: str | None = Query(None), hardware: str | None = Query(None),
                  engine: str | None = Query(None), limit: int = Query(200),
                  session: Session = Depends(get_session)) -> dict:
    rows = list_quotable(session, request.app.state.settings, model=model, hardware=hardware, engine=engine,
                         limit=limit)
    return {"ok": True, "count": len(rows), "recipes": rows}
