"""``caveat db copy --to URL``: copy a whole installation's database to another one (SQLite <-> PostgreSQL).

Every table is copied row for row with its primary keys, in foreign-key order, into a target that
``alembic upgrade head`` has just brought to the same schema and that holds no rows. PostgreSQL
sequences are moved past the copied ids. The WARC files are not touched: point the new database at
the same data folder (or copy the folder), and ``caveat verify`` then checks every row against its
bytes. The copy is read in one snapshot of the source and written in one transaction, so a failure
leaves the target as empty as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sqlalchemy import func, insert, select, text

from app.db import Database
from app.errors import BadRequest
from app.models import Base

CHUNK = 1000


@dataclass
class CopyReport:
    target: str
    tables: dict[str, int] = field(default_factory=dict)


def copy_database(source: Database, to_url: str, *, progress: Callable[[str], None] | None = None) -> CopyReport:
    say = progress or (lambda m: None)
    if to_url == source.url:
        raise BadRequest("the target is the database in use; give another URL with --to")
    target = Database(source.settings.model_copy(update={"database_url": to_url}))
    try:
        target.upgrade()
        tables = Base.metadata.sorted_tables
        with target.engine.connect() as conn:
            busy = [t.name for t in tables if conn.execute(select(func.count()).select_from(t)).scalar()]
        if busy:
            raise BadRequest(f"the target database {target.safe_url()} already holds rows ({', '.join(busy[:5])}); "
                             "copy into an empty database (create one, then run this again)")
        report = CopyReport(target.safe_url())
        with source.engine.connect() as src, target.engine.begin() as dst:
            if dst.dialect.name == "sqlite":
                dst.execute(text("PRAGMA defer_foreign_keys = ON"))
            for table in tables:
                n = 0
                pk = list(table.primary_key.columns)
                result = src.execution_options(stream_results=True, yield_per=CHUNK).execute(
                    select(table).order_by(*pk))
                for rows in result.mappings().partitions(CHUNK):
                    dst.execute(insert(table), [dict(r) for r in rows])
                    n += len(rows)
                report.tables[table.name] = n
                say(f"{table.name}: {n:,} row(s)")
                if dst.dialect.name == "postgresql" and len(pk) == 1 and n and \
                        pk[0].type.python_type is int and pk[0].autoincrement in (True, "auto"):
                    dst.execute(text(f"SELECT setval(pg_get_serial_sequence('{table.name}', '{pk[0].name}'), "
                                     f"(SELECT max({pk[0].name}) FROM {table.name}))"))
        return report
    finally:
        target.dispose()
