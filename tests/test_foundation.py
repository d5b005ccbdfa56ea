"""Foundation: settings, migrations on SQLite and PostgreSQL, the migration guard, CLI help."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import inspect

from app.cli import main
from app.config import Settings
from app.db import Database
from app.errors import NotMigrated

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_documented():
    doc = (ROOT / "docs" / "settings.md").read_text()
    for name in Settings.model_fields:
        assert f"CAVEAT_{name.upper()}" in doc, f"CAVEAT_{name.upper()} missing from docs/settings.md"


def test_settings_read_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CAVEAT_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("CAVEAT_MAX_REDIRECTS", "3")
    s = Settings()
    assert s.data_dir == tmp_path / "d"
    assert s.max_redirects == 3
    assert s.db_url == f"sqlite:///{(tmp_path / 'd' / 'caveat.db').resolve()}"


def test_migrations_reach_head(backend_db):
    assert backend_db.current_revision() == backend_db.head_revision()
    tables = set(inspect(backend_db.engine).get_table_names())
    assert {"snapshots", "sources", "entries", "entry_versions", "flags", "decisions", "users"} <= tables


def test_unmigrated_database_is_refused_with_a_message_naming_init(tmp_path):
    s = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(NotMigrated, match="caveat init"):
        Database(s).require_migrated()
    from app.main import create_app

    with pytest.raises(NotMigrated, match="caveat init"):
        create_app(s)


def test_cli_refuses_unmigrated_database(tmp_path, cli):
    s = Settings(data_dir=tmp_path / "x", database_url=f"sqlite:///{tmp_path / 'x.db'}")
    result = cli("serve", "--port", "1", settings_override=s)
    assert result.exit_code == 1
    assert "caveat init" in result.output


def test_init_creates_folder_and_migrates(tmp_path, cli):
    s = Settings(data_dir=tmp_path / "fresh", database_url=None)
    r = cli("init", settings_override=s)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "fresh" / "caveat.db").exists()
    assert (tmp_path / "fresh" / "warcs").is_dir()
    assert Database(s).current_revision() == Database(s).head_revision()
    r2 = cli("init", settings_override=s)
    assert "already at" in r2.output


def _all_commands(group, prefix=()):
    import click

    commands = group.load_all() if hasattr(group, "load_all") else group.commands  # the top group is lazy
    for name, cmd in commands.items():
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _all_commands(cmd, prefix + (name,))


def test_every_command_has_help_with_an_example():
    for path, cmd in _all_commands(main):
        text = cmd.help or ""
        assert text.strip(), f"caveat {' '.join(path)} has no help"
        import click

        if not isinstance(cmd, click.Group):
            assert re.search(r"Examples?:", text), f"caveat {' '.join(path)} help has no example"


def test_health_and_error_shape(client):
    r = client.get("/api/health")
    assert r.status_code == 200 and r.json()["ok"] is True
    r = client.get("/api/nothing-here")
    assert r.status_code == 404
    assert r.json() == {"ok": False, "error": "Nothing at /api/nothing-here.", "status": 404}
    r = client.get("/nothing-here", headers={"accept": "text/html"})
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    assert "Nothing at /nothing-here." in r.text


def test_serve_uses_its_own_address_in_absolute_urls_unless_base_url_is_set(monkeypatch):
    from app.cli.core import serving_settings

    monkeypatch.delenv("CAVEAT_BASE_URL", raising=False)
    assert serving_settings(Settings(), "127.0.0.1", 18731).base_url == "http://127.0.0.1:18731"
    assert serving_settings(Settings(), "0.0.0.0", 80).base_url == "http://127.0.0.1:80"
    monkeypatch.setenv("CAVEAT_BASE_URL", "https://caveat.example")
    assert serving_settings(Settings(), "127.0.0.1", 18731).base_url == "https://caveat.example"
