"""Issue 29, what a new user trips on at the command line: the public base URL recorded in the data
folder (item 3), missing databases and folders (item 4), export-wacz (item 5), --json everywhere (item 6)."""

from __future__ import annotations

import json
import shutil

import click
import pytest
from click.testing import CliRunner

from app.cli import main
from app.cli.context import CliContext
from app.config import Settings
from app.db import Database
from app.models import Snapshot
from sqlalchemy import select
from tests.test_import import warcio_record


@pytest.fixture
def bare(tmp_path, sqlite_template, monkeypatch):
    """A migrated data folder whose settings name no base URL (as a new user's would)."""
    monkeypatch.delenv("CAVEAT_BASE_URL", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(sqlite_template, data / "caveat.db")
    runner = CliRunner()

    def run(*args):
        s = Settings(data_dir=data, database_url=f"sqlite:///{data / 'caveat.db'}", allow_private_addresses=True,
                     secret_key="k")
        return runner.invoke(main, list(args), obj=CliContext(s), catch_exceptions=False)

    def run_input(*args, input=None):
        s = Settings(data_dir=data, database_url=f"sqlite:///{data / 'caveat.db'}", secret_key="k")
        return runner.invoke(main, list(args), obj=CliContext(s), input=input, catch_exceptions=False)

    run.data = data
    run.input = run_input
    return run


def test_no_base_url_known_prints_ids_not_a_guessed_link_then_the_recorded_one(bare, tmp_path):
    path = tmp_path / "a.warc.gz"
    path.write_bytes(warcio_record("http://a.test/one", b"<p>first</p>", date="2026-05-01T10:00:00Z"))
    r = bare("import-warc", str(path))
    assert r.exit_code == 0, r.output
    assert "127.0.0.1:8000" not in r.stdout and "/c/" not in r.stdout
    cid = r.stdout.split()[0]
    r = bare("config", "base-url", "https://caveat.example.org/")
    assert r.exit_code == 0 and "https://caveat.example.org" in r.output
    assert (bare.data / "base_url").read_text().strip() == "https://caveat.example.org"
    assert Settings(data_dir=bare.data).base_url == "https://caveat.example.org"
    path.write_bytes(warcio_record("http://a.test/two", b"<p>second</p>", date="2026-05-01T10:00:01Z"))
    r = bare("import-warc", str(path))
    assert "https://caveat.example.org/c/" in r.stdout
    r = bare("config", "base-url", "--json")
    assert json.loads(r.output)["base_url"] == "https://caveat.example.org"
    r = bare("config", "base-url", "not a url")
    assert r.exit_code == 1 and "public base URL" in r.output
    r = bare("withdraw", cid, "--reason", "test")
    assert "https://caveat.example.org/c/" + cid in r.output


def test_init_records_the_base_url(bare):
    r = bare("init", "--base-url", "http://127.0.0.1:8123")
    assert r.exit_code == 0, r.output
    assert "public base URL http://127.0.0.1:8123" in r.output
    assert Settings(data_dir=bare.data).base_url == "http://127.0.0.1:8123"


def test_first_serve_records_its_address(bare, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    r = bare("serve", "--port", "0")
    assert r.exit_code == 0, r.output
    recorded = (bare.data / "base_url").read_text().strip()
    assert recorded.startswith("http://127.0.0.1:") and "public base URL recorded" in r.output
    r = bare("serve", "--port", "0")
    assert "recorded" not in r.output and (bare.data / "base_url").read_text().strip() == recorded


def test_reindex_rebuilds_a_lost_database(bare, tmp_path):
    path = tmp_path / "a.warc.gz"
    path.write_bytes(warcio_record("http://a.test/one", b"<p>first</p>", date="2026-05-01T10:00:00Z"))
    cid = bare("import-warc", str(path)).stdout.split()[0]
    (bare.data / "caveat.db").unlink()
    r = bare("reindex")
    assert r.exit_code == 0, r.output
    assert "reindexed" in r.output
    db = Database(Settings(data_dir=bare.data))
    with db.Session() as s:
        assert s.scalars(select(Snapshot.citation_id)).all() == [cid]
    db.dispose()


@pytest.mark.parametrize("args", [("quote", "x"), ("source", "list"), ("capture", "http://a.test/"),
                                  ("user", "list"), ("verify",)])
def test_read_commands_never_create_a_missing_data_folder(tmp_path, monkeypatch, args):
    typo = tmp_path / "typo"
    s = Settings(data_dir=typo, secret_key="k")
    r = CliRunner().invoke(main, list(args), obj=CliContext(s))
    assert r.exit_code == 1, r.output
    assert "No Caveat data folder" in r.output and "caveat init" in r.output
    assert not typo.exists()
    assert "Traceback" not in r.output


def test_export_wacz_checks_folder_extension_and_overwrite(bare, tmp_path):
    path = tmp_path / "a.warc.gz"
    path.write_bytes(warcio_record("http://a.test/one", b"<p>first</p>", date="2026-05-01T10:00:00Z"))
    assert bare("import-warc", str(path)).exit_code == 0
    r = bare("export-wacz", str(tmp_path / "nope" / "x.wacz"))
    assert r.exit_code == 1 and "No folder" in r.output and "Traceback" not in r.output
    page = tmp_path / "index.html"
    page.write_text("<p>mine</p>")
    r = bare("export-wacz", str(page))
    assert r.exit_code == 1 and ".wacz" in r.output and page.read_text() == "<p>mine</p>"
    out = tmp_path / "out.wacz"
    r = bare("export-wacz", str(out), "--json")
    assert r.exit_code == 0, r.output
    body = json.loads(r.stdout)
    assert body["ok"] is True and body["snapshots"] == 1 and list(body)[0] == "ok"
    r = bare("export-wacz", str(out))
    assert r.exit_code == 1 and "exists" in r.output and "--force" in r.output
    assert bare("export-wacz", str(out), "--force").exit_code == 0


def test_import_warc_json(bare, tmp_path):
    path = tmp_path / "a.warc.gz"
    path.write_bytes(warcio_record("http://a.test/one", b"<p>first</p>", date="2026-05-01T10:00:00Z"))
    body = json.loads(bare("import-warc", str(path), "--json").stdout)
    assert body["ok"] and body["files"][0]["imported"][0]["url"] == "http://a.test/one"
    assert body["files"][0]["imported"][0]["citation_url"] is None


# Commands that print no result a script would read (servers, one-line confirmations of an action).
NO_JSON = {"db copy", "demo", "hook remove", "reinstate", "restrict", "serve", "source remove", "source set",
           "token revoke", "user add", "user password", "user sessions", "withdraw", "worker"}


def _walk(group, path=()):
    commands = group.load_all() if hasattr(group, "load_all") else group.commands  # the top group is lazy
    for name, cmd in sorted(commands.items()):
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, path + (name,))
        else:
            yield path + (name,), cmd


def test_every_command_has_help_with_an_example_and_json_where_it_prints_results():
    commands = list(_walk(main))
    assert len(commands) > 30
    runner = CliRunner()
    missing_json = set()
    for path, cmd in commands:
        r = runner.invoke(main, [*path, "--help"])
        assert r.exit_code == 0, (path, r.output)
        assert "Example" in r.output, f"`caveat {' '.join(path)} --help` shows no example"
        if "--json" not in {o for p in cmd.params for o in getattr(p, "opts", [])}:
            missing_json.add(" ".join(path))
    assert missing_json == NO_JSON
    for named in ("export-wacz", "import-warc", "reindex", "reparse", "init", "source add", "token create"):
        assert named not in missing_json


@pytest.mark.parametrize("args", [("user", "list"), ("measurement", "list"), ("source", "list"),
                                  ("hook", "list"), ("token", "list"), ("changes",)])
def test_an_empty_listing_is_a_success(cli, args):
    r = cli(*args, "--json")
    assert r.exit_code == 0, r.output
    body = json.loads(r.stdout)
    assert body["ok"] is True and body["count"] == 0


def test_json_on_init_reindex_source_add_token_create_reparse(bare):
    body = json.loads(bare("init", "--json").stdout)
    assert body["ok"] and body["revision"] and body["base_url"] is None
    body = json.loads(bare("reindex", "--json").stdout)
    assert body["ok"] and body["created_schema"] is False and "indexed" in body
    body = json.loads(bare("source", "add", "b", "https://example.org/b", "--json").stdout)
    assert body["ok"] and body["source"]["name"] == "b"
    assert bare.input("user", "add", "alice", "--password-stdin", input="a long password\n").exit_code == 0
    r = bare("token", "create", "alice", "--name", "ci", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["token"]
    body = json.loads(bare("reparse", "--json").stdout)
    assert body["count"] == 1 and body["reports"][0]["source"] == "b"    # never crawled: nothing to reparse
