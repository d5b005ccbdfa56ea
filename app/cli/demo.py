"""`caveat demo`: the bundled sample leaderboards crawled into a fresh data folder and served, offline."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import click

from app.cli.group import main
from app.cli.context import CliContext
from app.demo.run import DemoSite, demo_settings, run_demo
from app.main import create_app

DEFAULT_DEMO_DIR = Path("./demo-data")


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``port``, or on a free port when that one is taken (port 0: always free)."""
    for candidate in ((port, 0) if port else (0,)):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError:
            sock.close()
            continue
        return sock
    raise click.ClickException(f"could not bind {host}:{port}; pass --port with a free port")


@main.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the demo's database and WARC files (default: CAVEAT_DATA_DIR if set, "
                   "else ./demo-data). An existing demo folder is reused.")
@click.option("--port", type=int, default=None,
              help="Port for the UI (default CAVEAT_PORT, 8000; a free port is used if it is taken; 0 = any).")
@click.option("--no-serve", is_flag=True, help="Crawl the sample pages, print a summary and exit (for tests and CI).")
@click.pass_obj
def demo(obj: CliContext, data_dir: Path | None, port: int | None, no_serve: bool) -> None:
    """Run Caveat offline on bundled sample leaderboards: crawl, audit, and serve the reviewer UI.

    Serves the sample pages (html, json, markdown and text, including a GLM-5.3-Flash draft-width
    ladder) on 127.0.0.1, crawls them into the embedded SQLite database in a data folder, creates a
    reviewer account and serves the UI, printing the URL and the login. Needs no network.

    \b
    Example:
      caveat demo
      caveat demo --no-serve --data-dir /tmp/caveat-demo
    """
    base = obj.settings
    if data_dir is None:
        data_dir = base.data_dir if os.environ.get("CAVEAT_DATA_DIR") else DEFAULT_DEMO_DIR
    data_dir = data_dir.resolve()
    updates = {"data_dir": data_dir}
    if not os.environ.get("CAVEAT_DATABASE_URL"):
        updates["database_url"] = None  # the embedded SQLite in the demo folder
    settings = base.model_copy(update=updates)
    host = settings.host
    wanted = settings.port if port is None else port
    sock = _bind(host, wanted)
    ui_url = f"http://{host}:{sock.getsockname()[1]}"
    if wanted and sock.getsockname()[1] != wanted:
        click.echo(f"port {wanted} is taken; the demo uses port {sock.getsockname()[1]} instead "
                   "(choose one with --port)")
    settings = demo_settings(settings, ui_url)
    site = DemoSite().start()
    try:
        click.echo(f"data folder: {data_dir}")
        click.echo(f"sample pages served at {site.base_url}/ (offline, 127.0.0.1 only)")

        def progress(event: str, report) -> None:
            if event == "done":
                s = report.summary
                line = (f"  crawled {report.name}: {report.status}, {s.new} new, {s.changed} changed, "
                        f"{s.unchanged} unchanged, {len(s.warnings)} warnings"
                        + (f" (snapshot {report.snapshot})" if report.snapshot else " (nothing archived)"))
                click.echo(line + (f"\n    {report.error}" if report.error else ""))

        result = run_demo(settings, site, progress=progress)
        click.echo(f"{result.entries} entries, {result.flagged} flagged"
                   + (" (reused an existing demo folder)" if result.reused else ""))
        click.echo(f"reviewer login: {result.username} / {result.password}")
        if no_serve:
            sock.close()
            if result.featured_entry:
                click.echo(f"GLM-5.3-Flash entry: {ui_url}/entries/{result.featured_entry} (start with `caveat demo`)")
            if result.failed:
                raise SystemExit(1)
            return
        import uvicorn  # noqa: PLC0415 (heavy optional import: uvicorn loads only when serving)

        click.echo(f"open {ui_url}/queue" + (f"  (GLM-5.3-Flash: {ui_url}/entries/{result.featured_entry})"
                                            if result.featured_entry else ""))
        click.echo("press Ctrl+C to stop")
        server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning", lifespan="off",
                                                proxy_headers=False))
        server.run(sockets=[sock])
    finally:
        site.stop()
