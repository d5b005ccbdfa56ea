"""Engine, the one sessionmaker, and migration checks.

Services ``flush()``; whoever owns the request or command commits.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import orjson
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.errors import NotMigrated

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


# FULL: a commit is on disk when it returns, like the WARC bytes it indexes (fsynced before the commit).
# Under WAL, NORMAL could lose the last commits on power loss while their WARC bytes survive; the
# index then catches up from the WARC (never the reverse), but FULL keeps the two in step.
SQLITE_SYNCHRONOUS = "FULL"


def json_dumps(value) -> str:
    """How JSON columns are written: orjson (about 5x the standard library here), the same JSON text
    meaning; NaN and infinities become null (JSON has no such numbers, and PostgreSQL refuses them).
    Anything orjson cannot encode (an integer past 64 bits, a non-str key type it does not know) falls
    back on the standard library's encoder."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def json_loads(text):
    return orjson.loads(text)


def make_engine(url: str) -> Engine:
    codec = {"json_serializer": json_dumps, "json_deserializer": json_loads}
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **codec)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20, **codec)


PRIVATE_FILE = 0o600
SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")
# Keys in the data folder: the cookie signing key, the log's signing key, the webhook secrets' key.
SENSITIVE_FILES = ("secret_key", "signing_key.pem", "hook_secrets.key")


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for PostgreSQL and in-memory databases)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split(":///", 1)[1] if ":///" in url else ""
    path = path.split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def protect_file(path: Path) -> None:
    """Make ``path`` readable by its owner only (0600) if it exists and is readable by others."""
    try:
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            path.chmod(mode & 0o700 or PRIVATE_FILE)
    except FileNotFoundError:
        pass


def protect_sqlite_files(url: str) -> None:
    """Create the SQLite database 0600 before SQLite opens it (SQLite gives its -wal, -shm and -journal
    files the database's own mode), and take group and other access away from existing ones: the
    database holds password hashes, session and token hashes and the webhook deliveries."""
    path = sqlite_path(url)
    if path is None:
        return
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        except FileExistsError:
            pass
    for suffix in SQLITE_SIDE_FILES:
        protect_file(path.with_name(path.name + suffix))


def chunked(seq: list, n: int = 500):
    """Slices of ``seq`` of at most ``n`` items: keeps IN-lists under SQLite's and PostgreSQL's limits."""
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


class Database:
    """Owns the engine and the sessionmaker for one settings object."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.url = settings.db_url
        if self.url.startswith("sqlite"):
            settings.data_dir.mkdir(parents=True, exist_ok=True)
            protect_sqlite_files(self.url)
        for name in SENSITIVE_FILES:  # made 0600 by their writers; older installations fixed here
            protect_file(settings.data_dir / name)
        self.engine = make_engine(self.url)
        # session.info["settings"]: lets a domain function reach the data folder (e.g. a key file) from
        # the session it is given
        self.Session = sessionmaker(self.engine, expire_on_commit=False, info={"settings": settings})

    # -- migrations -------------------------------------------------------------------------------
    def head_revision(self) -> str | None:
        return ScriptDirectory.from_config(alembic_config(self.url)).get_current_head()

    def current_revision(self) -> str | None:
        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def upgrade(self) -> None:
        cfg = alembic_config(self.url)
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def require_migrated(self) -> None:
        """Refuse to work on a database that is not at the latest migration."""
        current = self.current_revision()
        head = self.head_revision()
        if current != head:
            where = "has no Caveat tables" if current is None else f"is at migration {current}, not {head}"
            raise NotMigrated(
                f"The database {self.safe_url()} {where}. Run `caveat init` to create or upgrade it "
                f"(it offers to rebuild the index from the WARC files already in the data folder: `caveat init --reindex`)."
            )

    def safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in a transaction that commits on success and rolls back on error."""
        with self.Session.begin() as s:
            yield s

    def dispose(self) -> None:
        self.engine.dispose()
