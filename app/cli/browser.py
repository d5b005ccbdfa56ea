"""`caveat capture --browser`: the output of a browser capture (the command itself is in capture.py)."""

from __future__ import annotations

import sys
import time

import click

from app.cli.group import emit
from app.cli.context import CliContext
from archive.browser import BrowserUnavailable
from app.capture.browser import capture_browser_urls


def _line(r) -> str:
    if r.error:
        return f"error  {r.url}: {r.error}"
    redirected = f"  (-> {r.final_url})" if r.final_url and r.final_url != r.url else ""
    shot = f", screenshot {r.screenshot.citation_id}" if r.screenshot is not None else ""
    refused = f", {len(r.refused)} refused" if r.refused else ""
    return (f"{r.status}  {r.size:,} B  {r.citation_id}  {r.url}{redirected}  (browser: {len(r.responses)} "
            f"response(s){refused}{shot}; {r.loaded}, {r.seconds:.1f} s)")


def _json(r) -> dict:
    return {"url": r.url, "final_url": r.final_url, "status": r.status, "size": r.size,
            "citation_id": r.citation_id, "snapshot": r.citation_id, "document": r.document.citation_id if r.document is not None else None,
            "screenshot": r.screenshot.citation_id if r.screenshot is not None else None,
            "pageinfo": r.pageinfo.citation_id if r.pageinfo is not None else None,
            "responses": len(r.responses), "requests": r.requests, "loaded": r.loaded,
            "refused": [{"url": u, "reason": why} for u, why in r.refused], "warnings": r.warnings,
            "error": r.error}


def browser_capture_command(obj: CliContext, urls: list[str], source_id: int | None, as_json: bool,
                            scroll: bool | None) -> None:
    db = obj.database()
    failed = 0

    def progress(r) -> None:
        nonlocal failed
        failed += 1 if r.error else 0
        if as_json:
            return
        click.echo(_line(r), err=bool(r.error))
        for u, why in r.refused:
            click.echo(f"  refused  {u}: {why}", err=True)
        for w in r.warnings:
            click.echo(f"  warning  {w}", err=True)

    def notice(message: str) -> None:
        click.echo(f"notice: {message}", err=True)

    started = time.monotonic()
    try:
        results = capture_browser_urls(db, urls, source_id=source_id, progress=progress, notice=notice, scroll=scroll)
    except BrowserUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit({"count": len(results), "captures": [_json(r) for r in results]}, ok=not failed)
        if failed:
            sys.exit(1)
        return
    if len(urls) > 1:
        stored = sum(1 for r in results if r.error is None)
        click.echo(f"stored {stored:,} of {len(urls):,} page(s) with the browser in {time.monotonic() - started:.1f} s",
                   err=True)
    if failed:
        click.echo(f"{failed} of {len(urls)} page(s) failed; nothing was stored for them", err=True)
        sys.exit(1)
