"""The OpenAPI document (``/openapi.json``, also ``/api/openapi.json``) and its docs page (``/docs``).

FastAPI's generated document is corrected to say what the server really does: invalid input is a 400
in the one error shape (never FastAPI's 422 ``detail`` list), public reads may answer 304, and every
operation lists its error responses. The docs page runs Swagger UI from ``web/static/vendor`` (no CDN).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from app.api.schemas import ErrorBody

VENDOR = "/static/vendor/swagger-ui"
DOCS_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Caveat API</title>
<link rel="stylesheet" href="{VENDOR}/swagger-ui.css">
</head>
<body>
<p style="margin:1em 2em;font-family:sans-serif">Caveat's JSON API. Conventions: <code>docs/api.md</code>.
The document itself: <a href="/openapi.json">/openapi.json</a>.</p>
<div id="swagger-ui"></div>
<script src="{VENDOR}/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body>
</html>
"""
ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}


def _error(description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": ERROR_REF}}}


def document(app: FastAPI) -> dict:
    doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("ErrorBody", ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}"))
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            responses.setdefault("400", _error("Invalid parameter, path or body; the message says how to fix it."))
            if "{" in path:
                responses.setdefault("404", _error("No such object."))
            if method == "get":
                responses.setdefault("304", {"description": "Not modified: the If-None-Match tag is current."})
    return doc


def install(app: FastAPI) -> None:
    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = document(app)
        return app.openapi_schema

    app.openapi = openapi

    @app.get("/api/openapi.json", include_in_schema=False)
    def openapi_alias():
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs_page():
        return HTMLResponse(DOCS_PAGE)

    @app.get("/api/docs", include_in_schema=False)
    def old_docs():
        return RedirectResponse("/docs", status_code=308)
