"""Engine, the one sessionmaker, and migration checks.

Services ``flush()``; whoever owns the request or command commits.
"""

from __future__ import annotations

import json
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
        self.engine = make_engine(self.url)
        self.Session = sessionmaker(self.engine, expire_on_commit=False)

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
