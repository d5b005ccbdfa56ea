"""Browser sources without a browser: the `browser` setting through the CLI and the API, the
allow-list setting's parsing, and the migration's column on both databases."""

from __future__ import annotations

import pytest

from app.db import Database
from app.accounts import auth


def test_post_api_sources_adds_a_browser_source_with_the_admin_scope(backend_settings):
    from fastapi.testclient import TestClient

    from app.main import create_app

    app = create_app(backend_settings)
    with app.state.db.Session() as s:
        auth.create_user(s, "alice", "correct horse battery")
        admin = auth.create_token(s, "alice", "admin", "admin", 30)
        reader = auth.create_token(s, "alice", "reader", "read", 30)
        s.commit()
    body = {"name": "jsboard", "url": "https://example.org/board", "browser": True}
    with TestClient(app, base_url="http://caveat.test") as c:
        assert c.post("/api/sources", json=body).status_code in (401, 403)
        r = c.post("/api/sources", json=body, headers={"Authorization": f"Bearer {reader}"})
        assert r.status_code == 403 and "admin" in r.json()["error"]
        r = c.post("/api/sources", json=body, headers={"Authorization": f"Bearer {admin}"})
        assert r.status_code == 201, r.text
        assert r.json()["source"]["browser"] is True and r.json()["source"]["kind"] is None
        r = c.post("/api/sources", json=body, headers={"Authorization": f"Bearer {admin}"})
        assert r.status_code == 409
        listed = c.get("/api/sources").json()["sources"]
        assert [(x["name"], x["browser"]) for x in listed] == [("jsboard", True)]
    app.state.db.dispose()


def test_source_add_browser_flag_is_stored_and_listed(cli, settings):
    out = cli("source", "add", "plain", "https://example.org/a")
    assert out.exit_code == 0 and "browser" not in out.output
    out = cli("source", "add", "js", "https://example.org/b", "--browser")
    assert out.exit_code == 0 and "captured with the browser" in out.output
    out = cli("source", "list", "--json")
    import json

    got = {x["name"]: x["browser"] for x in json.loads(out.output)["sources"]}
    assert got == {"plain": False, "js": True}


@pytest.mark.parametrize("bad", ["127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:99999", "host:port"])
def test_allow_private_hosts_refuses_entries_that_are_not_host_port(settings, bad):
    with pytest.raises(ValueError, match="not host:port"):
        settings.model_validate({**settings.model_dump(), "allow_private_hosts": bad})


def test_allow_private_hosts_parses_ipv6_and_names(settings):
    from archive.fetcher import parse_allowed_hosts

    assert parse_allowed_hosts(" 127.0.0.1:8765, [::1]:9000,Localhost:80 ") == {
        ("127.0.0.1", 8765), ("::1", 9000), ("localhost", 80)}
    Database(settings).dispose()
