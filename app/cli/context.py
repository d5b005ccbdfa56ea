"""Shared state for CLI commands: settings built once, the database opened on demand."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import Database
from app.errors import NotFound


class CliContext:
    def __init__(self, settings: Settings | None = None):
        self._settings = settings
        self._db: Database | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings()
        return self._settings

    def database(self, *, migrated: bool = True, create: bool = False) -> Database:
        """The database; by default refuses one that `caveat init` has not migrated. Only ``create=True``
        (`caveat init`, `caveat reindex`) may make a missing data folder or SQLite file: every other
        command pointed at one (`CAVEAT_DATA_DIR=typo caveat quote x`) says so and creates nothing."""
        if self._db is None:
            if not create:
                self._refuse_missing()
            self._db = Database(self.settings)
        if migrated:
            self._db.require_migrated()
        return self._db

    def _refuse_missing(self) -> None:
        s = self.settings
        if not s.data_dir.is_dir():
            raise NotFound(f"No Caveat data folder at {s.data_dir.resolve()}: check CAVEAT_DATA_DIR, or run "
                           "`caveat init` to create one there.")
        url = make_url(s.db_url)
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
                and not Path(url.database).exists():
            raise NotFound(f"No database at {url.database}: run `caveat init` to create it (`caveat init --reindex` "
                           "or `caveat reindex` rebuild it from the WARC files in the data folder).")

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.database().Session.begin() as s:
            yield s
