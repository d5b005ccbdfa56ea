"""The reviewer pages and their JSON twins, in-process: queue, entry, recipe, sources, audit log, login,
decisions with CSRF. Data is the seed's GLM-5.3-Flash ladder stored through the claims service and
audited by the real rules."""

from __future__ import annotations

import json
import re

import pytest
from bs4 import BeautifulSoup

from app.models import Entry, Flag
from app.accounts import auth
from app.audit.engine import audit_entries
from app.audit.queue import clear_cache
from tests.audit_data import glm_entries, store
from scrapers.fields import ParsedEntry

PASSWORD = "correct horse battery"


@pytest.fixture
def glm(app, settings):
    clear_cache()
    db = app.state.db
    with db.session() as s:
        src, snap, summary = store(s, glm_entries())
        audit_entries(s, settings, summary.entry_ids)
        auth.create_user(s, "rita", PASSWORD)
        top = s.query(Entry).filter(Entry.headline_tps == 1004.9).one()
        return {"ids": summary.entry_ids, "top": top.id, "recipe": top.recipe_id, "source": src.name,
                "snapshot": snap.citation_id}


def soup(r):
    return BeautifulSoup(r.text, "html.parser")


def login(client, username="rita", password=PASSWORD, next_="/queue"):
    page = soup(client.get("/login"))
    token = page.find("input", {"name": "csrf_token"})["value"]
    return client.post("/login", data={"username": username, "password": password, "csrf_token": token,
                                       "next": next_}, follow_redirects=False)


def csrf_of(client, path):
    return soup(client.get(path)).find("input", {"name": "csrf_token"})["value"]


def test_home_redirects_to_queue(client, glm):
    r = client.get("/", follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == "/queue"


def test_queue_html_and_json_twin_show_the_same_entries(client, glm):
    html = client.get("/queue")
    assert html.status_code == 200
    page = soup(html)
    alt = page.find("link", {"rel": "alternate", "type": "application/json"})
    assert alt is not None and alt["href"] == "/queue.json"
    data = client.get(alt["href"]).json()
    rows = page.select("tr.queue-row")
    assert [int(r["data-entry"]) for r in rows] == [e["id"] for e in data["entries"]]
    # most severe first: the 1,004.9 headline with the critical flags leads the queue
    first = data["entries"][0]
    assert first["id"] == glm["top"] and first["severity"] == "critical"
    assert first["headline_tps"] == 1004.9 and first["working_tps"] == 373
    assert rows[0].select_one(".sev").text == "critical"
    assert rows[0].select_one("td.headline").text.strip() == "1,004.9"
    assert {"full_acceptance", "repeat_loop", "headline_above_steady_state", "ladder_top_rung"} <= {
        f["rule"] for f in first["flags"]}
    assert data["total"] == len(glm["ids"]) and data["per_page"] == 50


def test_queue_filters_counts_and_sort(client, glm):
    data = client.get("/queue.json").json()
    sev = {c["value"]: c["count"] for c in data["counts"]["severity"]}
    assert sev["critical"] == 1 and sum(sev.values()) == data["total"]
    rules = {c["value"]: c["count"] for c in data["counts"]["rule"]}
    assert rules["ladder_top_rung"] == 1 and rules["full_acceptance"] == 1
    assert data["counts"]["source"] == [{"value": glm["source"], "count": data["total"]}]
    crit = client.get("/queue.json?severity=critical").json()
    assert [e["id"] for e in crit["entries"]] == [glm["top"]] and crit["total"] == 1
    # counts for one filter are given the other filters: severity counts ignore the severity filter
    assert {c["value"] for c in crit["counts"]["severity"]} == set(sev)
    assert crit["counts"]["decision"] == [{"value": "pending", "count": 1}]
    by_rule = client.get("/queue.json?rule=headline_above_steady_state").json()
    assert by_rule["total"] == rules["headline_above_steady_state"]
    assert client.get("/queue.json?model=GLM-5.3-Flash&decision=pending").json()["total"] == data["total"]
    assert client.get("/queue.json?decision=decided").json()["total"] == 0
    infl = client.get("/queue.json?sort=inflation").json()["entries"]
    ratios = [e["inflation_ratio"] for e in infl if e["inflation_ratio"] is not None]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] == pytest.approx(2.69, abs=0.01)
    # the facet links in the HTML carry the filter
    html = soup(client.get("/queue?severity=critical"))
    assert html.select_one("#facet-severity .selected").text.split()[0] == "critical"
    assert html.select_one("#facet-severity a.clear")["href"] == "/queue"


def test_queue_rejects_bad_filters_with_a_fix(client, glm):
    r = client.get("/queue.json?severity=urgent")
    assert r.status_code == 400 and "critical, high" in r.json()["error"]
    r = client.get("/queue?sort=fastest")
    assert r.status_code == 400 and "severity, inflation or roofline" in soup(r).select_one(".error-message").text
    r = client.get("/queue.json?source=nope")
    assert r.status_code == 404 and "/sources" in r.json()["error"]
    r = client.get("/queue.json?page=0")
    assert r.status_code == 400


def test_queue_pages_fifty_at_a_time(client, app, settings):
    clear_cache()
    with app.state.db.session() as s:
        base = dict(model="Pager-7B", hardware="RTX 4090", gpu_count=1, engine="vLLM", concurrency=1)
        entries = [ParsedEntry(fields=dict(base, headline_tps=100 + i, quantization=f"q{i}",
                                           notes="peak of 3 runs"),
                               quotes={"headline_tps": str(100 + i), "notes": "peak of 3 runs"}) for i in range(120)]
        _, _, summary = store(s, entries)
        audit_entries(s, settings, summary.entry_ids)
    first = client.get("/queue.json").json()
    assert first["total"] == 120 and first["pages"] == 3 and len(first["entries"]) == 50
    third = client.get("/queue.json?page=3").json()
    assert len(third["entries"]) == 20 and third["next_page"] is None and third["prev_page"] == 2
    seen = [e["id"] for p in (1, 2, 3) for e in client.get(f"/queue.json?page={p}").json()["entries"]]
    assert len(seen) == len(set(seen)) == 120
    nav = soup(client.get("/queue?page=2")).select_one("nav.pager")
    assert nav.find("a", rel="next")["href"] == "/queue?page=3"
    assert nav.find("a", rel="prev")["href"] == "/queue"


def test_entry_page_shows_headline_working_number_chart_notes_flags(client, glm):
    r = client.get(f"/entries/{glm['top']}")
    assert r.status_code == 200
    page = soup(r)
    assert page.select_one("#headline-tps").text == "1,004.9"
    assert page.select_one("#working-tps").text == "373"
    assert "steady_state" in page.select_one("#basis").text
    chart = json.loads(page.select_one("#ladder-data").string)
    assert sorted((p["x"], p["y"]) for p in chart["points"]) == sorted(
        [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)])
    assert chart["band"]["low"] == 373 and chart["band"]["high"] == 391
    scripts = [s.get("src") for s in page.find_all("script") if s.get("src")]
    assert scripts == ["/static/vendor/chartjs/chart.umd.min.js", "/static/ladder.js"]
    mark = page.select_one(".notes-text mark.evidence")
    assert mark.text == "acceptance 64/1.00 on locked attractor"
    assert mark.a["href"].startswith(f"/c/{glm['snapshot']}?q=")
    rules = [a["data-rule"] for a in page.select("article.flag")]
    assert rules[:2] == ["full_acceptance", "repeat_loop"]
    flag = page.select_one('article.flag[data-rule="headline_above_steady_state"]')
    assert "2.69" in flag.select_one(".numbers").text and "2.57" in flag.select_one(".numbers").text
    assert flag.select_one("a.cite")["href"].startswith("/c/")
    # not signed in: no decision form, a sign-in hint instead
    assert page.select("form.decision-form") == [] and page.select_one(".sign-in-hint a")
    assert page.select_one(".history .snapshot-link").text == glm["snapshot"]
    alt = page.find("link", {"rel": "alternate", "type": "application/json"})["href"]
    assert alt == f"/entries/{glm['top']}.json"
    data = client.get(alt).json()
    assert data["entry"]["headline_tps"] == 1004.9 and data["entry"]["working_tps"] == 373
    assert data["chart"] == chart and data["recipe"]["recipe_id"] == glm["recipe"]


def test_recipe_page_and_twin(client, glm):
    r = client.get(f"/recipes/{glm['recipe']}")
    assert r.status_code == 200
    page = soup(r)
    assert page.select_one("#working-tps").text == "373"
    assert page.select_one("#headline-tps").text == "1,004.9"
    assert len(page.select("table.runs tbody tr")) == 6
    data = client.get(f"/recipes/{glm['recipe']}.json").json()
    assert data["quotable"]["quotable_tps"] == 373 and data["quotable"]["basis"] == "steady_state"
    assert len(data["chart"]["points"]) == 6
    assert client.get("/recipes/r-nope.json").status_code == 404


def test_unknown_entry_is_a_clear_404_in_both_faces(client, glm):
    assert client.get("/entries/99999.json").json()["status"] == 404
    r = client.get("/entries/abc")
    assert r.status_code == 404 and "/entries/<number>" in soup(r).select_one(".error-message").text


def test_archived_text_is_escaped_never_rendered(client, app, settings):
    clear_cache()
    hostile = '<script>document.title="pwned"</script><img src=x onerror=alert(1)> peak 9,999 tok/s'
    with app.state.db.session() as s:
        _, _, summary = store(s, [ParsedEntry(fields=dict(model="<b>Evil</b>", hardware="x", headline_tps=9999.0,
                                                          notes=hostile),
                                              quotes={"headline_tps": "9,999", "notes": hostile})])
        audit_entries(s, settings, summary.entry_ids)
        eid = summary.entry_ids[0]
    for path in (f"/entries/{eid}", "/queue"):
        html = client.get(path).text
        assert "<script>document.title" not in html and "<img src=x" not in html and "<b>Evil</b>" not in html
        assert "&lt;b&gt;Evil&lt;/b&gt;" in html
    page = soup(client.get(f"/entries/{eid}"))
    assert page.select_one(".notes-text").text.startswith("<script>")
    assert all(s.get("src", "").startswith("/static/") for s in page.find_all("script") if s.get("src"))


def test_login_logout_and_bad_password(client, glm):
    r = login(client, password="wrong password!")
    assert r.status_code == 401 and "caveat user add" in r.text
    r = login(client, next_="//evil.example/x")
    assert r.status_code == 303 and r.headers["location"] == "/queue"
    page = soup(client.get("/queue"))
    assert page.select_one(".signed-in .username").text == "rita"
    token = page.select_one("form[action='/logout'] input[name=csrf_token]")["value"]
    assert client.post("/logout", data={"csrf_token": "forged"}).status_code == 403
    r = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303
    assert soup(client.get("/queue")).select_one(".login-link") is not None


def test_dismissing_a_flag_updates_entry_queue_and_audit_log(client, app, glm):
    flag_id = int(soup(client.get(f"/entries/{glm['top']}")).select_one(
        'article.flag[data-rule="repeat_loop"]')["id"].split("-")[1])
    # anonymous: refused
    r = client.post(f"/entries/{glm['top']}/decision", data={"flag_id": flag_id, "action": "dismiss", "note": "x"})
    assert r.status_code == 401
    assert login(client, next_=f"/entries/{glm['top']}").status_code == 303
    # signed in but no CSRF token: refused, nothing recorded
    r = client.post(f"/entries/{glm['top']}/decision", data={"flag_id": flag_id, "action": "dismiss", "note": "x"})
    assert r.status_code == 403 and "CSRF" in r.text
    assert client.get("/audit-log.json").json()["decisions"] == []
    page = soup(client.get(f"/entries/{glm['top']}"))
    form = page.select_one(f'article#flag-{flag_id} form.decision-form')
    assert form.select_one("label")["for"] == form.select_one("textarea")["id"]
    token = form.select_one("input[name=csrf_token]")["value"]
    before = client.get("/queue.json?decision=pending").json()["total"]
    r = client.post(f"/entries/{glm['top']}/decision",
                    data={"flag_id": flag_id, "action": "dismiss", "note": "notes say attractor; checked", "csrf_token": token},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(f"/entries/{glm['top']}?decided=")
    page = soup(client.get(r.headers["location"]))
    assert page.select_one(f"article#flag-{flag_id} .flag-status").text == "dismissed"
    assert "dismissed" in page.select_one(".decision-list").text
    with app.state.db.session() as s:
        assert s.get(Flag, flag_id).status == "dismissed"
    log = client.get("/audit-log.json").json()["decisions"]
    assert [(d["user"], d["action"], d["rule"], d["note"]) for d in log] == [
        ("rita", "dismiss", "repeat_loop", "notes say attractor; checked")]
    html = soup(client.get("/audit-log"))
    row = html.select_one("tr.decision-row")
    assert row.select_one(".who").text == "rita" and row.select_one(".rule").text == "repeat_loop"
    # the queue shows the decision at once: the entry's open flags went down by one
    q = {e["id"]: e for e in client.get("/queue.json").json()["entries"]}
    assert q[glm["top"]]["open_flag_count"] == q[glm["top"]]["flag_count"] - 1
    assert client.get("/queue.json?decision=pending").json()["total"] == before
    # an empty note is refused with a reason
    r = client.post(f"/entries/{glm['top']}/decision",
                    data={"flag_id": flag_id, "action": "confirm", "note": " ", "csrf_token": token})
    assert r.status_code == 400 and "note" in r.text


def test_dismissing_every_blocking_flag_changes_the_queue_counts(client, app, settings):
    clear_cache()
    with app.state.db.session() as s:
        _, _, summary = store(s, [ParsedEntry(fields=dict(model="Solo", hardware="x", headline_tps=50.0,
                                                          notes="best of 5 runs"),
                                              quotes={"headline_tps": "50", "notes": "best of 5 runs"})])
        audit_entries(s, settings, summary.entry_ids)
        auth.create_user(s, "rita", PASSWORD)
        eid = summary.entry_ids[0]
    assert client.get("/queue.json?decision=decided").json()["total"] == 0
    login(client)
    page = soup(client.get(f"/entries/{eid}"))
    for form in page.select("form.decision-form"):
        r = client.post(form["action"], data={"flag_id": form.select_one("input[name=flag_id]")["value"],
                                              "action": "dismiss", "note": "reviewed",
                                              "csrf_token": form.select_one("input[name=csrf_token]")["value"]})
        assert r.status_code == 200
    data = client.get("/queue.json?decision=decided").json()
    assert [e["id"] for e in data["entries"]] == [eid]
    assert data["entries"][0]["severity"] is None
    assert {"value": "none", "count": 1} in data["counts"]["severity"]


def test_sources_page_and_authenticated_crawl_now(client, app, server):
    from app.claims.sources import add_source

    html = ("<table><tr><th>Model</th><th>Hardware</th><th>tok/s</th><th>Notes</th></tr>"
            "<tr><td>Tiny-1B</td><td>RTX 4090</td><td>321.5</td><td>peak of 3 runs</td></tr></table>")
    url = server.route("/board", html)
    with app.state.db.session() as s:
        add_source(s, "tiny-board", url, "html")
        auth.create_user(s, "rita", PASSWORD)
    page = soup(client.get("/sources"))
    art = page.select_one("article.source")
    assert art.h2.text == "tiny-board" and "never crawled" in art.text
    assert page.select("form.crawl-form") == []
    assert client.post("/sources/crawl", data={"name": "tiny-board"}).status_code == 401
    login(client, next_="/sources")
    form = soup(client.get("/sources")).select_one("form.crawl-form")
    assert client.post("/sources/crawl", data={"name": "tiny-board", "csrf_token": "x"}).status_code == 403
    r = client.post("/sources/crawl", data={"name": "tiny-board",
                                            "csrf_token": form.select_one("input[name=csrf_token]")["value"]},
                    follow_redirects=False)
    assert r.status_code == 303 and "crawled=tiny-board" in r.headers["location"]
    # crawl now is queued and answered at once (issue 17); the in-process queue runs it
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and client.get("/sources.json").json()["sources"][0]["last_status"] is None:
        time.sleep(0.1)
    assert len(server.requests) == 1
    data = client.get("/sources.json").json()["sources"][0]
    assert data["last_status"] in ("ok", "warnings") and data["entries"] == 1 and data["snapshots"] == 1
    assert data["recent_crawls"][0]["entries_new"] == 1
    page = soup(client.get(r.headers["location"]))
    assert page.select_one(".notice") and page.select_one(".crawl-status").text.strip() == data["last_status"]


def test_every_page_has_a_json_alternate_and_loads_nothing_from_elsewhere(client, glm):
    paths = ["/queue", f"/entries/{glm['top']}", f"/recipes/{glm['recipe']}", "/sources", "/audit-log"]
    for path in paths:
        page = soup(client.get(path))
        alt = page.find("link", {"rel": "alternate", "type": "application/json"})
        assert alt is not None, path
        assert client.get(alt["href"]).headers["content-type"].startswith("application/json")
        for tag, attr in (("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src")):
            for el in page.find_all(tag):
                ref = el.get(attr)
                assert ref is None or ref.startswith("/"), (path, tag, ref)
        skips = [a["href"] for a in page.select("a.skip-link")]
        assert page.find("main", id="main") and "#main" in skips, (path, skips)
        assert all(page.find(id=h[1:]) for h in skips), (path, skips)  # every skip link has its target


def test_static_files_are_local_and_the_vendored_chart_is_pinned(client):
    import hashlib
    from app.main import WEB_DIR

    readme = (WEB_DIR / "static/vendor/README.md").read_text()
    m = re.search(r"chart\.js \| (\S+) \(pinned\) \| `([^`]+)`.*\| `([0-9a-f]{64})` \|", readme)
    version, path, digest = m.groups()
    body = (WEB_DIR / "static/vendor" / path).read_bytes()
    assert hashlib.sha256(body).hexdigest() == digest
    assert f"Chart.js v{version}" in body[:200].decode()
    assert (WEB_DIR / "static/vendor/chartjs/LICENSE.md").read_text().startswith("The MIT License")
    assert client.get("/static/vendor/chartjs/chart.umd.min.js").status_code == 200
    for f in list((WEB_DIR / "static").glob("*.css")) + list((WEB_DIR / "static").glob("*.js")):
        text = f.read_text()
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", text) and "@import" not in text, f
        assert not re.search(r"https?://", text), f


def test_history_shows_the_fields_that_changed_between_snapshots(client, app, settings):
    from tests.audit_data import make_snapshot

    clear_cache()
    with app.state.db.session() as s:
        src, _, first = store(s, glm_entries())
        edited = glm_entries()
        top = next(e for e in edited if e.fields["headline_tps"] == 1004.9)
        top.fields["headline_tps"], top.quotes["headline_tps"] = 1012.0, "1,012.0"
        top.fields.pop("notes")
        top.quotes.pop("notes")
        _, snap2, second = store(s, edited, source=src, snapshot=make_snapshot(s))
        audit_entries(s, settings, second.entry_ids)
        eid = s.query(Entry).filter(Entry.headline_tps == 1012.0).one().id
    page = soup(client.get(f"/entries/{eid}"))
    versions = page.select(".history .versions > li")
    assert len(versions) == 2
    newest = versions[0]
    assert newest.select_one(".snapshot-link").text == snap2.citation_id
    changes = {li.select_one(".field").text: (li.select_one("del").text, li.select_one("ins").text)
               for li in newest.select(".changes li")}
    assert changes["headline tps"] == ("1004.9", "1012.0")
    assert changes["notes"] == ("acceptance 64/1.00 on locked attractor", "(deleted)")
    assert "first seen" in versions[1].text
    hist = client.get(f"/entries/{eid}.json").json()["entry"]["history"]
    assert [h["version"] for h in hist] == [1, 2] and "headline_tps" in hist[1]["changed_fields"]
