"""Issue 24, item 11: the smaller holes. Sign-in limits that a forged `X-Forwarded-For` cannot dodge
and an attacker cannot turn against the account's owner, a health check that asks the database, data
files only their owner can read, webhook secrets a copy of the database does not leak. Each runs
against a real `caveat serve` on 127.0.0.1 where a server is involved."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.accounts import auth
from app.db import Database

ROOT = Path(__file__).resolve().parent.parent


class Served:
    """`caveat serve --port 0` in a subprocess on ``data_dir``; ``url`` once it listens."""

    def __init__(self, data_dir: Path, **env: str):
        full = {**os.environ, "PYTHONPATH": str(ROOT), "CAVEAT_DATA_DIR": str(data_dir),
                "CAVEAT_SECRET_KEY": "test-secret-key", **env}
        full.pop("CAVEAT_DATABASE_URL", None)
        self.proc = subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "serve", "--port", "0"],
                                     env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output, m = "", None
        for line in self.proc.stdout:  # lines before "serving on" (e.g. what was done at start) are kept
            self.output += line
            m = re.search(r"serving on (http://\S+?)/?$", line.strip())
            if m:
                break
        if not m:
            self.output += self.proc.stdout.read() if self.proc.poll() is not None else ""
            self.stop()
            raise AssertionError(f"caveat serve did not start: {self.output}")
        self.url = m.group(1).rstrip("/")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/login", timeout=2)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("caveat serve never answered")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def served(settings):
    started: list[Served] = []

    def start(**env) -> Served:
        s = Served(settings.data_dir, **env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def _add_user(settings, name="alice", pw="correct horse") -> None:
    db = Database(settings)
    with db.session() as s:
        auth.create_user(s, name, pw)
    db.dispose()


def _attempt(client: httpx.Client, username: str, password: str, headers: dict | None = None) -> httpx.Response:
    page = client.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    return client.post("/login", data={"username": username, "password": password, "next": "/queue",
                                       "csrf_token": token}, headers=headers or {}, follow_redirects=False)


# -- (a) X-Forwarded-For only from trusted proxies ------------------------------------------------------
def test_forwarded_for_from_an_untrusted_peer_does_not_reset_the_client_limit(settings, served):
    """A loopback peer used to get a fresh client address per attempt by sending `X-Forwarded-For`
    (uvicorn trusted it from 127.0.0.1): spraying accounts past the per-client limit now gets 429."""
    srv = served(CAVEAT_LOGIN_LIMIT_CLIENT="3 per 15 minutes")
    with httpx.Client(base_url=srv.url) as c:
        codes = [_attempt(c, f"victim{i}", "wrong horse", {"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                 for i in range(5)]
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429], codes


def test_forwarded_for_is_read_from_a_configured_proxy(settings, served):
    """Behind a configured proxy each forwarded client has its own limit (and a client cannot spoof
    the part the proxy appended: the right-most untrusted address counts)."""
    srv = served(CAVEAT_LOGIN_LIMIT_CLIENT="2 per 15 minutes", CAVEAT_TRUSTED_PROXIES="127.0.0.1")
    with httpx.Client(base_url=srv.url) as c:
        for i in range(4):  # four clients behind the proxy, one failure each: nobody is limited
            assert _attempt(c, f"v{i}", "wrong horse", {"X-Forwarded-For": f"203.0.113.{i}"}).status_code == 401
        # one client that prepends forged addresses is still the address the proxy appended
        forged = [_attempt(c, f"w{i}", "wrong horse", {"X-Forwarded-For": f"10.9.9.{i}, 198.51.100.7"}).status_code
                  for i in range(3)]
    assert forged == [401, 401, 429]


def test_a_bad_trusted_proxies_entry_is_an_error_at_start():
    from pydantic import ValidationError

    from app.config import Settings

    with pytest.raises(ValidationError, match="not an IP address or network"):
        Settings(trusted_proxies="127.0.0.1, proxy.example")


# -- (b) the account lockout slows the attacker, not the owner ---------------------------------------
def test_an_attacker_exhausting_the_account_limit_does_not_lock_out_its_owner(settings, served):
    """The owner's browser signed in before (it holds a device cookie for the account); an attacker
    then fails ten times. The attacker, and any browser new to the account, now wait; the owner's
    browser signs in with the right password, and its own wrong guesses are limited separately."""
    _add_user(settings)
    srv = served(CAVEAT_LOGIN_LIMIT_ACCOUNT="5 per 15 minutes", CAVEAT_TRUSTED_PROXIES="127.0.0.1")
    owner_ip, attacker_ip = {"X-Forwarded-For": "198.51.100.1"}, {"X-Forwarded-For": "203.0.113.66"}
    with httpx.Client(base_url=srv.url) as owner, httpx.Client(base_url=srv.url) as attacker, \
            httpx.Client(base_url=srv.url) as stranger:
        assert _attempt(owner, "alice", "correct horse", owner_ip).status_code == 303
        assert auth.DEVICE_COOKIE in owner.cookies
        owner.cookies.delete(auth.SESSION_COOKIE)  # signed out; the device cookie stays
        for _ in range(10):
            assert _attempt(attacker, "alice", "wrong horse", attacker_ip).status_code in (401, 429)
        assert _attempt(attacker, "alice", "correct horse", attacker_ip).status_code == 429
        assert _attempt(stranger, "alice", "correct horse", {"X-Forwarded-For": "192.0.2.5"}).status_code == 429
        assert _attempt(owner, "alice", "correct horse", owner_ip).status_code == 303  # not locked out
        owner.cookies.delete(auth.SESSION_COOKIE)
        mine = [_attempt(owner, "alice", "wrong horse", owner_ip).status_code for _ in range(6)]
        assert mine[:5] == [401] * 5 and mine[5] == 429  # a stolen device cookie is no free pass


# -- (c) health asks the database ---------------------------------------------------------------------
def _scribble_table(path: str, table: str) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    con.close()
    data = bytearray(Path(path).read_bytes())
    start = (root - 1) * page
    data[start:start + page] = bytes([0x5A]) * page  # the table's root page is garbage now
    Path(path).write_bytes(bytes(data))


def test_health_is_503_on_a_corrupted_database_whose_pages_fail(settings, served):
    from sqlalchemy import insert

    from app.models import Source

    db = Database(settings)
    with db.session() as s:
        s.execute(insert(Source).values(name="board", url="https://example.com/board", kind="html"))
    db.dispose()
    srv = served()
    assert httpx.get(srv.url + "/api/health").json()["ok"] is True
    srv.stop()
    _scribble_table(settings.db_url.removeprefix("sqlite:///"), "sources")
    srv = served()  # it still starts (the migration table is intact) ...
    assert httpx.get(srv.url + "/api/sources").status_code == 500  # ... and pages fail
    r = httpx.get(srv.url + "/api/health")
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["ok"] is False and "database cannot be read" in body["error"] and "malformed" in body["error"]


# -- (d) private data files, sealed webhook secrets ----------------------------------------------------
def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_init_makes_the_database_and_keys_owner_only_and_seals_hook_secrets(tmp_path, cli):
    """`caveat.db`, its WAL and the keys were 0644 under the usual umask, and the database held webhook
    secrets in plaintext: a copy of it (or any local user) could sign forged deliveries."""
    from tests.conftest import make_settings

    old = os.umask(0o022)
    try:
        data = tmp_path / "fresh"
        s = make_settings(tmp_path, f"sqlite:///{data / 'caveat.db'}", data_dir=data, secret_key=None)
        assert cli("init", settings_override=s).exit_code == 0
        secret = "hook-secret-that-must-not-leak-42"
        r = cli("hook", "add", "https://receiver.example/hook", "--secret", secret, settings_override=s)
        assert r.exit_code == 0, r.output
        s.get_secret_key()
        files = sorted(p for p in data.iterdir() if p.name.startswith("caveat.db"))
        assert any(p.name.endswith("-wal") for p in files), files
        for p in [*files, data / "secret_key", data / "signing_key.pem", data / "hook_secrets.key"]:
            assert _mode(p) == 0o600, (p.name, oct(_mode(p)))
        raw = b"".join(p.read_bytes() for p in files)
        assert secret.encode() not in raw  # neither in the database nor in its WAL
        db = Database(s)
        with db.session() as session:
            from app.models import Hook
            from app.watch.hooks import open_secret

            stored = session.query(Hook).one().secret
            assert stored.startswith("sealed:v1:") and open_secret(s, stored) == secret
        db.dispose()
    finally:
        os.umask(old)


def test_serve_fixes_the_modes_of_an_existing_installation_and_seals_old_secrets(settings, served):
    from sqlalchemy import insert

    from app.models import Hook

    db = Database(settings)
    with db.session() as s:  # a hook stored in plaintext, as before sealing
        s.execute(insert(Hook).values(url="https://receiver.example/h", secret="old-plaintext-secret-1234",
                                      cited_only=False, active=True))
    db.dispose()
    path = Path(settings.db_url.removeprefix("sqlite:///"))
    for p in path.parent.iterdir():
        if p.name.startswith("caveat.db"):
            p.chmod(0o644)
    srv = served()
    assert httpx.get(srv.url + "/api/health").status_code == 200
    assert "sealed 1 webhook secret" in srv.output
    for p in path.parent.iterdir():
        if p.name.startswith("caveat.db"):
            assert _mode(p) == 0o600, (p.name, oct(_mode(p)))
    db = Database(settings)
    with db.session() as s:
        assert s.query(Hook).one().secret.startswith("sealed:v1:")
    db.dispose()


def test_a_sealed_secret_does_not_open_with_another_installations_key(tmp_path):
    from archive import sealing

    a, b = tmp_path / "a.key", tmp_path / "b.key"
    sealed = sealing.seal(a, "the secret", b"ctx")
    assert sealing.unseal(a, sealed, b"ctx") == "the secret"
    with pytest.raises(sealing.SealError, match="does not open"):
        sealing.unseal(b if sealing.seal(b, "x") else b, sealed, b"ctx")
    with pytest.raises(sealing.SealError, match="missing"):
        sealing.unseal(tmp_path / "none.key", sealed, b"ctx")
    assert sealing.unseal(a, "plain-from-before", b"ctx") == "plain-from-before"
