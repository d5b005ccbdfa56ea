"""Browser captures (issue 16): a real Chromium whose every request goes through Caveat's guarded
fetcher, on a fixture site on 127.0.0.1. The WARC files are judged by warcio check, gzip -t and
cdxj-indexer; entries are parsed from the rendered table and cited inside the rendered page."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import func, select

from app.db import Database
from app.models import Entry, Snapshot
from app.capture.browser import capture_browser_urls, page_records
from app.storage.snapshots import load_record
from tests.browser_site import Site, png_header, red_pixels, wait_for
from tests.capture_helpers import CLI, cli_env, ref_tool, run, warc_files

CHROMIUM = os.environ.get("CAVEAT_CHROMIUM", "/usr/bin/chromium")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found (make system-packages)")]


@pytest.fixture
def site():
    s = Site()
    yield s
    s.stop()


def guarded(settings, site, **more):
    """Settings that refuse internal addresses except the site's two allowed origins."""
    values = dict(allow_private_addresses=False, allow_private_hosts=site.allow, browser_executable=CHROMIUM,
                  browser_settle=0.2)
    values.update(more)
    return settings.model_copy(update=values)


def rows(db) -> int:
    with db.Session() as s:
        return s.scalar(select(func.count()).select_from(Snapshot))


def test_the_allow_list_lets_exactly_its_host_port_entries_through(settings, site):
    from archive.fetcher import FetchError, Fetcher, Limits, parse_allowed_hosts

    allowed = parse_allowed_hosts(site.allow)
    f = Fetcher(Limits(allow_hosts=allowed))
    try:
        assert f.fetch(site.url("/style.css"))[0].status == 200
        with pytest.raises(FetchError) as exc:  # same host, another port
            f.fetch(site.forbidden.url("/collect"))
        assert exc.value.kind == "address" and "CAVEAT_ALLOW_PRIVATE_HOSTS" in exc.value.message
        with pytest.raises(FetchError):  # same port, named differently is not the entry either way round
            Fetcher(Limits(allow_hosts=parse_allowed_hosts(f"10.0.0.1:{site.main.port}"))).fetch(site.url("/style.css"))
        site.main.redirect("/hop", site.forbidden.url("/collect"))  # an allowed host redirecting to a refused one
        with pytest.raises(FetchError) as exc:
            f.fetch(site.url("/hop"))
        assert exc.value.kind == "address"
    finally:
        f.close()
    assert site.paths(site.forbidden) == []
    with pytest.raises(ValueError, match="not host:port"):
        settings.model_validate({**settings.model_dump(), "allow_private_hosts": "127.0.0.1"})


def test_a_javascript_board_is_captured_whole_and_judged_by_the_fields_tools(backend_settings, site):
    db = Database(guarded(backend_settings, site))
    try:
        r = capture_browser_urls(db, [site.url("/board")], scroll=True)[0]
        assert r.error is None, r.error
        assert r.status == 200 and r.loaded == "network idle"
        # every request went through the fetcher, and each is archived as fetched
        fetched = {s.url for s in r.responses}
        assert {site.url("/board"), site.url("/style.css"), site.url("/board.woff2"), site.url("/api/rows.json"),
                site.url("/api/more.json"), site.cdn.url("/fmt.js")} <= fetched
        assert all(req["headers"]["User-Agent"].startswith("Caveat") for req in site.main.requests)
        # the host not on the allow-list was refused, listed, and never reached
        assert site.paths(site.forbidden) == []
        refused = dict(r.refused)
        assert "refused: 127.0.0.1 is a loopback address" in refused[site.forbidden.url("/collect?x=1")]
        # a WebSocket (even to an allowed origin) is never opened, and no service worker is registered
        ws = site.cdn.url("/live").replace("http://", "ws://")
        assert "WebSocket connections are not made" in refused[ws]
        assert "/live" not in site.paths(site.cdn) and "/sw.js" not in site.paths()
        with db.Session() as s:
            dom = s.get(Snapshot, r.snapshot.id)
            assert dom.record_type == "resource" and dom.url == f"urn:dom:{site.url('/board')}"
            stored = load_record(db.settings, dom, session=s)
            assert stored.fixity == "ok"
            soup = BeautifulSoup(stored.body, "html.parser")
            cells = [[td.get_text() for td in tr.find_all("td")] for tr in soup.select("#board tbody tr")]
            assert cells == [["Llama-3.1-70B", "8x H100", "181.5"], ["Qwen2.5-32B", "1x H100", "240.4"],
                             ["Mistral-7B", "1x L4", "95.0"]]  # the last row loaded only on scroll
            assert soup.select_one("#status").get_text() == "2 results" and soup.title.get_text() == "Speed board"
            recs = page_records(s, dom)
            shot = load_record(db.settings, recs["fullPage"], session=s).body
            info = json.loads(load_record(db.settings, recs["pageinfo"], session=s).body)
            raw_rows = load_record(db.settings, s.scalars(select(Snapshot).where(
                Snapshot.url == site.url("/api/rows.json"))).one(), session=s)
            assert raw_rows.raw_body[:2] == b"\x1f\x8b"  # stored as sent (gzip), never decoded
        width, height = png_header(shot)
        assert width == 1280 and height > 2400  # full page, not the viewport
        assert red_pixels(shot, CHROMIUM) > 3 * 1000  # the rendered Tokens/s cells are in the picture
        assert info["url"] == site.url("/board") and info["pageid"].startswith("urn:uuid:")
        assert info["urls"][site.url("/api/rows.json")] == {"status": 200, "mime": "application/json", "type": "Fetch"}
        assert info["urls"][site.cdn.url("/fmt.js")]["type"] == "Script"
        assert sorted(x["url"] for x in info["caveat"]["refused"]) == sorted([site.forbidden.url("/collect?x=1"), ws])
        # the field's tools accept the files
        files = warc_files(db.settings)
        check = run([ref_tool("warcio"), "check", "-v", *map(str, files)])
        assert check.returncode == 0 and "fail" not in check.stdout.lower(), check.stdout + check.stderr
        for f in files:
            assert run(["gzip", "-t", str(f)]).returncode == 0
        out = run([ref_tool("cdxj-indexer"), *[f.name for f in files]], cwd=db.settings.warc_dir)
        assert out.returncode == 0, out.stderr
        urls = {json.loads(line.split(" ", 2)[2])["url"] for line in out.stdout.splitlines()}
        assert {f"urn:dom:{site.url('/board')}", f"urn:fullPage:{site.url('/board')}",
                f"urn:pageinfo:{site.url('/board')}", site.url("/api/rows.json")} <= urls
        # a second capture of the unchanged page stores revisits, not second copies
        again = capture_browser_urls(db, [site.url("/board")], scroll=True)[0]
        assert again.error is None
        assert {s.record_type for s in again.responses} == {"revisit"}
    finally:
        db.dispose()


def test_a_browser_source_parses_the_rendered_table_and_cites_into_it(settings, site, cli):
    s2 = guarded(settings, site, browser_scroll=True)
    out = cli("source", "add", "jsboard", site.url("/board"), "--browser", settings_override=s2)
    assert out.exit_code == 0 and "captured with the browser" in out.output
    out = cli("crawl", "jsboard", settings_override=s2)
    assert out.exit_code == 0, out.output
    db = Database(s2)
    try:
        with db.Session() as s:
            got = sorted((e.model, e.hardware, e.gpu_count, e.headline_tps) for e in s.scalars(select(Entry)))
            assert got == [("Llama-3.1-70B", "H100", 8, 181.5), ("Mistral-7B", "L4", 1, 95.0),
                           ("Qwen2.5-32B", "H100", 1, 240.4)]
            snap = s.get(Snapshot, s.scalars(select(Entry)).first().last_snapshot_id)
            assert snap.url.startswith("urn:dom:") and snap.record_type == "resource"
            cid = snap.citation_id
        from fastapi.testclient import TestClient

        from app.main import create_app

        app = create_app(s2)
        with TestClient(app, base_url="http://caveat.test") as client:
            r = client.get(f"/c/{cid}", params={"q": "181.5"})
            assert r.status_code == 200, r.text
            mark = BeautifulSoup(r.text, "html.parser").select_one("mark#quote")
            assert mark is not None and mark.get_text() == "181.5"
            assert client.get("/api/sources").json()["sources"][0]["browser"] is True
        app.state.db.dispose()
        # reparse reads the rendered DOM again, not the scripts and JSON stored beside it
        out = cli("reparse", "--source", "jsboard", settings_override=s2)
        assert out.exit_code == 0, out.output
        with db.Session() as s:
            assert sorted(e.headline_tps for e in s.scalars(select(Entry))) == [95.0, 181.5, 240.4]
            assert s.scalar(select(func.count()).select_from(Entry)) == 3
            before = {r.citation_id: (r.url, r.record_id, r.source_id is not None and r.url.startswith("urn:dom:"))
                      for r in s.scalars(
                select(Snapshot).where(Snapshot.record_type == "resource"))}
    finally:
        db.dispose()
    # a lost database: the WARC files alone give back the DOM records (same citation ids), the browser
    # source and, by reparsing the DOM, its entries
    db_file = Path(s2.db_url.removeprefix("sqlite:///"))
    db_file.unlink()
    for extra in ("-wal", "-shm"):
        Path(str(db_file) + extra).unlink(missing_ok=True)
    out = cli("init", "--reindex", settings_override=s2)
    assert out.exit_code == 0, out.output
    db = Database(s2)
    try:
        with db.Session() as s:
            after = {r.citation_id: (r.url, r.record_id, r.source_id is not None and r.url.startswith("urn:dom:"))
                     for r in s.scalars(
                select(Snapshot).where(Snapshot.record_type == "resource"))}
            assert after == before and len(after) == 3
            assert sorted(e.headline_tps for e in s.scalars(select(Entry))) == [95.0, 181.5, 240.4]
            from app.models import Source

            assert [(x.name, x.browser) for x in s.scalars(select(Source))] == [("jsboard", True)]
    finally:
        db.dispose()


def test_the_framed_view_offers_the_rendered_page_and_screenshot_with_no_script(live_app, settings, site):
    from playwright.sync_api import sync_playwright

    from archive.browser import FLAGS

    app, base = live_app
    db = Database(guarded(settings, site))
    try:
        r = capture_browser_urls(db, [site.url("/board")])[0]
        assert r.error is None
        with db.Session() as s:
            shot = load_record(db.settings, s.get(Snapshot, r.screenshot.id), session=s).body
    finally:
        db.dispose()
    seen: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.on("request", lambda req: seen.append(req.url))
            page.goto(f"{base}/web/{r.document.timestamp}/{site.url('/board')}")
            rendered = page.get_attribute("a.rendered-link", "href")
            assert rendered == f"/web/{r.snapshot.timestamp}/urn:dom:{site.url('/board')}"
            shot_href = page.get_attribute("a.screenshot-link", "href")
            # the archived document as fetched: the empty shell
            frame = next(f for f in page.frames if "id_/" in f.url)
            assert frame.text_content("#status") == "Loading..."
            page.goto(base + rendered)
            frame = next(f for f in page.frames if "id_/urn:dom:" in f.url)
            assert "181.5" in frame.text_content("#board") and "Mistral" not in frame.text_content("#board")
            assert frame.get_attribute("body", "data-runs") == "1"  # its scripts did not run again here
            got = page.request.get(base + shot_href)
            assert got.headers["content-type"] == "image/png" and got.body() == shot
            assert "sandbox" in got.headers["content-security-policy"]
        finally:
            browser.close()
    assert seen and all(u.startswith(base) for u in seen), [u for u in seen if not u.startswith(base)]


def test_the_json_behind_the_page_is_parsed_for_a_source_that_names_it(settings, site, cli):
    s2 = guarded(settings, site)
    assert cli("source", "add", "jsboard", site.url("/board"), "--browser", settings_override=s2).exit_code == 0
    assert cli("source", "add", "board-api", site.url("/api/rows.json"), "--kind", "json",
               settings_override=s2).exit_code == 0
    out = cli("crawl", "jsboard", settings_override=s2)
    assert out.exit_code == 0, out.output
    assert "/api/rows.json" in " ".join(site.paths()) and site.paths().count("/api/rows.json") == 1  # fetched once
    db = Database(s2)
    try:
        from app.models import Source

        with db.Session() as s:
            api = s.scalars(select(Source).where(Source.name == "board-api")).one()
            got = sorted((e.model, e.headline_tps) for e in s.scalars(select(Entry).where(Entry.source_id == api.id)))
            assert got == [("Llama-3.1-70B", 181.5), ("Qwen2.5-32B", 240.4)]
            snap = s.get(Snapshot, s.scalars(select(Entry).where(Entry.source_id == api.id)).first().last_snapshot_id)
            assert snap.url == site.url("/api/rows.json") and snap.record_type == "response"
            board = s.scalars(select(Source).where(Source.name == "jsboard")).one()
            assert s.scalar(select(func.count()).select_from(Entry).where(Entry.source_id == board.id)) == 2
    finally:
        db.dispose()


def test_a_page_that_never_goes_idle_is_stopped_at_the_time_limit_and_kept(settings, site):
    db = Database(guarded(settings, site, browser_page_time_limit=6))
    try:
        r = capture_browser_urls(db, [site.url("/live")])[0]
        assert r.error is None and r.loaded == "time limit"
        assert any("did not reach network idle within 6 s" in w and "CAVEAT_BROWSER_PAGE_TIME_LIMIT" in w
                   for w in r.warnings)
        with db.Session() as s:
            body = load_record(db.settings, s.get(Snapshot, r.snapshot.id), session=s).body
        assert b"Model A 100 tok/s" in body
        assert sum(1 for s in r.responses if "/tick" in s.url) >= 3  # the polls made so far are archived
    finally:
        db.dispose()


def test_a_page_that_navigates_in_a_loop_is_stopped(settings, site):
    db = Database(guarded(settings, site, browser_page_time_limit=20))
    try:
        r = capture_browser_urls(db, [site.url("/loop")])[0]
        assert r.error is None, r.error
        stopped = [why for u, why in r.refused if "/loop?n=" in u]
        assert stopped and "navigated more than 10 times" in stopped[0]
        assert r.final_url == site.url("/loop?n=9")  # the page stays on the last document it was given
        assert len([p for p in site.paths() if p.startswith("/loop")]) == 10  # the first and 9 more, no more
    finally:
        db.dispose()


# -- bad input: each ends by its limit with a clear message, and a failure stores nothing ---------------
def test_a_renderer_crash_is_a_clear_error_and_stores_nothing(settings, site):
    db = Database(guarded(settings, site, browser_page_time_limit=30))
    try:
        before = rows(db)
        r = capture_browser_urls(db, [site.url("/crash"), site.url("/board")])
        assert r[0].error and "renderer crashed" in r[0].error and "nothing was stored" in r[0].error
        assert r[1].error is None  # the next page in the same run is captured
        with db.Session() as s:
            assert not s.scalars(select(Snapshot).where(Snapshot.url.contains("/crash"))).all()
        assert rows(db) > before
    finally:
        db.dispose()


def test_a_script_that_never_yields_is_stopped_and_the_dom_kept(settings, site):
    db = Database(guarded(settings, site, browser_page_time_limit=20))
    try:
        r = capture_browser_urls(db, [site.url("/busy")])[0]
        assert r.error is None, r.error
        assert any("a script was still running" in w for w in r.warnings)
        with db.Session() as s:
            assert b"<p>busy</p>" in load_record(db.settings, s.get(Snapshot, r.snapshot.id), session=s).body
    finally:
        db.dispose()


def test_a_50_mb_script_is_fetched_and_handed_over_in_bounded_memory(settings, site, tmp_path):
    s2 = guarded(settings, site, browser_page_time_limit=60)
    code = ("import json, resource, sys\n"
            "from app.db import Database\nfrom app.config import Settings\n"
            "from app.capture.browser import capture_browser_urls\n"
            "r = capture_browser_urls(Database(Settings()), [sys.argv[1]])[0]\n"
            "peak = int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]) * 1024\n"
            "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
            "print(json.dumps({'error': r.error, 'sizes': [s.payload_length for s in r.responses], 'peak': peak,"
            " 'kids': kids, 'dom': r.size}))\n")
    env = cli_env(s2, CAVEAT_ALLOW_PRIVATE_HOSTS=site.allow, CAVEAT_BROWSER_EXECUTABLE=CHROMIUM,
                  CAVEAT_BROWSER_SETTLE="0.2", CAVEAT_BROWSER_PAGE_TIME_LIMIT="60")
    env["CAVEAT_ALLOW_PRIVATE_ADDRESSES"] = "0"
    p = subprocess.run([CLI[0], "-c", code, site.url("/big")], env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["error"] is None and 50_000_000 in out["sizes"]
    assert out["peak"] < 900 * 1024 * 1024, out  # the capturing process
    assert out["kids"] < 1500 * 1024 * 1024, out  # the largest of the driver and browser processes


def test_a_hundred_thousand_requests_stop_at_the_request_limit(settings, site):
    db = Database(guarded(settings, site, browser_page_time_limit=60, browser_max_requests=300))
    try:
        r = capture_browser_urls(db, [site.url("/many")])[0]
        assert r.error is None and r.loaded == "request limit"
        assert any("more than 300 requests" in w and "CAVEAT_BROWSER_MAX_REQUESTS" in w for w in r.warnings)
        assert len(r.responses) <= 300
        assert len([p for p in site.paths() if p.startswith("/px")]) < 300
        assert len(r.refused) <= 51  # the one that hit the limit and at most 50 after it, not thousands
        with db.Session() as s:
            info = json.loads(load_record(db.settings, s.get(Snapshot, r.pageinfo.id), session=s).body)
        assert info["caveat"]["loaded"] == "request limit" and info["caveat"]["not_fetched_after_stop"] >= 0
    finally:
        db.dispose()


def test_infinite_scroll_ends_after_its_steps_with_a_cut_screenshot(settings, site):
    db = Database(guarded(settings, site, browser_page_time_limit=60, browser_scroll_steps=25))
    try:
        r = capture_browser_urls(db, [site.url("/endless")], scroll=True)[0]
        assert r.error is None, r.error
        assert any("scrolled 25 steps without reaching the bottom" in w for w in r.warnings)
        assert any("the screenshot stops at 16,384 px" in w for w in r.warnings)
        with db.Session() as s:
            shot = load_record(db.settings, s.get(Snapshot, r.screenshot.id), session=s).body
        assert png_header(shot)[1] == 16384
    finally:
        db.dispose()


def test_popups_are_refused_and_listed(settings, site):
    db = Database(guarded(settings, site))
    try:
        r = capture_browser_urls(db, [site.url("/popup")])[0]
        assert r.error is None
        assert "/popped" not in site.paths() and "/popped2" not in site.paths()
        reasons = [why for u, why in r.refused if "/popped" in u]
        assert reasons and all("popup" in why for why in reasons)
    finally:
        db.dispose()


def test_downloads_are_not_saved_and_a_download_page_stores_nothing(settings, site, tmp_path):
    db = Database(guarded(settings, site))
    try:
        r = capture_browser_urls(db, [site.url("/download")])[0]
        assert r.error is None and "/file.bin" not in site.paths()  # Chromium refuses the download itself
        with db.Session() as s:
            assert b"Download model 44 tok/s" in load_record(db.settings, s.get(Snapshot, r.snapshot.id), session=s).body
        before = rows(db)
        r2 = capture_browser_urls(db, [site.url("/file.bin")])[0]
        assert r2.error and "download" in r2.error
        assert rows(db) == before
    finally:
        db.dispose()


def test_a_sigkill_mid_capture_leaves_earlier_snapshots_intact_and_no_browser_behind(settings, site):
    s2 = guarded(settings, site, browser_page_time_limit=60)
    db = Database(s2)
    try:
        first = capture_browser_urls(db, [site.url("/board")])[0]
        assert first.error is None
        tag = uuid.uuid4().hex
        env = cli_env(s2, CAVEAT_ALLOW_PRIVATE_HOSTS=site.allow, CAVEAT_BROWSER_EXECUTABLE=CHROMIUM,
                      CAVEAT_BROWSER_PAGE_TIME_LIMIT="60", CAVEAT_TEST_TAG=tag)
        env["CAVEAT_ALLOW_PRIVATE_ADDRESSES"] = "0"
        proc = subprocess.Popen([*CLI, "capture", "--browser", site.url("/live")], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert wait_for(lambda: sum(p.startswith("/tick") for p in site.paths()) >= 5, 60)
        assert _tagged(tag), "the browser should be running now"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert wait_for(lambda: not _tagged(tag), 20), "a browser process outlived the killed capture"
        with db.Session() as s:
            snap = s.get(Snapshot, first.snapshot.id)
            assert b"Llama-3.1-70B" in load_record(s2, snap, session=s).body
            assert not s.scalars(select(Snapshot).where(Snapshot.url.contains("/live"))).all()
        v = subprocess.run([*CLI, "verify"], env=cli_env(s2), capture_output=True, text=True, timeout=120)
        assert v.returncode == 0, v.stdout + v.stderr
    finally:
        db.dispose()


def _tagged(tag: str) -> list[int]:
    """Processes (the driver, Chromium) whose environment carries the test's tag."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if f"CAVEAT_TEST_TAG={tag}".encode() in Path(f"/proc/{pid}/environ").read_bytes() and int(pid) != os.getpid():
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_the_cli_prints_each_page_its_refusals_and_json(settings, site):
    s2 = guarded(settings, site)
    env = cli_env(s2, CAVEAT_ALLOW_PRIVATE_HOSTS=site.allow, CAVEAT_BROWSER_EXECUTABLE=CHROMIUM,
                  CAVEAT_BROWSER_SETTLE="0.2")
    env["CAVEAT_ALLOW_PRIVATE_ADDRESSES"] = "0"
    p = subprocess.run([*CLI, "capture", "--browser", site.url("/board")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "200  " in p.stdout and "(browser: " in p.stdout
    assert f"refused  {site.forbidden.url('/collect?x=1')}: refused:" in p.stderr and "2 refused" in p.stdout
    p = subprocess.run([*CLI, "capture", "--browser", "--json", site.url("/board"), site.forbidden.url("/collect")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    out = json.loads(p.stdout)
    assert out["ok"] is False and out["count"] == 2
    good, bad = out["captures"]
    assert good["error"] is None and good["snapshot"] and good["screenshot"] and good["pageinfo"]
    assert good["loaded"] == "network idle" and good["responses"] == 5  # board, style, font, rows.json, fmt.js (no scroll)
    assert bad["snapshot"] is None and "refused: 127.0.0.1 is a loopback address" in bad["error"]
    assert site.paths(site.forbidden) == []
    env["CAVEAT_BROWSER_EXECUTABLE"] = "/nonexistent/chromium"
    p = subprocess.run([*CLI, "capture", "--browser", site.url("/board")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1 and "cannot start Chromium at /nonexistent/chromium" in p.stderr
    assert "CAVEAT_BROWSER_EXECUTABLE" in p.stderr


def test_redirects_are_followed_by_the_browser_and_each_hop_is_checked(settings, site):
    site.main.redirect("/moved", site.url("/board"))
    site.main.route("/sneaky", "<html><body><p>Sneaky 9 tok/s</p><img src='/img-hop'></body></html>")
    site.main.redirect("/img-hop", site.forbidden.url("/collect"))  # an allowed URL redirecting to a refused host
    db = Database(guarded(settings, site))
    try:
        r = capture_browser_urls(db, [site.url("/moved"), site.url("/sneaky")])
        assert r[0].error is None and r[0].final_url == site.url("/board")
        hops = {s.url: s.status for s in r[0].responses}
        assert hops[site.url("/moved")] == 302 and hops[site.url("/board")] == 200
        assert r[1].error is None
        assert hops_of(r[1]) == {site.url("/sneaky"): 200, site.url("/img-hop"): 302}
        assert "a loopback address" in dict(r[1].refused)[site.forbidden.url("/collect")]
        assert site.paths(site.forbidden) == []
        before = rows(db)
        site.main.redirect("/away", site.forbidden.url("/collect"))
        r = capture_browser_urls(db, [site.url("/away")])[0]
        assert r.error and "redirects to" in r.error and "a loopback address" in r.error
        assert rows(db) == before and site.paths(site.forbidden) == []
    finally:
        db.dispose()


def hops_of(result) -> dict:
    return {s.url: s.status for s in result.responses}


def test_the_second_fence_whatever_escapes_routing_cannot_connect(site):
    """Chromium as Caveat starts it, with no routing at all: a page on loopback cannot be reached, so a
    request that slipped past routing would fail rather than touch the network."""
    from playwright.sync_api import Error, sync_playwright

    from archive.browser import launch_args

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=launch_args(), headless=True)
        try:
            page = browser.new_page()
            with pytest.raises(Error, match="ERR_PROXY_CONNECTION_FAILED"):
                page.goto(site.url("/board"), timeout=15000)
        finally:
            browser.close()
    assert site.paths() == []


FLEE = """<!doctype html><html><head><title>Flee</title></head><body><p>Board 7 tok/s</p><script>
window.addEventListener('load', () => setTimeout(() => {{ location = '{target}'; }}, 30));
</script></body></html>"""


def test_a_page_that_navigates_away_after_load_keeps_its_own_dom(settings, site):
    """Issue 24, item 11e: a hostile page that sends the browser elsewhere after it loaded (to a refused
    address, directly or through a redirect) left Chromium's error page as the page's DOM record. The
    navigation is refused and recorded, and the page asked for keeps its own DOM."""
    site.main.route("/flee", FLEE.format(target=site.forbidden.url("/collect")))
    site.main.redirect("/hop-away", site.forbidden.url("/collect"))
    site.main.route("/flee-hop", FLEE.format(target="/hop-away"))
    db = Database(guarded(settings, site))
    try:
        results = capture_browser_urls(db, [site.url("/flee"), site.url("/flee-hop")])
        for r, path in zip(results, ("/flee", "/flee-hop")):
            assert r.error is None, r.error
            assert r.final_url == site.url(path)
            assert any("navigated to" in w and "kept" in w for w in r.warnings), r.warnings
            assert "a loopback address" in dict(r.refused)[site.forbidden.url("/collect")]
            with db.Session() as s:
                dom = s.get(Snapshot, r.snapshot.id)
                assert dom.url == f"urn:dom:{site.url(path)}"
                body = load_record(db.settings, dom, session=s).body
            assert b"Board 7 tok/s" in body and b"chrome-error" not in body and b"ERR_" not in body
        assert site.paths(site.forbidden) == []
    finally:
        db.dispose()
