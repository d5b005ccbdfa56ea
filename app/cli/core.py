"""`caveat init` and `caveat serve`."""

from __future__ import annotations

import os

import click

from app.cli import main
from app.cli.context import CliContext
from app.config import Settings


@main.command()
@click.pass_obj
def init(obj: CliContext) -> None:
    """Create the data folder and bring the database to the latest migration.

    Safe to run again: it only applies migrations that are missing.

    \b
    Example:
      CAVEAT_DATA_DIR=./data caveat init
    """
    s = obj.settings
    s.data_dir.mkdir(parents=True, exist_ok=True)
    s.warc_dir.mkdir(parents=True, exist_ok=True)
    s.index_dir.mkdir(parents=True, exist_ok=True)
    db = obj.database(migrated=False)
    before = db.current_revision()
    db.upgrade()
    after = db.current_revision()
    if before == after:
        click.echo(f"database {db.safe_url()} already at {after}")
    else:
        click.echo(f"database {db.safe_url()} migrated {before or 'empty'} -> {after}")
    click.echo(f"data folder {s.data_dir.resolve()}")


def serving_settings(settings: Settings, host: str, port: int) -> Settings:
    """Settings for a server on host:port: unless CAVEAT_BASE_URL was given, absolute URLs (redirects, Memento
    Link headers, citation URLs) name the address actually served, not the default port."""
    if "base_url" in settings.model_fields_set:
        return settings
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return settings.model_copy(update={"base_url": f"http://{shown}:{port}"})


@main.command()
@click.option("--host", default=None, help="Address to bind (default CAVEAT_HOST, 127.0.0.1).")
@click.option("--port", default=None, type=int, help="Port to bind (default CAVEAT_PORT, 8000).")
@click.option("--workers", default=1, show_default=True, help="Worker processes.")
@click.pass_obj
def serve(obj: CliContext, host: str | None, port: int | None, workers: int) -> None:
    """Serve the web UI, the JSON API, replay and citations.

    \b
    Example:
      caveat serve --port 8000
    """
    import uvicorn

    obj.database()  # refuse an unmigrated database before binding
    host = host or obj.settings.host
    port = port or obj.settings.port
    settings = serving_settings(obj.settings, host, port)
    click.echo(f"serving on http://{host}:{port}/")
    if workers > 1:
        os.environ["CAVEAT_BASE_URL"] = settings.base_url  # the workers build their settings from the environment
        uvicorn.run("app.main:app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level="warning")
    else:
        from app.main import create_app

        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
