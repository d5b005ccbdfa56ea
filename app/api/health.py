"""`GET /api/health`: the service is up and its database answers real queries.

Each table of the schema is read (its first row by primary key: the table's root and one leaf, cheap
whatever its size) and the migration version with it, so a database that opens but cannot be read (a
corrupted SQLite file, a PostgreSQL server gone) answers 503 with what failed, not ``ok``.
"""

from fastapi import APIRouter, Depends
from sqlalchemy import select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from app import __version__
from app.api.schemas import ERRORS, Health, _err
from app.deps import get_session
from app.errors import DatabaseUnavailable
from app.models import Base

router = APIRouter(tags=["service"])


def _probe(session: Session) -> None:
    session.execute(text("SELECT version_num FROM alembic_version")).all()
    for table in Base.metadata.sorted_tables:
        cols = list(table.primary_key.columns) or list(table.columns)[:1]
        session.execute(select(*cols).order_by(*cols).limit(1)).all()
        session.execute(select(*cols).order_by(*(c.desc() for c in cols)).limit(1)).all()


@router.get("/api/health", response_model=Health, summary="The service is up and its database can be read",
            responses={**ERRORS, 503: _err("The database cannot be read (the message says what failed).")})
def health(session: Session = Depends(get_session)) -> dict:
    try:
        _probe(session)
    except SQLAlchemyError as exc:
        session.rollback()
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0][:200]
        raise DatabaseUnavailable(
            f"The database cannot be read ({reason}); pages that need it fail until it is repaired. "
            "Run `caveat verify` to see what is damaged (a SQLite file can be rebuilt from the WARC files "
            "with `caveat reindex` on a fresh database).") from None
    return {"ok": True, "version": __version__}
