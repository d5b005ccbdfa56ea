"""Issue 29 item 12 (pages): ``Accept: application/json`` answers JSON on the entry, recipe and
citation pages as it does for a 404 (one rule, ``app.views.rendering.accepts_json``); ``/c/{id}.json``
puts ``ok`` first, as docs/api.md and docs/ui.md say of every JSON answer."""

from __future__ import annotations

from tests.test_views import glm  # noqa: F401  (fixture)

JSON = {"Accept": "application/json"}
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_accept_json_gets_the_twin_on_every_page(client, glm):  # noqa: F811
    pages = [f"/entries/{glm['top']}", f"/recipes/{glm['recipe']}", f"/c/{glm['snapshot']}", "/queue",
             "/sources", "/changes", "/audit-log"]
    for path in pages:
        r = client.get(path, headers=JSON)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json"), path
        body = r.json()
        assert list(body)[0] == "ok", path
        twin = client.get(path + ".json").json()
        assert set(body) == set(twin), path
        assert "Accept" in r.headers.get("vary", ""), path
        html = client.get(path, headers=BROWSER)
        assert html.headers["content-type"].startswith("text/html"), path
    # the same rule as the error handler
    missing = client.get("/entries/999999", headers=JSON)
    assert missing.status_code == 404 and missing.json()["ok"] is False
    assert client.get("/entries/999999", headers=BROWSER).headers["content-type"].startswith("text/html")


def test_citation_json_puts_ok_first(client, glm):  # noqa: F811
    body = client.get(f"/c/{glm['snapshot']}.json").json()
    assert list(body)[0] == "ok"
