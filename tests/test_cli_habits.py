"""The CLI fits its users' habits: `--json` in the API's shapes, management commands for accounts,
tokens and measurements, a non-zero exit and a clear message when nothing matches, a taken port
named with the way out, and demo sources skipped (not failed) when their sample server is gone."""

from __future__ import annotations

import json
import socket

import pytest
from sqlalchemy import select

from app.models import Recipe, Source
from app.audit.engine import audit_entries
from tests.audit_data import glm_entries, store


def _seed(db) -> str:
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        audit_entries(s, db.settings, summary.entry_ids)
        return s.scalar(select(Recipe.recipe_id))


def test_user_list_and_remove(cli):
    r = cli("user", "list")
    assert r.exit_code == 1 and "caveat user add" in r.output
    assert cli("user", "add", "alice", "--password-stdin", input="a long enough passphrase\n").exit_code == 0
    assert cli("token", "create", "alice", "--name", "importer").exit_code == 0
    r = cli("user", "list", "--json")
    body = json.loads(r.stdout)
    assert r.exit_code == 0 and body["ok"] is True and body["count"] == 1
    assert body["users"][0]["username"] == "alice" and body["users"][0]["live_tokens"] == 1
    assert body["users"][0]["created_at"].endswith("+00:00")
    r = cli("user", "remove", "alice")
    assert r.exit_code == 0 and "deleted user alice" in r.output and "1 token(s) revoked" in r.output
    assert cli("user", "list").exit_code == 1
    r = cli("user", "remove", "alice")
    assert r.exit_code == 1 and "alice" in r.output


def test_user_with_decisions_is_deactivated_not_deleted(cli, db):
    from app.models import Flag
    from app.accounts import auth
    from app.audit import decisions

    _seed(db)
    with db.session() as s:
        user = auth.create_user(s, "rita", "a long enough passphrase")
        flag = s.scalars(select(Flag)).first()
        decisions.decide(s, user, flag.id, "confirm", "checked", settings=db.settings)
    r = cli("user", "remove", "rita")
    assert r.exit_code == 0 and "deactivated" in r.output
    users = json.loads(cli("user", "list", "--json").stdout)["users"]
    assert users[0]["active"] is False and users[0]["decisions"] == 1
    with db.session() as s:
        assert auth.authenticate(s, "rita", "a long enough passphrase") is None


def test_duplicate_live_token_names_are_refused_and_tokens_list_as_json(cli):
    cli("user", "add", "bob", "--password-stdin", input="a long enough passphrase\n")
    assert cli("token", "list").exit_code == 1
    assert cli("token", "create", "bob", "--name", "ci").exit_code == 0
    r = cli("token", "create", "bob", "--name", "ci")
    assert r.exit_code == 1 and "already has a live token named 'ci'" in r.output
    body = json.loads(cli("token", "list", "--json").stdout)
    assert body["count"] == 1 and body["tokens"][0]["name"] == "ci" and body["tokens"][0]["state"] == "live"
    assert "token" not in body["tokens"][0]  # never the secret
    assert cli("token", "revoke", "bob", "--name", "ci").exit_code == 0
    assert cli("token", "create", "bob", "--name", "ci").exit_code == 0  # the name is free again


def test_measurement_list_and_remove(cli, db):
    rid = _seed(db)
    r = cli("measurement", "list")
    assert r.exit_code == 1 and "caveat measurement add" in r.output
    r = cli("measurement", "add", rid, "352.4", "--non-repeating", "--output-checked", "--json")
    m = json.loads(r.stdout)["measurement"]
    assert r.exit_code == 0 and m["counts_as_measured"] is True
    assert json.loads(cli("quote", rid, "--json").stdout)["recipes"][0]["basis"] == "measured"
    body = json.loads(cli("measurement", "list", rid, "--json").stdout)
    assert (body["ok"], body["count"], body["measurements"][0]["id"]) == (True, 1, m["id"])
    r = cli("measurement", "remove", str(m["id"]))
    assert r.exit_code == 0 and "re-audited" in r.output
    assert json.loads(cli("quote", rid, "--json").stdout)["recipes"][0]["basis"] == "steady_state"
    r = cli("measurement", "remove", str(m["id"]))
    assert r.exit_code == 1 and "No measurement" in r.output
    assert cli("measurement", "list", "r-nope").exit_code == 1


def test_json_errors_exit_non_zero_and_an_empty_json_listing_is_a_success(cli, db):
    r = cli("source", "list")
    assert r.exit_code == 1 and "caveat source add" in r.output
    r = cli("source", "list", "--json")     # issue 29: an empty list is a success (set -e scripts)
    assert r.exit_code == 0 and json.loads(r.stdout) == {"ok": True, "count": 0, "sources": []}
    r = cli("quote", "no-such-model", "--json")
    err = json.loads(r.stdout)
    assert r.exit_code == 1 and err["ok"] is False and err["status"] == 404 and "No recipe matches" in err["error"]
    r = cli("audit", "r-nope")
    assert r.exit_code == 1 and "No recipe r-nope; nothing audited" in r.output


def test_source_list_crawl_and_verify_print_json(cli, db, server):
    url = server.route("/board", b"<table><tr><th>Model</th><th>tok/s</th></tr><tr><td>Qwen3-8B</td><td>412.5</td></tr></table>",
                       content_type="text/html")
    assert cli("source", "add", "board", url, "--kind", "html").exit_code == 0
    body = json.loads(cli("source", "list", "--json").stdout)
    assert body["ok"] and body["sources"][0]["name"] == "board" and body["sources"][0]["url"] == url
    r = cli("crawl", "--json")
    body = json.loads(r.stdout)
    assert body["count"] == 1 and body["reports"][0]["source"] == "board" and body["skipped"] == []
    assert body["reports"][0]["snapshot"]
    r = cli("verify", "--json")
    body = json.loads(r.stdout)
    assert r.exit_code == 0 and body["ok"] is True and body["passed"] is True and body["checked"] >= 1
    r = cli("capture", url, "--json")
    body = json.loads(r.stdout)
    assert r.exit_code == 0 and body["captures"][0]["url"] == url and body["captures"][0]["revisit"] is True


def test_demo_sources_are_skipped_not_failed_when_private_addresses_are_refused(cli, db, settings):
    with db.session() as s:
        s.add(Source(name="demo-leaderboard", url="http://127.0.0.1:43671/leaderboard", kind="html"))
    strict = settings.model_copy(update={"allow_private_addresses": False})
    r = cli("crawl", settings_override=strict)
    assert r.exit_code == 1
    assert "demo-leaderboard: skipped" in r.output and "run `caveat demo` again" in r.output
    with db.session() as s:
        assert s.scalar(select(Source.last_status)) is None  # not marked failed


def test_serve_on_a_taken_port_says_which_and_how_to_choose(cli, db):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        r = cli("serve", "--port", str(port))
    finally:
        sock.close()
    assert r.exit_code == 1
    assert f"port {port} on 127.0.0.1 is taken" in r.output and "--port 0" in r.output
    assert "serving on" not in r.output  # no URL printed for a server that never started


@pytest.mark.parametrize("cmd", [("source", "list"), ("crawl",), ("capture",), ("verify",), ("quote",),
                                 ("measurement", "list"), ("user", "list"), ("token", "list"), ("audit",)])
def test_commands_that_print_results_take_json(cli, cmd):
    r = cli(*cmd, "--help")
    assert r.exit_code == 0 and "--json" in r.output
