"""`GET /api/recipes/{recipe_id}/quotable` and `GET /api/quotable`: the number a reader may quote.

The single-recipe route is the hot path: it serves the JSON text the audit cached in
``recipes.quotable`` straight from one indexed row, without an ORM session or a re-serialise.
"""

from __future__ import annotations

import asyncio
import re
import threading
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy.orm import Session

from app.api.convention import ok, page
from app.api.schemas import ERRORS, QuotableAnswer, QuotableList
from app.deps import get_session
from app.audit.quotable import MAX_LIST, get_quotable, list_quotable, quotable_raw, quotable_raw_many
from app.watch.changes import QuotableMarks

router = APIRouter(tags=["quotable"])
_PATH = re.compile(r"^/api/recipes/([A-Za-z0-9_.-]{1,40})/quotable$")
READERS = 2  # threads (each with its connection) per worker for the fast path


def envelope(raw: str) -> bytes:
    """The stored answer inside the one envelope, by splicing text (no parse): ``{"ok": true, ...}``."""
    text = raw.lstrip()
    if text.startswith("{"):
        rest = text[1:].lstrip()
        return ('{"ok": true' + ("" if rest.startswith("}") else ", ") + rest).encode("utf-8")
    return text.encode("utf-8")


class QuotableFastPath:
    """ASGI middleware answering a GET for a cached quotable answer before FastAPI's routing and
    dependency machinery; anything else (and any recipe not yet cached) falls through to the router.

    Reads never run on the event loop: requests waiting at the same moment are answered by one query
    (``WHERE recipe_id IN (...)``) on a worker thread of this process, which keeps its own autocommit
    connection; while that batch runs, the next requests gather for the following one."""

    def __init__(self, app, state):
        self.app = app
        self.state = state
        self._pool: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._pending: dict[str, list[asyncio.Future]] = {}
        self._drainer: asyncio.Task | None = None

    def _read_many(self, recipe_ids: list[str]) -> dict[str, str]:
        for attempt in (1, 2):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self.state.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
                self._local.conn = conn
            try:
                return quotable_raw_many(conn, recipe_ids)
            except Exception:
                self._local.conn = None
                try:
                    conn.invalidate()
                except Exception:
                    pass
                if attempt == 2:
                    raise
        return {}

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, {}
                try:
                    found = await loop.run_in_executor(self._pool, self._read_many, list(batch))
                except Exception as exc:
                    for waiting in batch.values():
                        for fut in waiting:
                            if not fut.done():
                                fut.set_exception(exc)
                    continue
                for rid, waiting in batch.items():
                    for fut in waiting:
                        if not fut.done():
                            fut.set_result(found.get(rid))
        finally:
            self._drainer = None

    async def read(self, recipe_id: str) -> str | None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(READERS, thread_name_prefix="quotable-read")
        fut = asyncio.get_running_loop().create_future()
        self._pending.setdefault(recipe_id, []).append(fut)
        if self._drainer is None:
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return await fut

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            m = _PATH.match(scope["path"])
            if m:
                raw = await self.read(m.group(1))
                if raw is not None:
                    _served(self.state, m.group(1))
                    body = envelope(raw)
                    await send({"type": "http.response.start", "status": 200, "headers": [
                        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
        await self.app(scope, receive, send)


def _served(state, recipe_id: str) -> None:
    """A quotable answer was served: its recipe counts as cited for change events (issue 17). Only a set
    is touched here; a background thread writes the marks."""
    marks = getattr(state, "quotable_marks", None)
    if marks is None:

        marks = state.quotable_marks = QuotableMarks(state.db)
    marks.note(recipe_id)


def install(app) -> None:
    """Put the fast path in front of the application (called by ``create_app``)."""
    app.add_middleware(QuotableFastPath, state=app.state)


def _cached(request: Request, recipe_id: str) -> str | None:
    with request.app.state.db.engine.connect() as conn:
        return quotable_raw(conn, recipe_id)


def _slow(request: Request, recipe_id: str) -> dict:
    db = request.app.state.db
    with db.Session.begin() as session:  # audits a recipe not yet audited, or raises NotFound
        return ok(get_quotable(session, request.app.state.settings, recipe_id))


@router.get("/api/recipes/{recipe_id}/quotable", response_model=QuotableAnswer, responses=ERRORS,
            summary="The number a reader may quote for a recipe, what it describes, and why")
async def recipe_quotable(recipe_id: str, request: Request):
    raw = await run_in_threadpool(_cached, request, recipe_id)
    if raw is not None:
        _served(request.app.state, recipe_id)
        return Response(content=envelope(raw), media_type="application/json")
    answer = await run_in_threadpool(_slow, request, recipe_id)
    _served(request.app.state, recipe_id)
    return answer


@router.get("/api/quotable", response_model=QuotableList, responses=ERRORS,
            summary="Quotable answers of the recipes matching a model, hardware, engine or words")
def quotable_list(request: Request,
                  model: str | None = Query(None, description="Model name, whole, any case."),
                  hardware: str | None = Query(None, description="Hardware name, whole, any case."),
                  engine: str | None = Query(None, description="Engine name, whole, any case."),
                  q: str | None = Query(None, description="Words that all occur in model, hardware, GPU count "
                                                          "or engine (parts of names, any case)."),
                  limit: int = Query(50, ge=1, le=MAX_LIST), offset: int = Query(0, ge=0),
                  session: Session = Depends(get_session)) -> dict:
    rows, total = list_quotable(session, request.app.state.settings, model=model, hardware=hardware,
                                engine=engine, q=q, limit=limit, offset=offset)
    for row in rows:
        if row.get("recipe_id"):
            _served(request.app.state, row["recipe_id"])
    return page(request, "recipes", rows, total=total, limit=limit, offset=offset)
