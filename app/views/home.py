"""``/``: the reviewer starts at the queue."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

router = APIRouter(include_in_schema=False)


@router.get("/")
def home(request: Request):
    target = "/queue" + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(target, status_code=302)
