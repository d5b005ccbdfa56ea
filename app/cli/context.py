"""Shared state for CLI commands: settings built once, the database opened on demand."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from sqlalchemy.orm import Session

from app.config import Settings
from app.db import Database


class CliContext:
    def __init__(self, settings: Settings | None = None):
        self._settings = settings
        self._db: Database | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings()
        return self._settings

    def database(self, *, migrated: bool = True) -> Database:
        """The database; by default refuses one that `caveat init` has not migrated."""
        if self._db is None:
            self._db = Database(self.settings)
        if migrated:
            self._db.require_migrated()
        return self._db

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.database().Session.begin() as s:
            yield s
