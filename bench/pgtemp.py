"""A throw-away PostgreSQL database for a benchmark run."""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def temporary_database(server_url: str | None):
    """Yields None when ``server_url`` is None (the caller uses SQLite), else the URL of a fresh
    database on that server, dropped afterwards (its connections terminated first)."""
    if not server_url:
        yield None
        return
    from sqlalchemy import create_engine, make_url, text

    name = f"caveat_bench_{os.getpid()}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()
