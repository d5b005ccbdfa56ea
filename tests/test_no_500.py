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


def test_schemathesis_finds_no_server_error_and_every_answer_matches_its_schema(live_app):
    """Property-based requests (schemathesis strategies from the OpenAPI schema the running server
    publishes at /openapi.json, run by hypothesis, bounded and derandomized) against every operation of
    a real uvicorn server on 127.0.0.1: no 5xx, every status code documented, every body of the content
    type and the schema the document gives for that status."""
    import schemathesis
    from hypothesis import HealthCheck, given
    from hypothesis import settings as hsettings
    from schemathesis.checks import (content_type_conformance, not_a_server_error, response_schema_conformance,
                                     status_code_conformance)

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    _app, base = live_app
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    failures, operations = [], 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @hsettings(max_examples=15, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case):
            response = case.call(base_url=base)
            try:
                case.validate_response(response, checks=checks)
            except Exception as exc:  # a check failed: keep going, report them all at the end
                failures.append((operation.label, case.path, response.status_code, str(exc)[:300]))

        run()
    assert operations >= 18
    assert not failures, failures[:5]


@pytest.mark.parametrize("url", ["http://[::1", "http://a.test/\tx", "http://０１２.test/", "http://0177.0.0.1/",
                                 "http://" + "a" * 100_000 + ".test/", "http://a.test/\r\nX: y", "javascript:alert(1)"])
def test_cli_urls_that_do_not_parse_get_one_line_saying_why(cli, url):
    r = cli("capture", url)
    assert r.exit_code == 1
    assert "Traceback" not in r.output
    line = next(x for x in r.output.splitlines() if x.startswith("error"))
    assert ("not a valid URL" in line or "control characters" in line or "non-ASCII digits" in line
            or "ambiguous" in line or "characters long" in line or "only http and https" in line), line
