"""Shared fixtures: settings on a fresh migrated database (SQLite, and PostgreSQL when
CAVEAT_TEST_POSTGRES_URL is set), the app in-process, the CLI runner, and real HTTP servers."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.config import Settings
from app.db import Database

from tests.helpers import LocalServer

PG_URL = os.environ.get("CAVEAT_TEST_POSTGRES_URL")
PG_SKIP_REASON = "CAVEAT_TEST_POSTGRES_URL is not set; PostgreSQL tests skipped (.ci/run sets it)"
DATA_DIR = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    """A SQLite file migrated once with `alembic upgrade head`; each test gets a copy."""
    path = tmp_path_factory.mktemp("template") / "caveat.db"
    db = Database(Settings(data_dir=path.parent, database_url=f"sqlite:///{path}"))
    db.upgrade()
    db.dispose()
    return path


@pytest.fixture(scope="session")
def pg_database():
    """A fresh PostgreSQL database for this test session, migrated with alembic, dropped at the end."""
    if not PG_URL:
        pytest.skip(PG_SKIP_REASON)
    base = make_url(PG_URL)
    name = f"caveat_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.set(database=name).render_as_string(hide_password=False)
    db = Database(Settings(database_url=url))
    db.upgrade()
    db.dispose()
    yield url
    with admin.connect() as conn:
        conn.execute(text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n AND pid <> pg_backend_pid()"
        ), {"n": name})
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    admin.dispose()


def _truncate_pg(url: str) -> None:
    eng = create_engine(url)
    with eng.begin() as conn:
        tables = [r[0] for r in conn.execute(text(
            "SELECT tablename FROM pg_tables WHERE schemaname='public' AND tablename <> 'alembic_version'"
        ))]
        if tables:
            # Between tests only: the audit log refuses TRUNCATE (a trigger); replica mode skips triggers.
            conn.execute(text("SET session_replication_role = replica"))
            conn.execute(text("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE"))
            conn.execute(text("SET session_replication_role = DEFAULT"))
    eng.dispose()


def make_settings(tmp_path: Path, database_url: str, **overrides) -> Settings:
    values = dict(
        data_dir=tmp_path / "data",
        database_url=database_url,
        allow_private_addresses=True,
        secret_key="test-secret-key",
        base_url="http://caveat.test",
    )
    values.update(overrides)
    s = Settings(**values)
    s.data_dir.mkdir(parents=True, exist_ok=True)
    s.warc_dir.mkdir(parents=True, exist_ok=True)
    s.index_dir.mkdir(parents=True, exist_ok=True)
    return s


@pytest.fixture
def settings(tmp_path, sqlite_template) -> Settings:
    """Settings on a fresh, migrated SQLite database in a temporary data folder."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(sqlite_template, data / "caveat.db")
    return make_settings(tmp_path, f"sqlite:///{data / 'caveat.db'}")


@pytest.fixture(params=["sqlite", "postgres"])
def backend_settings(request, tmp_path, sqlite_template) -> Settings:
    """Like ``settings`` but runs the test once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        data = tmp_path / "data"
        data.mkdir()
        shutil.copy(sqlite_template, data / "caveat.db")
        return make_settings(tmp_path, f"sqlite:///{data / 'caveat.db'}")
    if not PG_URL:
        pytest.skip(PG_SKIP_REASON)
    url = request.getfixturevalue("pg_database")
    _truncate_pg(url)
    return make_settings(tmp_path, url)


@pytest.fixture
def db(settings) -> Database:
    d = Database(settings)
    yield d
    d.dispose()


@pytest.fixture
def backend_db(backend_settings) -> Database:
    d = Database(backend_settings)
    yield d
    d.dispose()


@pytest.fixture
def app(settings):
    from app.main import create_app

    application = create_app(settings)
    yield application
    application.state.db.dispose()


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://caveat.test") as c:
        yield c


@pytest.fixture
def cli(settings):
    """Run the `caveat` CLI in-process with the test settings: ``cli("capture", url)``."""
    from app.cli import main
    from app.cli.context import CliContext

    runner = CliRunner()

    def run(*args, input=None, settings_override: Settings | None = None):
        return runner.invoke(main, list(args), obj=CliContext(settings_override or settings), input=input,
                             catch_exceptions=False)

    return run


@pytest.fixture
def server():
    """A real HTTP server on 127.0.0.1 (port 0) in a thread; add routes with ``server.route(...)``."""
    srv = LocalServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def live_app(settings):
    """The app on a real uvicorn server on 127.0.0.1 (port 0) in a thread: ``(app, base_url)``."""
    import threading
    import time

    import uvicorn

    from app.main import create_app

    app = create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    port = srv.servers[0].sockets[0].getsockname()[1]
    yield app, f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(10)
    app.state.db.dispose()
