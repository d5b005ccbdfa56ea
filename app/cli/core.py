"""`caveat init` and `caveat serve`."""

from __future__ import annotations

import click

from app.cli import main
from app.cli.context import CliContext


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
    click.echo(f"serving on http://{host}:{port}/")
    if workers > 1:
        uvicorn.run("app.main:app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level="warning")
    else:
        from app.main import create_app

        uvicorn.run(create_app(obj.settings), host=host, port=port, log_level="warning")
