"""`caveat demo --no-serve`: the bundled pages are served on 127.0.0.1, crawled into a fresh data folder,
audited, and a reviewer account works; the UI then shows the GLM-5.3-Flash entry."""

from __future__ import annotations

import json
import re

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.demo.run import DEMO_DIR, DemoSite, demo_sources
from app.audit.queue import clear_cache

import scrapers


def run_demo_cli(cli, data_dir, *extra):
    return cli("demo", "--no-serve", "--data-dir", str(data_dir), "--port", "0", *extra)


def test_bundled_pages_cover_every_kind_and_parse():
    sources = demo_sources()
    assert {s["kind"] for s in sources} == {"json", "html", "markdown", "text"}
    for s in sources:
        body = (DEMO_DIR / s["file"]).read_bytes()
        result = scrapers.parse(body, kind=s["kind"], content_type=s["content_type"])
        assert result.entries, s["file"]
    html = next(s for s in sources if s["kind"] == "html")
    ladder = [e.fields for e in scrapers.parse((DEMO_DIR / html["file"]).read_bytes(), kind="html").entries
              if e.fields.get("model") == "GLM-5.3-Flash"]
    assert sorted((f["draft_tokens"], f["headline_tps"]) for f in ladder) == [
        (8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]


def test_demo_site_serves_the_pages_on_loopback():
    import httpx

    site = DemoSite().start()
    try:
        assert site.base_url.startswith("http://127.0.0.1:")
        for s in demo_sources():
            r = httpx.get(site.base_url + s["path"])
            assert r.status_code == 200 and r.headers["content-type"] == s["content_type"]
            assert r.content == (DEMO_DIR / s["file"]).read_bytes()
        assert httpx.get(site.base_url + "/nope").status_code == 404
    finally:
        site.stop()


def test_demo_crawls_audits_and_makes_a_reviewer(cli, tmp_path):
    clear_cache()
    folder = tmp_path / "demo-data"
    result = run_demo_cli(cli, folder)
    out = result.output
    assert result.exit_code == 0, out
    assert f"data folder: {folder.resolve()}" in out
    for s in demo_sources():
        assert re.search(rf"crawled {s['name']}: (ok|warnings), \d+ new", out), out
    m = re.search(r"reviewer login: (\S+) / (\S+)", out)
    username, password = m.groups()
    entry = int(re.search(r"GLM-5.3-Flash entry: \S+/entries/(\d+)", out).group(1))
    assert (folder / "caveat.db").exists() and list((folder / "warcs").iterdir())

    settings = Settings(data_dir=folder, secret_key="demo-test", base_url="http://caveat.test")
    app = create_app(settings)
    try:
        with TestClient(app, base_url="http://caveat.test") as client:
            q = client.get("/queue.json?severity=critical").json()
            glm = next(e for e in q["entries"] if e["id"] == entry)
            assert glm["model"] == "GLM-5.3-Flash" and glm["headline_tps"] == 1004.9 and glm["working_tps"] == 373
            page = client.get(f"/entries/{entry}.json").json()
            assert len(page["chart"]["points"]) == 6 and page["chart"]["band"]["low"] == 373
            sources = client.get("/sources.json").json()["sources"]
            assert len(sources) == 4 and all(s["last_status"] in ("ok", "warnings") for s in sources)
            # the printed login works
            login = BeautifulSoup(client.get("/login").text, "html.parser")
            token = login.find("input", {"name": "csrf_token"})["value"]
            r = client.post("/login", data={"username": username, "password": password, "csrf_token": token},
                            follow_redirects=False)
            assert r.status_code == 303
    finally:
        app.state.db.dispose()

    # a second run reuses the folder: same entries, nothing duplicated, a new password
    again = run_demo_cli(cli, folder)
    assert again.exit_code == 0 and "reused an existing demo folder" in again.output
    assert re.search(r"crawled demo-leaderboard: ok, 0 new, 0 changed, 8 unchanged", again.output), again.output
    assert re.search(r"reviewer login: \S+ / (\S+)", again.output).group(1) != password


def test_demo_respects_caveat_data_dir(cli, tmp_path, monkeypatch):
    folder = tmp_path / "from-env"
    monkeypatch.setenv("CAVEAT_DATA_DIR", str(folder))
    result = cli("demo", "--no-serve", "--port", "0", settings_override=Settings(data_dir=folder))
    assert result.exit_code == 0, result.output
    assert f"data folder: {folder.resolve()}" in result.output and (folder / "caveat.db").exists()


def test_demo_help_has_an_example(cli):
    out = cli("demo", "--help").output
    assert "Example:" in out and "--no-serve" in out and "--port" in out


@pytest.mark.parametrize("name", ["sources.json"])
def test_demo_manifest_points_at_bundled_files(name):
    data = json.loads((DEMO_DIR / name).read_text())
    assert all((DEMO_DIR / s["file"]).is_file() for s in data["sources"])
