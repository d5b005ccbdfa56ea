"""No 500 from input: hostile parameters get a clear 400/404 in the one error shape, on SQLite and
PostgreSQL, and schemathesis over the OpenAPI schema (bounded examples) finds no server error."""

from __future__ import annotations

import pytest

BIG = "9" * 40
GETS = [f"/entries/{BIG}", f"/api/entries/{BIG}", f"/audit-log?before_id={BIG}", f"/api/decisions?before_id={BIG}",
        f"/api/entries?offset={BIG}", f"/api/entries?limit={BIG}", "/api/snapshots?url=http://[::1",
        "/web/1/http://[::1", "/web/1id_/http://[::1", "/timegate/http://[::1", "/timemap/link/http://[::1",
        "/timemap/json/http://[::1", f"/api/recipes/{BIG}", f"/queue?page={BIG}", f"/api/quotable?limit={BIG}",
        "/api/snapshots?url=http://a.test/%0d%0aX:%20y", f"/api/snapshots?url=http://x.test/&limit={BIG}"]


@pytest.fixture
def backend_client(backend_settings):
    from fastapi.testclient import TestClient

    from app.main import create_app

    app = create_app(backend_settings)
    with TestClient(app, base_url="http://caveat.test", raise_server_exceptions=False) as c:
        yield c
    app.state.db.dispose()


@pytest.mark.parametrize("path", GETS)
def test_hostile_parameters_get_a_clear_client_error(backend_client, path):
    r = backend_client.get(path, headers={"accept": "application/json"})
    assert 400 <= r.status_code < 500, (path, r.status_code, r.text[:200])
    body = r.json()
    assert body["ok"] is False and body["status"] == r.status_code and body["error"]


@pytest.mark.parametrize("body", [{"url": "http://[::1", "q": "x"}, {"url": "ht!tp://x"}, {"snapshot": BIG}])
def test_citation_requests_with_bad_urls_get_a_clear_client_error(backend_client, body):
    r = backend_client.post("/api/citations", json=body)
    assert 400 <= r.status_code < 500, (body, r.status_code, r.text[:200])


def test_schemathesis_finds_no_server_error(app):
    """Property-based requests (schemathesis strategies from our OpenAPI schema, run by hypothesis,
    bounded and derandomized) against every operation: no 5xx."""
    import schemathesis
    from hypothesis import HealthCheck, given
    from hypothesis import settings as hsettings

    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    failures, operations = [], 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @hsettings(max_examples=15, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case):
            response = case.call()
            if response.status_code >= 500:
                failures.append((operation.label, case.path, response.status_code, response.text[:200]))

        run()
    assert operations >= 10
    assert not failures, failures[:5]
