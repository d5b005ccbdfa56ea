"""Load one page in a real Chromium whose every request is answered by Caveat's guarded fetcher.

The browser never touches the network. Playwright routing (``context.route("**/*")``) pauses every
request the page makes (document, scripts, XHR/fetch, images, fonts, frames, popups); the request is
fetched here with :class:`archive.fetcher.Fetcher` (http/https only, internal addresses refused after
DNS and after each redirect, size and time limits) and the browser is handed those bytes. A request
the guard refuses is aborted in the page and listed. Besides routing, Chromium is started so that
whatever could slip past it has nowhere to go: a proxy on a closed loopback port for every scheme and
host (loopback included), service workers blocked, WebSockets closed by a route of their own, WebRTC
limited to the (dead) proxy, popups closed, downloads refused.

:func:`capture_pages` returns one :class:`PageCapture` per URL: every exchange with its fetched
:class:`~archive.fetcher.Hop` (raw bytes, digests), the refused requests, the rendered DOM, a PNG
screenshot and the page-info JSON. It builds no WARC record and writes nothing: the caller stores the
whole page or nothing. This module imports only ``archive`` and Playwright.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import secrets
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape, unescape

from archive.decoding import DecodeLimits, decode_content
from archive.fetcher import Fetcher, FetchError, Hop, Limits

log = logging.getLogger("caveat.browser")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update"]
# Whatever escapes routing goes to a closed port: every scheme, every host, loopback included.
LOCKDOWN = ["--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            "--dns-prefetch-disable", "--disable-features=DnsOverHttps,NetworkPrediction,AutofillServerCommunication",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--no-first-run", "--no-default-browser-check", "--disable-sync", "--metrics-recording-only",
            "--mute-audio", "--disable-dev-shm-usage",
            "--js-flags=--max-old-space-size=512"]  # a page that allocates without end crashes its renderer
VIEWPORT = {"width": 1280, "height": 900}
MAX_SCREENSHOT_HEIGHT = 16384  # px; a taller page (infinite scroll) is cut there, and the page info says so
MAX_NAVIGATIONS = 10  # main-frame documents one capture follows; a page that navigates on and on is stopped
MAX_DOM_BYTES = 50 * 1024 * 1024
MAX_LISTED_AFTER_STOP = 50  # requests refused after a capture stopped that the page info lists one by one
DROP_HEADERS = {"content-encoding", "content-length", "transfer-encoding"}  # the browser gets decoded bytes
FETCH_THREADS = 6


class BrowserUnavailable(Exception):
    """Chromium or Playwright cannot be started (not installed, wrong path)."""


@dataclass
class BrowserOptions:
    executable: str = "/usr/bin/chromium"
    page_time_limit: float = 60.0
    idle_time: float = 0.5
    settle: float = 1.0
    scroll: bool = False
    scroll_steps: int = 20
    max_requests: int = 1000
    max_page_bytes: int = 200 * 1024 * 1024
    decode: DecodeLimits = field(default_factory=lambda: DecodeLimits(max_bytes=200 * 1024 * 1024, max_ratio=100))


@dataclass
class Exchange:
    """One request the page made and what became of it: ``hop`` fetched, or ``refused`` with why."""

    url: str
    resource_type: str
    method: str = "GET"
    hop: Hop | None = None
    refused: str | None = None  # the guard's or the capture's reason, one line
    kind: str | None = None  # address|scheme|size|timeout|method|limit|popup|navigation|websocket|...
    fulfilled: bool = False

    @property
    def status(self) -> int | None:
        return self.hop.status if self.hop is not None else None

    @property
    def mime(self) -> str | None:
        return self.hop.mime if self.hop is not None else None


@dataclass
class PageCapture:
    url: str
    page_id: str
    started_at: datetime
    final_url: str | None = None
    title: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    dom: bytes | None = None
    screenshot: bytes | None = None
    screenshot_size: tuple[int, int] | None = None
    screenshot_cut: bool = False
    loaded: str = "network idle"  # or "time limit"
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # set: nothing of this page is to be stored
    js_errors: int = 0
    navigations: int = 0
    dropped: int = 0  # requests refused after the capture stopped (the first MAX_LISTED_AFTER_STOP are listed)
    seconds: float = 0.0

    @property
    def fetched(self) -> list[Exchange]:
        return [x for x in self.exchanges if x.hop is not None]

    @property
    def refused(self) -> list[Exchange]:
        return [x for x in self.exchanges if x.refused]

    @property
    def document(self) -> Exchange | None:
        """The exchange of the page's final main document (the last main-frame navigation fetched)."""
        docs = [x for x in self.exchanges if x.hop is not None and x.resource_type == "document:main"]
        return docs[-1] if docs else None

    def close(self) -> None:
        for x in self.exchanges:
            if x.hop is not None:
                x.hop.close()

    def pageinfo(self) -> bytes:
        """The page-info record's JSON, in the shape Browsertrix writes (``pageid``, ``url``, ``ts``,
        ``urls`` with status, mime and type per URL, ``counts``), plus Caveat's own ``caveat`` part:
        the refused requests and why, the warnings, how the load ended and the screenshot's size."""
        urls = {}
        for x in self.exchanges:
            if x.hop is not None:
                urls.setdefault(x.url, {"status": x.status, "mime": x.mime, "type": _type_name(x.resource_type)})
        info = {
            "pageid": self.page_id, "url": self.url, "ts": self.started_at.isoformat().replace("+00:00", "Z"),
            "title": self.title, "urls": urls, "counts": {"jsErrors": self.js_errors},
            "caveat": {
                "final_url": self.final_url, "loaded": self.loaded, "navigations": self.navigations,
                "requests": len(self.exchanges) + max(0, self.dropped - MAX_LISTED_AFTER_STOP),
                "fetched": len(self.fetched), "not_fetched_after_stop": self.dropped, "seconds": round(self.seconds, 3),
                "refused": [{"url": x.url, "type": _type_name(x.resource_type), "method": x.method,
                             "kind": x.kind, "reason": x.refused} for x in self.refused],
                "warnings": self.warnings,
                "screenshot": ({"width": self.screenshot_size[0], "height": self.screenshot_size[1],
                                "cut": self.screenshot_cut} if self.screenshot_size else None),
            },
        }
        return json.dumps(info, indent=1, ensure_ascii=False).encode("utf-8")


_TYPES = {"document": "Document", "stylesheet": "Stylesheet", "script": "Script", "image": "Image",
          "font": "Font", "xhr": "XHR", "fetch": "Fetch", "media": "Media", "websocket": "WebSocket",
          "manifest": "Manifest", "texttrack": "TextTrack", "eventsource": "EventSource", "ping": "Ping"}


def _type_name(resource_type: str) -> str:
    return _TYPES.get(resource_type.split(":", 1)[0], "Other")


def _short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[:n] + "..."


class _Page:
    """The state of one page's capture while Chromium loads it."""

    def __init__(self, url: str, opts: BrowserOptions, fetcher: Fetcher, pool: ThreadPoolExecutor):
        self.opts = opts
        self.fetcher = fetcher
        self.pool = pool
        self.cap = PageCapture(url=url, page_id=f"urn:uuid:{uuid.uuid4()}", started_at=datetime.now(timezone.utc))
        self.fetched: dict[str, Exchange] = {}  # URL -> the exchange that fetched it (fetched once per page)
        self.inflight = 0
        self.last_activity = time.monotonic()
        self.loaded_event = False
        self.stop_reason: str | None = None
        self.bytes = 0
        self.main_page = None
        self.context = None
        self.done = False
        self.cdp = None
        self.seen = 0  # requests routed so far
        self.crashed = False
        self.shown: str | None = None  # the URL of the main document the browser was last given

    def _refuse(self, url: str, rtype: str, method: str, kind: str, reason: str) -> Exchange:
        x = Exchange(url=url, resource_type=rtype, method=method, refused=reason, kind=kind)
        self.cap.exchanges.append(x)
        return x

    async def route(self, route, request) -> None:
        self.inflight += 1
        self.last_activity = time.monotonic()
        try:
            await self._serve(route, request)
        except Exception as exc:  # noqa: BLE001 - the page went away while we answered it
            log.debug("route for %s ended: %s", request.url, exc)
        finally:
            self.inflight -= 1
            self.last_activity = time.monotonic()

    async def _serve(self, route, request) -> None:
        if self.done:  # the page has been read; its context is closing
            await route.abort("blockedbyclient")
            return
        url, method = request.url, request.method
        rtype = request.resource_type
        try:
            frame = request.frame
            page = frame.page
        except Exception:  # noqa: BLE001 - a request with no frame (a popup being opened, a worker)
            frame = page = None
        is_main_doc = False
        if rtype == "document" and page is self.main_page and frame is not None and frame.parent_frame is None:
            rtype, is_main_doc = "document:main", True
        if (page is not None and self.main_page is not None and page is not self.main_page) or (
                page is None and rtype == "document" and self.main_page is not None):
            self._refuse(url, rtype, method, "popup", "a popup (window.open or target=_blank) is not followed")
            await route.abort("blockedbyclient")
            return
        if self.stop_reason:
            self.cap.dropped += 1
            if self.cap.dropped <= MAX_LISTED_AFTER_STOP:  # a page that requests without end is not listed whole
                self._refuse(url, rtype, method, "limit", f"not fetched: {self.stop_reason}")
            await route.abort("blockedbyclient")
            return
        self.seen += 1
        if self.seen > self.opts.max_requests:
            self.stop_reason = (f"the page made more than {self.opts.max_requests:,} requests; the capture stopped "
                                "there (raise CAVEAT_BROWSER_MAX_REQUESTS for bigger pages)")
            if self.cdp is not None:  # no script makes more: the page stays as it is now
                asyncio.ensure_future(_quietly(self.cdp.send("Emulation.setScriptExecutionDisabled", {"value": True})))
            self._refuse(url, rtype, method, "limit", f"not fetched: {self.stop_reason}")
            await route.abort("blockedbyclient")
            return
        if method not in ("GET", "HEAD"):
            self._refuse(url, rtype, method, "method", f"only GET requests are fetched and archived, not {method}")
            await route.abort("blockedbyclient")
            return
        if is_main_doc:
            self.cap.navigations += 1
            if self.cap.navigations > MAX_NAVIGATIONS:
                self._refuse(url, rtype, method, "navigation",
                             f"the page navigated more than {MAX_NAVIGATIONS} times (a loop?); later navigations "
                             "were stopped")
                await route.fulfill(status=204, body=b"")  # 204: the browser stays on the page it has
                return
        if is_main_doc and self.shown is not None:
            # The page sends the browser elsewhere after it was shown (a script, a refresh, a form). A
            # refused target would leave Chromium's error page as the page's DOM: each hop is checked
            # first, and a refused one is answered 204 (the browser stays on the page it has), recorded.
            why = await self._chain_refused(url, rtype, method)
            if why:
                self.cap.warnings.append(f"the page navigated to {_short(url)} after it was shown (a script or a "
                                         f"refresh), which was refused ({_short(why, 200)}); the page "
                                         f"{_short(self.shown)} was kept")
                await route.fulfill(status=204, body=b"")
                return
        # Chromium would follow a redirect it is handed outside the routing (the dead proxy refuses it),
        # so Caveat follows redirects itself, each hop fetched, checked and archived in turn: a document
        # (any frame) is handed a page that refreshes to the target, so the browser navigates there as a
        # new, routed request with the right base URL; any other request gets the last hop's response.
        known = await self._fetch(url, rtype, method)
        if known is None:
            await route.abort("blockedbyclient")
            return
        hops = 0
        while known.hop.location and not rtype.startswith("document"):
            hops += 1
            if hops > self.fetcher.limits.max_redirects:
                self._refuse(known.hop.location, rtype, method, "redirects",
                             f"more than {self.fetcher.limits.max_redirects} redirects (CAVEAT_MAX_REDIRECTS)")
                await route.abort("failed")
                return
            known = await self._fetch(known.hop.location, rtype, method)
            if known is None:
                await route.abort("blockedbyclient")
                return
        hop = known.hop
        if hop.location:  # a document's redirect
            target = escape(hop.location, quote=True)
            await route.fulfill(status=200, content_type="text/html; charset=utf-8",
                                body=f'<!doctype html><meta http-equiv="refresh" content="0; url={target}">')
            known.fulfilled = True
            return
        body, problem = decode_content(hop.payload(), hop.header("Content-Encoding"), self.opts.decode)
        if problem:
            self.cap.warnings.append(f"{_short(hop.url)}: {problem}")
        headers = [(k, v) for k, v in hop.headers if k.lower() not in DROP_HEADERS]
        merged: dict[str, str] = {}
        for k, v in headers:  # Playwright takes a dict; repeated headers (Set-Cookie, Link) joined as HTTP allows
            key = k.lower()
            merged[key] = f"{merged[key]}\n{v}" if key == "set-cookie" and key in merged else (
                f"{merged[key]}, {v}" if key in merged else v)
        await route.fulfill(status=hop.status, headers=merged, body=body)
        known.fulfilled = True
        if is_main_doc:
            self.shown = url

    async def _chain_refused(self, url: str, rtype: str, method: str) -> str | None:
        """Why a navigation to ``url`` cannot end on a fetched page (its redirects followed, each hop
        fetched once and kept for when the browser asks for it), or None when it can."""
        known, hops = await self._fetch(url, rtype, method), 0
        chain = [known] if known is not None else []
        why = None
        while known is not None and known.hop.location:
            hops += 1
            if hops > self.fetcher.limits.max_redirects:
                why = f"more than {self.fetcher.limits.max_redirects} redirects (CAVEAT_MAX_REDIRECTS)"
                break
            url = known.hop.location
            known = await self._fetch(url, rtype, method)
            chain += [known] if known is not None else []
        if known is None:
            why = next((x.refused for x in reversed(self.cap.exchanges) if x.url == url and x.refused),
                       "it could not be fetched")
        if why:
            for x in chain:  # archived as fetched, but none of them is the page's document
                x.resource_type = "document:left"
        return why

    async def _fetch(self, url: str, rtype: str, method: str) -> Exchange | None:
        """The exchange for ``url``: fetched once per page through the guarded fetcher; None (and listed
        as refused) when the guard or a page limit refuses it."""
        known = self.fetched.get(url)
        if known is not None:
            return known
        try:
            hop = await asyncio.get_running_loop().run_in_executor(self.pool, self.fetcher.fetch_hop, url)
        except FetchError as exc:
            self._refuse(url, rtype, method, exc.kind, exc.message)
            return None
        if self.bytes + hop.body_length > self.opts.max_page_bytes:
            hop.close()
            self._refuse(url, rtype, method, "size",
                         f"the page's responses passed {self.opts.max_page_bytes:,} bytes in all; raise "
                         "CAVEAT_BROWSER_MAX_PAGE_BYTES to store more")
            return None
        self.bytes += hop.body_length
        known = Exchange(url=url, resource_type=rtype, method=method, hop=hop)
        self.fetched[url] = known
        self.cap.exchanges.append(known)
        return known

    async def websocket(self, ws) -> None:
        self._refuse(ws.url, "websocket", "GET", "websocket",
                     "WebSocket connections are not made (they cannot pass Caveat's fetcher nor be archived)")
        await ws.close(code=1008, reason="not archived")

    def quiet_for(self) -> float:
        return 0.0 if self.inflight else time.monotonic() - self.last_activity

    async def wait_idle(self, deadline: float) -> bool:
        """Until the load event has fired and no request has been in flight for ``idle_time``; False when
        ``deadline`` (monotonic) comes first."""
        while time.monotonic() < deadline:
            if self.crashed or self.stop_reason:
                return not self.crashed
            if self.loaded_event and self.quiet_for() >= self.opts.idle_time:
                return True
            await asyncio.sleep(0.01)
        return False


async def _open(browser, url: str, opts: BrowserOptions, limits: Limits) -> _Page:
    """A fresh context and page for ``url``, every route in place, nothing loaded yet (made while the
    previous page settles, so a run of pages does not wait for it)."""
    fetcher = Fetcher(limits)
    pool = ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="caveat-browser-fetch")
    state = _Page(url, opts, fetcher, pool)
    cap = state.cap
    context = await browser.new_context(service_workers="block", accept_downloads=False, viewport=VIEWPORT,
                                        java_script_enabled=True, bypass_csp=False)
    state.context = context
    try:
        await context.route("**/*", state.route)
        await context.route_web_socket("**/*", state.websocket)
        page = await context.new_page()
        state.main_page = page
        state.cdp = await context.new_cdp_session(page)
    except BaseException:
        await _close(state)
        raise

    def on_popup(p) -> None:
        if p is not page:
            asyncio.ensure_future(_quietly(p.close()))

    def on_crash(_p) -> None:
        state.crashed = True

    def on_load(_p) -> None:
        state.loaded_event = True

    def on_error(_e) -> None:
        cap.js_errors += 1

    def on_download(d) -> None:
        cap.warnings.append(f"a download of {_short(d.url)} was refused")
        asyncio.ensure_future(_quietly(d.cancel()))

    context.on("page", on_popup)
    page.on("crash", on_crash)
    page.on("load", on_load)
    page.on("pageerror", on_error)
    page.on("download", on_download)
    page.on("framenavigated", lambda f: setattr(state, "loaded_event", False) if f is page.main_frame else None)
    return state


async def _close(state: _Page) -> None:
    state.fetcher.cancel()
    if state.context is not None:
        try:
            await asyncio.wait_for(state.context.close(), 10)
        except Exception:  # noqa: BLE001 - a crashed or hung context; the browser is closed after
            pass
    state.pool.shutdown(wait=False, cancel_futures=True)
    state.fetcher.close()


async def _capture_one(state: _Page) -> PageCapture:
    """Load the page ``state`` was opened for and read it; the caller closes its context."""
    opts, cap, page, url = state.opts, state.cap, state.main_page, state.cap.url
    started = time.monotonic()
    cap.started_at = datetime.now(timezone.utc)
    deadline = started + opts.page_time_limit
    reserve = min(10.0, opts.page_time_limit / 4)  # kept back for the DOM and the screenshot
    try:
        try:
            await page.goto(url, wait_until="commit", timeout=max(1.0, deadline - reserve - time.monotonic()) * 1000)
        except Exception as exc:  # noqa: BLE001 - a refused, failed or downloaded main document
            main = next((x for x in cap.exchanges if x.resource_type == "document:main"), None)
            if main is not None and main.refused:
                cap.error = main.refused
            elif main is not None and main.hop is not None and "download" in str(exc).lower():
                cap.error = ("the page is a download (the browser would save it, not show it); capture it without "
                             "--browser")
            elif state.crashed:
                cap.error = "the browser's renderer crashed while opening the page; nothing was stored"
            else:
                cap.error = f"the browser could not open the page: {_short(str(exc).splitlines()[0], 300)}"
            return cap
        log.debug("%s: committed after %.3f s", url, time.monotonic() - started)
        idle = await state.wait_idle(deadline - reserve)
        log.debug("%s: idle=%s after %.3f s", url, idle, time.monotonic() - started)
        if idle and opts.settle > 0:
            await asyncio.sleep(max(0.0, min(opts.settle, deadline - reserve - time.monotonic())))
        if idle and opts.scroll and not state.crashed:
            idle = await _scroll(page, state, opts, deadline - reserve)
        if idle and not state.crashed:
            idle = await state.wait_idle(deadline - reserve)
        if state.crashed:
            cap.error = ("the browser's renderer crashed (out of memory, or a page that crashes it); nothing "
                         "was stored")
            return cap
        if state.stop_reason:
            cap.loaded = "request limit"
            cap.warnings.append(state.stop_reason)
        elif not idle:
            cap.loaded = "time limit"
            cap.warnings.append(f"the page did not reach network idle within {opts.page_time_limit:g} s "
                                "(CAVEAT_BROWSER_PAGE_TIME_LIMIT); stored what it had loaded by then")
        log.debug("%s: %s after %.1f s; reading the DOM", url, cap.loaded, time.monotonic() - started)
        await _read_page(page, state, deadline)
        doc = cap.document
        if doc is not None and doc.hop.location and cap.error is None:  # it redirected to a page not loaded
            why = next((x.refused for x in cap.refused if x.url == doc.hop.location), None)
            cap.error = (f"the page redirects to {_short(doc.hop.location)}, which was not loaded"
                         + (f": {why}" if why else "") + "; nothing was stored")
        if cap.error is None and cap.final_url and not cap.final_url.startswith(("http://", "https://")):
            cap.error = (f"the browser ended on {_short(cap.final_url)} (its own error page or an empty one), "
                         "not a page it fetched; an error page is not stored as the page's DOM, so nothing was "
                         "stored")  # chrome-error://, about:blank, data:
        if cap.dom is None and cap.error is None and state.crashed:
            cap.error = ("the browser's renderer crashed (out of memory, or a page that crashes it); nothing "
                         "was stored")
        if cap.dom is None and cap.error is None:
            cap.error = "the page did not give its DOM in time (a script that never yields?); nothing was stored"
        return cap
    finally:
        cap.seconds = time.monotonic() - started
        state.done = True  # from here on the capture is the caller's: nothing more is added to it
        state.fetcher.cancel()  # fetches still running stop at their next chunk


async def _scroll(page, state: _Page, opts: BrowserOptions, deadline: float) -> bool:
    """Scroll down one viewport at a time, letting the network settle after each step, until the bottom
    stops moving, ``scroll_steps`` steps are taken, or ``deadline`` comes."""
    last_height = None
    for _ in range(max(0, opts.scroll_steps)):
        if time.monotonic() >= deadline or state.crashed or state.stop_reason:
            break
        try:
            y, height = await asyncio.wait_for(page.evaluate(
                "() => { window.scrollBy(0, window.innerHeight); "
                "return [window.scrollY + window.innerHeight, document.documentElement.scrollHeight]; }"),
                max(0.1, deadline - time.monotonic()))
        except Exception:  # noqa: BLE001 - a navigation or crash mid-scroll
            break
        await asyncio.sleep(0.1)
        if not await state.wait_idle(deadline):
            return False
        if y >= height and height == last_height:
            break
        last_height = height
    else:
        if opts.scroll_steps:
            state.cap.warnings.append(f"scrolled {opts.scroll_steps} steps without reaching the bottom (an endless "
                                      "page?); raise CAVEAT_BROWSER_SCROLL_STEPS to go further")
    return True


async def _quietly(coro) -> None:
    try:
        await coro
    except Exception as exc:  # noqa: BLE001 - the page is gone; reading it will say so
        log.debug("ignored: %s", exc)


async def _freeze(cdp, until: float) -> bool:
    """Stop the page's scripts so the DOM holds still while it is read: script execution disabled (no
    more timers, handlers or new scripts), and a script still running (one that never yields) is
    terminated. True when one had to be terminated."""
    def left(most: float) -> float:
        return max(0.5, min(most, until - time.monotonic()))

    try:
        await asyncio.wait_for(cdp.send("Emulation.setScriptExecutionDisabled", {"value": True}), left(10))
        await asyncio.wait_for(cdp.send("DOM.getDocument", {"depth": 0}), left(3))
        return False
    except asyncio.TimeoutError:
        await asyncio.wait_for(cdp.send("Runtime.terminateExecution"), left(10))
        await asyncio.wait_for(cdp.send("Emulation.setScriptExecutionDisabled", {"value": True}), left(10))
        return True


async def _read_page(page, state: _Page, deadline: float) -> None:
    """The rendered DOM and a full-page PNG (cut at MAX_SCREENSHOT_HEIGHT px), read with the page's
    scripts stopped, through the DevTools protocol (no script of ours runs in the page)."""
    cap = state.cap
    state.stop_reason = state.stop_reason or "the page was being read"
    hard = deadline + 5
    cdp = state.cdp

    def left() -> float:
        return max(1.0, hard - time.monotonic())

    async def dom() -> str:
        root = await asyncio.wait_for(cdp.send("DOM.getDocument", {"depth": 0}), left())
        return (await asyncio.wait_for(cdp.send("DOM.getOuterHTML", {"nodeId": root["root"]["nodeId"]}),
                                       left()))["outerHTML"]

    async def picture() -> None:
        try:
            metrics = await asyncio.wait_for(cdp.send("Page.getLayoutMetrics"), left())
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            width = max(1, min(int(size["width"]), VIEWPORT["width"] * 2))
            height = max(1, int(size["height"]))
            shot_height = min(height, MAX_SCREENSHOT_HEIGHT)
            shot = await asyncio.wait_for(cdp.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True, "fromSurface": True, "optimizeForSpeed": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": shot_height, "scale": 1}}), left())
            cap.screenshot = base64.b64decode(shot["data"])
            cap.screenshot_size, cap.screenshot_cut = (width, shot_height), height > MAX_SCREENSHOT_HEIGHT
            if cap.screenshot_cut:
                cap.warnings.append(f"the page is {height:,} px tall; the screenshot stops at "
                                    f"{MAX_SCREENSHOT_HEIGHT:,} px")
        except Exception as exc:  # noqa: BLE001 - the DOM is what parsing needs; a missing picture is said
            cap.warnings.append(f"no screenshot: {_short(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}")

    try:
        if await _freeze(cdp, hard):
            cap.warnings.append("a script was still running (one that never yields?); it was stopped so the DOM "
                                "could be read")
        cap.final_url = page.url
        log.debug("%s: scripts stopped; reading the DOM", cap.url)
        html, _ = await asyncio.gather(dom(), picture())  # the picture says its own failure
    except Exception as exc:  # noqa: BLE001 - hung or crashed renderer
        log.info("no DOM for %s: %r", cap.url, exc)
        cap.screenshot = None
        await asyncio.sleep(0.5)  # a crash is told by an event that may still be on its way
        return
    data = html.encode("utf-8")
    if len(data) > MAX_DOM_BYTES:
        cap.error = f"the rendered DOM is {len(data):,} bytes, over {MAX_DOM_BYTES:,}; nothing was stored"
        return
    cap.dom = data
    found = _TITLE.search(html[:200_000])
    cap.title = " ".join(unescape(found.group(1)).split()) if found else None


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.S | re.I)


def launch_args(marker: str | None = None) -> list[str]:
    args = FLAGS + LOCKDOWN
    if marker:
        args.append(f"--caveat-capture={marker}")  # unknown to Chromium, lets tests find its processes
    return args


async def _capture_all(urls: list[str], opts: BrowserOptions, limits: Limits, marker: str | None,
                       each=None) -> list[PageCapture]:
    try:
        from playwright.async_api import async_playwright
    except ImportError as exc:  # pragma: no cover - installed by `make install`
        raise BrowserUnavailable(f"Playwright for Python is not installed ({exc}); run `make install`") from None
    out = []
    async with async_playwright() as pw:
        try:
            browser = await pw.chromium.launch(executable_path=opts.executable, args=launch_args(marker),
                                               headless=True, timeout=60000, handle_sigint=False,
                                               handle_sigterm=False, handle_sighup=False)
        except Exception as exc:  # noqa: BLE001
            raise BrowserUnavailable(f"cannot start Chromium at {opts.executable} ({_short(str(exc).splitlines()[0], 300)}); "
                                     "install it (`make system-packages`) or set CAVEAT_BROWSER_EXECUTABLE") from None
        # each page is stored (``each``) in a thread of its own, in order, while the next page loads;
        # the next page's context is opened while this one loads, and each is closed in the background
        store = ThreadPoolExecutor(1, thread_name_prefix="caveat-browser-store")
        stored, closing = [], []
        opening = asyncio.ensure_future(_open(browser, urls[0], opts, limits)) if urls else None
        try:
            for i, url in enumerate(urls):
                try:
                    state = await opening
                finally:
                    opening = None
                if i + 1 < len(urls):
                    opening = asyncio.ensure_future(_open(browser, urls[i + 1], opts, limits))
                try:
                    cap = await asyncio.wait_for(_capture_one(state), opts.page_time_limit + 30)
                except asyncio.TimeoutError:
                    cap = state.cap
                    cap.error = (f"the browser did not answer within {opts.page_time_limit + 30:g} s; nothing was "
                                 "stored")
                closing.append(asyncio.ensure_future(_close(state)))
                if each is not None:
                    stored.append(asyncio.get_running_loop().run_in_executor(store, each, cap))
                out.append(cap)
                if not browser.is_connected():
                    raise BrowserUnavailable("Chromium exited during the capture")
            for done in stored + closing:
                await done
        finally:
            if opening is not None:
                opening.cancel()
            store.shutdown(wait=True)
            try:
                await asyncio.wait_for(browser.close(), 15)
            except Exception:  # noqa: BLE001
                pass
    return out


def capture_pages(urls: list[str], opts: BrowserOptions, limits: Limits, *, marker: str | None = None,
                  each=None) -> list[PageCapture]:
    """Load each URL in one Chromium (a fresh context per page) and return what each page made.
    ``each(capture)`` is called as each page finishes (from the browser's thread). Runs its own event
    loop in a thread of its own, so it works from any caller (the CLI, a web server's worker)."""
    result: dict = {}

    def run() -> None:
        try:
            result["pages"] = asyncio.run(_capture_all(urls, opts, limits, marker, each))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            result["error"] = exc

    t = threading.Thread(target=run, name="caveat-browser", daemon=True)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["pages"]


def new_marker() -> str:
    return secrets.token_hex(6)
