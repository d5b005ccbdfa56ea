"""The ASGI application: ``create_app(settings)`` wires routers, the error handler and templates."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import __version__, routes
from app.api.convention import PublicReads
from app.api.openapi import install as install_openapi
from app.api.quotable import install as install_quotable_fast_path
from app.config import Settings
from app.db import Database
from app.deps import get_session  # noqa: F401  (re-exported for old imports)
from app.errors import CaveatError, Withheld
from app.replay.citations import RequestOrigin
from app.replay.wayback import ReplayOriginGuard
from app.views.rendering import accepts_json
from app.security import BoundedIntegers, SecurityHeaders
from app.views.rendering import weblink
from archive.surt import InvalidURL

WEB_DIR = Path(__file__).resolve().parent.parent / "web"


MACHINE_PREFIXES = ("/api/", "/timemap/")  # machine endpoints: errors are JSON whatever the Accept header


def wants_json(request: Request) -> bool:
    path = request.url.path
    if path.startswith(MACHINE_PREFIXES) or path.endswith(".json"):
        return True
    return accepts_json(request)


def error_response(request: Request, status: int, message: str, detail: dict | None = None):
    if wants_json(request):
        body = {"ok": False, "error": message, "status": status}
        if detail:
            body["detail"] = detail
        return JSONResponse(body, status_code=status)
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(
        request, "error.html", {"status": status, "message": message, "detail": detail or {}},
        status_code=status,
    )


def withheld_response(request: Request, data: dict):
    """A withdrawn or restricted capture, asked for through any route: its tombstone, as ``/c/{id}`` answers
    (JSON on machine routes, the tombstone page otherwise); never cached."""
    headers = {"Cache-Control": "no-store"}
    if wants_json(request):
        return JSONResponse(data, status_code=data["status"], headers=headers)
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(request, "tombstone.html", {"c": data, "user": None,
                                                                  "json_href": f"/c/{data['id']}.json"},
                                      status_code=data["status"], headers=headers)


def create_app(settings: Settings | None = None, *, check_migrated: bool = True) -> FastAPI:
    settings = settings or Settings()
    db = Database(settings)
    if check_migrated:
        db.require_migrated()

    app = FastAPI(title="Caveat", version=__version__, docs_url=None, redoc_url=None, openapi_url="/openapi.json",
                  description="Archived LLM speed claims, their audit and the number a reader may quote. "
                              "Conventions (envelope, paging, errors, caching): docs/api.md.")
    app.state.settings = settings
    app.state.db = db
    templates = Jinja2Templates(directory=str(WEB_DIR / "templates"))
    templates.env.globals["version"] = __version__
    templates.env.filters["weblink"] = weblink  # every template may render an archived URL
    app.state.templates = templates

    @app.exception_handler(CaveatError)
    async def _caveat_error(request: Request, exc: CaveatError):
        return error_response(request, exc.status, exc.message, exc.detail or None)

    @app.exception_handler(Withheld)
    async def _withheld(request: Request, exc: Withheld):
        return withheld_response(request, exc.tombstone)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        msg = exc.detail if isinstance(exc.detail, str) else "error"
        if exc.status_code == 404 and msg == "Not Found":
            msg = f"Nothing at {request.url.path}."
        resp = error_response(request, exc.status_code, msg)
        for k, v in (exc.headers or {}).items():
            resp.headers[k] = v
        return resp

    @app.exception_handler(InvalidURL)
    async def _bad_url(request: Request, exc: InvalidURL):
        return error_response(request, 400, f"{exc} Give a full http(s) address, e.g. https://example.org/page.")

    @app.exception_handler(OverflowError)
    async def _overflow(request: Request, exc: OverflowError):
        return error_response(request, 400, "A number in the request is out of range (ids, offsets and limits are "
                                            f"at most {2**63 - 1:,}).")

    @app.exception_handler(DBAPIError)
    async def _db_error(request: Request, exc: DBAPIError):
        orig = getattr(exc, "orig", None)
        if isinstance(orig, OverflowError) or "out of range" in str(orig):
            return await _overflow(request, OverflowError(str(orig)))
        raise exc

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        parts = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err.get("loc", ()) if x not in ("query", "body", "path"))
            parts.append(f"{loc}: {err.get('msg')}")
        return error_response(request, 400, "Invalid request: " + "; ".join(parts))

    app.mount("/static", StaticFiles(directory=str(WEB_DIR / "static")), name="static")

    routes.include_all(app)
    install_quotable_fast_path(app)  # serves cached quotable answers before routing (bench/quotable.py)
    install_openapi(app)  # typed document with the real error shape, /api/openapi.json, /docs
    app.add_middleware(BoundedIntegers)
    app.add_middleware(RequestOrigin, settings=settings)  # URLs built when served: CAVEAT_BASE_URL or this origin
    app.add_middleware(ReplayOriginGuard)  # CAVEAT_REPLAY_ORIGIN: archived bytes from that origin only
    app.add_middleware(PublicReads)  # CORS, ETag, Cache-Control, 304 and OPTIONS on public reads
    app.add_middleware(SecurityHeaders)  # outermost: every answer, the fast path's too
    return app


def app_from_env() -> FastAPI:
    """Factory for `uvicorn --factory` and multi-worker serving."""
    return create_app(Settings())
