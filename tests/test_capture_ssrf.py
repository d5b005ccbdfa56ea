"""Internal addresses are refused after DNS resolution and on every redirect hop."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.models import Snapshot
from app.capture.http import capture_urls
from archive.fetcher import Fetcher, FetchError, Limits, address_problem
from tests.capture_helpers import db_with


@pytest.mark.parametrize("ip, problem", [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
    ("10.1.2.3", "private"), ("192.168.0.10", "private"), ("172.16.5.4", "private"), ("fc00::1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("224.0.0.1", "multicast"),
    ("0.0.0.0", "unspecified"), ("100.64.0.1", "not globally routable"), ("240.0.0.1", "reserved"),
    ("8.8.8.8", None), ("2606:4700:4700::1111", None),
])
def test_address_classification(ip, problem):
    assert address_problem(ip) == problem


def test_loopback_refused_when_private_addresses_not_allowed(db, server):
    url = server.route("/secret", "internal")
    strict = db_with(db.settings, allow_private_addresses=False)
    [r] = capture_urls(strict, [url])
    assert r.error and "refused: 127.0.0.1 is a loopback address" in r.error
    assert "CAVEAT_ALLOW_PRIVATE_ADDRESSES=1" in r.error
    assert server.requests == []  # refused before any byte was sent


def test_host_name_is_checked_after_dns_resolution(db, server):
    server.route("/secret", "internal")
    strict = db_with(db.settings, allow_private_addresses=False)
    [r] = capture_urls(strict, [f"http://localhost:{server.port}/secret"])
    assert r.error and "localhost resolves to" in r.error and "loopback" in r.error
    assert server.requests == []


def test_redirect_target_is_checked_too(server):
    """Only 127.0.0.1 is allowed here; a redirect to another address is refused at its hop."""
    server.redirect("/jump", "http://127.0.0.2:9/internal")
    only_first = Limits(allow_private=False, address_check=lambda ip: None if ip == "127.0.0.1" else "test-internal")
    fetcher = Fetcher(only_first)
    try:
        with pytest.raises(FetchError) as info:
            fetcher.fetch(server.url("/jump"))
    finally:
        fetcher.close()
    assert info.value.url == "http://127.0.0.2:9/internal"
    assert "127.0.0.2 is a test-internal address" in info.value.message
    assert [r["path"] for r in server.requests] == ["/jump"]


def test_refused_capture_writes_no_rows(db, server, cli):
    url = server.route("/x", "x")
    strict = db.settings.model_copy(update={"allow_private_addresses": False})
    result = cli("capture", url, settings_override=strict)
    assert result.exit_code == 1 and "loopback" in result.output
    with db.Session() as s:
        assert s.scalar(select(func.count()).select_from(Snapshot)) == 0
