"""``/favicon.ico``: the icon browsers ask for on every page (16 and 32 px PNGs in one ICO file).

Served here rather than only under ``/static`` because browsers request ``/favicon.ico`` at the root
whatever the page links; without it every first visit logs a 404.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

router = APIRouter(include_in_schema=False)
ICON = (Path(__file__).resolve().parents[2] / "web" / "static" / "favicon.ico").read_bytes()


@router.get("/favicon.ico")
def favicon() -> Response:
    return Response(ICON, media_type="image/vnd.microsoft.icon", headers={"Cache-Control": "public, max-age=86400"})
