"""The tamper-evident log's public face: ``/log/sth.json`` (the latest signed tree head, a stable URL),
``/log/sth/{size}.json`` (each one signed so far), ``/log/inclusion/{id}.json`` (a capture's inclusion
proof) and ``/log/consistency.json?first=&second=`` (RFC 9162 consistency proof)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from app.errors import NotFound
from app.deps import get_session
from app.replay import citations
from app.storage import tlog

router = APIRouter(include_in_schema=False)


@router.get("/log/sth.json")
def latest(request: Request):
    sth = tlog.latest_tree_head(request.app.state.settings)
    if sth is None:
        raise NotFound("The tamper-evident log is empty: nothing has been archived yet (caveat capture URL).")
    return JSONResponse(sth, headers={"Cache-Control": "no-cache"})


@router.get("/log/sth/{size}.json")
def by_size(size: int, request: Request):
    sth = tlog.tree_head(request.app.state.settings, size)
    if sth is None:
        raise NotFound(f"No tree head of size {size} was signed; /log/sth.json is the latest.")
    return JSONResponse(sth, headers={"Cache-Control": "public, max-age=31536000, immutable"})


@router.get("/log/inclusion/{typed}.json")
def inclusion(typed: str, request: Request, session: Session = Depends(get_session)):
    snap = citations.lookup(session, request.app.state.settings, typed)   # withheld: the tombstone
    proof = tlog.inclusion(request.app.state.settings, snap.record_id)
    if proof is None:
        raise NotFound(f"Record {snap.record_id} ({snap.citation_id}) is not in the tamper-evident log (it was "
                       "archived before the log existed, or imported).")
    return JSONResponse({"id": snap.citation_id, "record_id": snap.record_id, **proof})


@router.get("/log/consistency.json")
def consistency(request: Request, first: int, second: int | None = None):
    return JSONResponse(tlog.consistency(request.app.state.settings, first, second))
