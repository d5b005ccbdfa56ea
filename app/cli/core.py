"""`caveat init` and `caveat serve`."""

from __future__ import annotations

import os

import sys
import time

import click

from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.config import Settings, check_base_url, record_base_url, recorded_base_url
from app.replay.links import known_base
from app.storage.tlog import ensure_signing_key
from app.storage.indexing import unindexed_files
from app.rebuild.reindex import NOT_RESTORED, reindex_all
import errno
import socket
from app.errors import BadRequest, Conflict, NotFound
from app.storage.dbcopy import copy_database
from app.watch.worker import Scheduler
from app.watch.hooks import hook_key_path, seal_plaintext_secrets
from app.main import create_app


@main.command()
@click.option("--reindex/--no-reindex", "do_reindex", default=None,
              help="When the data folder holds WARC records the database has no rows for (a lost, replaced or "
                   "restored database), rebuild the index from them (`caveat reindex`). Default: ask on a "
                   "terminal, otherwise only say so.")
@click.option("--base-url", default=None, metavar="URL",
              help="Record the public base URL citation links are minted with (e.g. https://caveat.example.org); "
                   "change it later with `caveat config base-url URL`.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, database, migrated_from, revision, data_dir, "
              "base_url, signing_key_made, unindexed_files, reindexed}; messages go to stderr.")
@click.pass_obj
def init(obj: CliContext, do_reindex: bool | None, base_url: str | None = None, as_json: bool = False) -> None:
    """Create the data folder and bring the database to the latest migration.

    Safe to run again: it only applies migrations that are missing. If the WARC folder holds records
    the database does not index, it offers to rebuild the index from them.

    \b
    Example:
      CAVEAT_DATA_DIR=./data caveat init
      CAVEAT_DATABASE_URL=postgresql+psycopg2://postgres@127.0.0.1/caveat caveat init --reindex
    """
    json_mode(as_json)

    def say(line: str) -> None:
        click.echo(line, err=as_json)     # with --json only the answer is on stdout

    s = obj.settings
    if base_url is not None:
        base_url = _checked(base_url)     # a bad URL fails before anything is made
    s.data_dir.mkdir(parents=True, exist_ok=True)
    s.warc_dir.mkdir(parents=True, exist_ok=True)
    s.index_dir.mkdir(parents=True, exist_ok=True)
    db = obj.database(migrated=False, create=True)
    before = db.current_revision()
    db.upgrade()
    after = db.current_revision()
    if before == after:
        say(f"database {db.safe_url()} already at {after}")
    else:
        say(f"database {db.safe_url()} migrated {before or 'empty'} -> {after}")
    say(f"data folder {s.data_dir.resolve()}")
    if base_url is not None:
        s.base_url = record_base_url(s.data_dir, base_url)
    base = known_base(s)
    say(f"public base URL {base}" if base else "public base URL not recorded yet: the first `caveat serve` "
        "records its address, or `caveat config base-url URL` (until then the CLI prints citation ids)")

    made = ensure_signing_key(s)
    if made:  # signs WACZ exports and the tamper-evident log's tree heads (issue 13)
        say(f"signing key made: {s.data_dir.resolve() / 'signing_key.pem'} (keep it private; back it up)")
    _seal_hook_secrets(db, err=as_json)
    answer = {"database": db.safe_url(), "migrated_from": before, "revision": after,
              "data_dir": str(s.data_dir.resolve()), "base_url": base, "signing_key_made": bool(made),
              "unindexed_files": [], "reindexed": None}
    behind = unindexed_files(db)
    if behind:
        answer["unindexed_files"] = [p.name for p in behind]
        say(f"{len(behind)} WARC file(s) in {s.warc_dir} hold records this database does not index "
            f"({', '.join(p.name for p in behind[:3])}{', ...' if len(behind) > 3 else ''}).")
        if do_reindex is None and sys.stdin.isatty() and not as_json:
            do_reindex = click.confirm("Rebuild the index from them now (caveat reindex)?", default=True)
        if do_reindex:
            answer["reindexed"] = _run_reindex(db, reparse=True, quiet=as_json)
        else:
            say("Run `caveat reindex` to index them (nothing is lost until then: the next capture indexes "
                "the newest file's records too).")
    if as_json:
        emit(answer)


def _run_reindex(db, *, reparse: bool, quiet: bool = False) -> dict:
    """Reindex, saying what was done (on stderr when ``quiet``: a --json command); returns the summary."""
    started = time.monotonic()
    report = reindex_all(db, progress=lambda m: click.echo(m, err=True), reparse=reparse)
    for line in report.problems:
        click.echo(f"problem: {line}", err=True)
    if report.sources:
        click.echo(f"sources recreated from the WARC files: {', '.join(report.sources)}", err=quiet)
    seconds = round(time.monotonic() - started, 1)
    click.echo(f"reindexed {report.indexed:,} record(s) from {len(report.files)} WARC file(s) in {seconds:.1f} s",
               err=quiet)
    click.echo(NOT_RESTORED, err=quiet)
    return {"indexed": report.indexed, "files": [f.name for f in report.files], "sources": list(report.sources),
            "problems": list(report.problems), "seconds": seconds}


@main.command()
@click.option("--no-reparse", is_flag=True, help="Only rebuild the archive index; do not re-derive entries.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, created_schema, indexed, files, sources, "
              "problems, seconds}; progress goes to stderr.")
@click.pass_obj
def reindex(obj: CliContext, no_reparse: bool, as_json: bool = False) -> None:
    """Rebuild the archive index from the WARC files alone: snapshots, revisits, request records,
    citation ids (derived from record ids, so they come back the same), sources (from the metadata
    records crawls write), access changes, measurements, reviewers' corrections and decisions, and the
    CDXJ; then re-derive entries, flags and quotable answers by reparsing (corrections applied, decisions
    re-applied). Not restored: accounts, sessions, API tokens, webhooks, change history (back them up). WARC files other tools wrote that are dropped into the WARC folder are indexed too.
    With CAVEAT_ARCHIVE_URL, every object in the bucket is indexed as well (docs/storage.md).
    Idempotent; a killed run resumes where it stopped. Holds the store's lock, so no capture runs meanwhile.

    \b
    Example:
      caveat init && caveat reindex
    """
    json_mode(as_json)
    s = obj.settings
    if not s.data_dir.is_dir():
        raise NotFound(f"No Caveat data folder at {s.data_dir.resolve()} (its WARC files are what a reindex reads): "
                       "check CAVEAT_DATA_DIR.")
    db = obj.database(migrated=False, create=True)
    created = db.current_revision() is None
    if created:     # a lost database: make the schema, then rebuild it from the WARC files
        s.warc_dir.mkdir(parents=True, exist_ok=True)
        s.index_dir.mkdir(parents=True, exist_ok=True)
        db.upgrade()
        click.echo(f"database {db.safe_url()} had no Caveat tables: created at {db.current_revision()}", err=True)
    db.require_migrated()
    done = _run_reindex(db, reparse=not no_reparse, quiet=as_json)
    if as_json:
        emit({"created_schema": created, **done})


def _seal_hook_secrets(db, err: bool = False) -> None:
    """Webhook secrets stored in plaintext before they were sealed are sealed now (once)."""
    with db.session() as session:
        n = seal_plaintext_secrets(session, db.settings)
    if n:
        click.echo(f"sealed {n} webhook secret(s) with {hook_key_path(db.settings).resolve()} (keep it with "
                   "the database's backups, separately)", err=err)


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
    import uvicorn  # noqa: PLC0415 (heavy optional import: uvicorn loads only when serving)

    _seal_hook_secrets(obj.database())  # refuse an unmigrated database before binding; seal old secrets
    host = host or obj.settings.host
    port = obj.settings.port if port is None else port
    sock = bind_or_explain(host, port)  # a taken port is one clear line, before any URL is printed
    port = sock.getsockname()[1]
    settings = serving_settings(obj.settings, host, port)
    if "base_url" not in obj.settings.model_fields_set:   # the first serve records where it is reached
        record_base_url(obj.settings.data_dir, settings.base_url)
        click.echo(f"public base URL recorded: {settings.base_url} (change it: caveat config base-url URL)")
    click.echo(f"serving on http://{host}:{port}/")
    if workers > 1:
        sock.close()  # uvicorn's workers bind it again themselves
        os.environ["CAVEAT_BASE_URL"] = settings.base_url  # the workers build their settings from the environment
        uvicorn.run("app.main:app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level="warning", proxy_headers=False)  # the app reads X-Forwarded-For itself
    else:

        application = create_app(settings)
        if application.state.db.engine.dialect.name == "sqlite":  # due crawls run in-process (issue 17)

            application.state.scheduler = Scheduler(application.state.db)
            click.echo("scheduled crawls run in this process (SQLite); on PostgreSQL run `caveat worker`")
        # proxy_headers off: uvicorn would trust X-Forwarded-For from any loopback peer; the app reads it
        # itself, from CAVEAT_TRUSTED_PROXIES only (auth.client_address).
        server = uvicorn.Server(uvicorn.Config(application, log_level="warning", proxy_headers=False))
        server.run(sockets=[sock])


def _checked(url: str) -> str:
    try:
        return check_base_url(url)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


@main.group("config")
def config_group() -> None:
    """Settings recorded in the data folder.

    \b
    Example:
      caveat config base-url https://caveat.example.org
    """


@config_group.command("base-url")
@click.argument("url", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, base_url, recorded}.")
@click.pass_obj
def config_base_url(obj: CliContext, url: str | None, as_json: bool) -> None:
    """Show or record the public base URL every citation link is minted with (CLI, API, feeds, webhooks).
    CAVEAT_BASE_URL, when set, wins over the recorded one.

    \b
    Example:
      caveat config base-url https://caveat.example.org
      caveat config base-url
    """
    json_mode(as_json)
    s = obj.settings
    if url is not None:
        if not s.data_dir.is_dir():
            raise NotFound(f"No data folder at {s.data_dir.resolve()}: run `caveat init` first.")
        record_base_url(s.data_dir, _checked(url))
    recorded = recorded_base_url(s.data_dir)
    shown = os.environ.get("CAVEAT_BASE_URL") or recorded
    if as_json:
        emit({"base_url": shown, "recorded": recorded})
    elif shown:
        click.echo(shown + (" (CAVEAT_BASE_URL; recorded: " + str(recorded) + ")"
                            if os.environ.get("CAVEAT_BASE_URL") and url is None else ""))
    else:
        click.echo("no public base URL recorded: `caveat config base-url URL` records one (the CLI prints "
                   "citation ids until then)")


def bind_or_explain(host: str, port: int):
    """A listening socket on host:port (port 0: any free port), or a one-line error naming the port
    that is taken and how to choose another."""

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise Conflict(f"port {port} on {host} is taken (another `caveat serve` or program is using it); "
                           f"choose another with --port {port + 1} (or CAVEAT_PORT={port + 1}), or --port 0 "
                           "for any free port") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise Conflict(f"port {port} on {host} needs privileges this user lacks; use a port above 1023, "
                           "e.g. --port 8000") from None
        raise Conflict(f"cannot listen on {host}:{port}: {exc.strerror}; check --host and --port") from None
    return sock


@main.group("db")
def db_group() -> None:
    """The database as a whole: copy an installation between SQLite and PostgreSQL.

    \b
    Example:
      caveat db copy --to postgresql+psycopg2://postgres@127.0.0.1:5432/caveat
    """


@db_group.command("copy")
@click.option("--to", "to_url", required=True, help="SQLAlchemy URL of an empty database to copy into "
              "(created tables by `alembic upgrade head`), e.g. postgresql+psycopg2://user@host/db or sqlite:////path/caveat.db.")
@click.pass_obj
def db_copy(obj: CliContext, to_url: str) -> None:
    """Copy every row of this installation's database (snapshots, sources, entries and their history,
    flags, recipes, measurements, accounts, review decisions) into another, empty database, keeping
    every id, so citations, entry URLs and API tokens work there unchanged. WARC files are not copied:
    give the new database the same CAVEAT_DATA_DIR, then run `caveat verify`.

    \b
    Example:
      caveat db copy --to postgresql+psycopg2://postgres@127.0.0.1:5432/caveat
      CAVEAT_DATABASE_URL=postgresql+psycopg2://postgres@127.0.0.1:5432/caveat caveat verify
    """
    report = copy_database(obj.database(), to_url, progress=lambda m: click.echo(m, err=True))
    click.echo(f"copied {sum(report.tables.values()):,} row(s) in {len(report.tables)} table(s) to {report.target}")
