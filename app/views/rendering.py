"""How every reviewer page is answered: one dict from one service call, rendered by a template, or
returned as it is when the path ends in ``.json`` (the page's JSON twin, linked from the HTML with
``<link rel="alternate" type="application/json">``).

Also the template filters the pages share (number formats, same-origin links) and the context every
page gets: the signed-in user and a CSRF token for its forms.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse

from app.accounts import auth
from app.pages.view_models import _num
from app.api.convention import utc_fields


def fmt_num(value, digits: int = 2) -> str:
    """1004.9 -> '1,004.9'; 373.0 -> '373'; None -> '–'."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value != value:
        return "NaN"
    text = f"{value:,.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fmt_ratio(value) -> str:
    return "–" if value is None else f"{value:.2f}×"


def weblink(url: str | None) -> str:
    """``url`` when it may be a link (http or https with a host), else "": a URL read from an archive
    (``javascript:``, ``data:``, ``file:``, ...) is shown as text, never put in an ``href``."""
    if not url or any(c in url for c in "\r\n\t\x00"):
        return ""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return ""
    return url.strip() if parts.scheme.lower() in ("http", "https") and parts.netloc else ""


def make_local(base_url: str):
    """Citation URLs are stored absolute (``settings.base_url`` at audit time); on our own pages link our
    citation and replay paths same-origin, whatever origin they were minted under."""

    def local(url: str | None) -> str:
        if not url:
            return ""
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.path.startswith(("/c/", "/web/")):
            return parts.path + (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment else "")
        if base_url and url.startswith(base_url.rstrip("/") + "/"):
            return url[len(base_url.rstrip("/")):]
        return url

    return local


def _install_filters(request: Request) -> None:
    env = request.app.state.templates.env
    if "tps" in env.filters:
        return
    env.filters["tps"] = fmt_num
    env.filters["ratio"] = fmt_ratio
    env.filters["local"] = make_local(request.app.state.settings.base_url)
    env.filters["weblink"] = weblink
    env.filters["in_words"] = evidence_words


def evidence_words(value) -> str:
    """An evidence value that is a list or a mapping, in words (never raw JSON)."""
    if isinstance(value, dict):
        return ", ".join(f"{str(k).replace('_', ' ')} {evidence_words(v) if isinstance(v, (dict, list, tuple)) else _num(v)}"
                         for k, v in value.items())
    return "; ".join(v if isinstance(v, str) else evidence_words(v) if isinstance(v, (dict, list, tuple)) else _num(v)
                     for v in value)


def split_json(ref: str) -> tuple[str, bool]:
    """``'12.json'`` -> ``('12', True)``; ``'12'`` -> ``('12', False)``."""
    return (ref[:-5], True) if ref.endswith(".json") else (ref, False)


def json_href(request: Request) -> str:
    path = request.url.path
    href = path if path.endswith(".json") else (path.rstrip("/") or "/queue") + ".json"
    return href + (f"?{request.url.query}" if request.url.query else "")


def accepts_json(request: Request) -> bool:
    """Content negotiation, the one rule for pages and errors alike: a client that asks for
    ``application/json`` and not for ``text/html`` gets the JSON twin at the page's own URL."""
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/html" not in accept


def ok_first(data: dict) -> dict:
    """``ok`` as the first key (the convention of every JSON answer)."""
    return {"ok": data["ok"], **data} if isinstance(data, dict) and "ok" in data else data


def render(request: Request, template: str, data: dict, *, as_json: bool, user=None, status: int = 200,
           **extra):
    """The page's HTML, or ``data`` itself as JSON for the twin (the ``.json`` path, or an ``Accept`` that
    asks for JSON and not HTML; either way ``Vary: Accept``)."""
    if not as_json and accepts_json(request):
        as_json = True
    if as_json:  # the machine twin follows the API's convention: ok first, timestamps in UTC

        body = utc_fields({"ok": status < 400, **data}) if isinstance(data, dict) else data
        return JSONResponse(body, status_code=status, headers={"Vary": "Accept"})
    _install_filters(request)
    ctx = {"data": data, "user": user, "csrf": auth.csrf_token(request), "json_href": json_href(request),
           "path": request.url.path, "full_path": _full_path(request)}
    ctx.update(extra)
    return request.app.state.templates.TemplateResponse(request, template, ctx, status_code=status,
                                                        headers={"Vary": "Accept"})


def _full_path(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def safe_next(target: str | None, default: str = "/queue") -> str:
    """Only same-site relative paths are followed after a form post."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target \
            and not urlsplit(target).netloc:
        return target
    return default


def redirect(target: str) -> RedirectResponse:
    return RedirectResponse(target, status_code=303)
