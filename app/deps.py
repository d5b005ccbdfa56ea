"""Request dependencies every face (JSON API, HTML views) takes: one database session per request.

Lives below the faces and the domains that define their own dependencies (``app.accounts``), never in
``app.main``, which imports the faces."""

from __future__ import annotations

from typing import Iterator

from fastapi import Request
from sqlalchemy.orm import Session

from app.db import Database


def get_session(request: Request) -> Iterator[Session]:
    """FastAPI dependency: one session per request, committed when the handler returns."""
    db: Database = request.app.state.db
    with db.Session() as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
