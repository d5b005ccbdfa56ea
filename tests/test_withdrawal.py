"""Withdrawal and restriction (issue 13): `caveat withdraw` gives a 410 tombstone with the metadata and
the reason, `caveat restrict` a 403; both are recorded with who and why, reversible, survive
`caveat reindex`, and take the capture out of TimeMaps, TimeGates, capture lists and WACZ exports
while `caveat verify` still checks its bytes. Real capture, real CLI, the app in-process."""

from __future__ import annotations

import re
import zipfile

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from app.db import Database
from app.models import AccessEvent, Snapshot
from app.capture.http import capture_urls
from app.rebuild.reindex import reindex_all
from app.replay.withdrawal import withdrawn_snapshot_ids
from tests.test_csrf import _login
from tests.test_reindex import _lose_database


@pytest.fixture
def three(app, server):
    """Three captures of one URL, a second apart at least (distinct pages so none is a revisit)."""
    url = server.route("/board", "<html><body><p>first 100 tok/s</p></body></html>")
    snaps = [capture_urls(app.state.db, [url])[0].snapshot]
    for n in (2, 3):
        server.route("/board", f"<html><body><p>capture {n}: {n}00 tok/s</p></body></html>")
        snaps.append(capture_urls(app.state.db, [url])[0].snapshot)
    return url, snaps


def test_withdraw_answers_410_with_metadata_and_reason_and_leaves_every_list(cli, client, three, tmp_path):
    url, (a, b, c) = three
    r = cli("withdraw", b.citation_id, "--reason", "takedown request from the author", "--by", "alice")
    assert r.exit_code == 0, r.output
    assert f"{b.citation_id}: withdrawn" in r.output and "410" in r.output
    page = client.get(f"/c/{b.citation_id}")
    assert page.status_code == 410
    soup = BeautifulSoup(page.text, "html.parser")
    assert soup.select_one(".access-reason").get_text() == "takedown request from the author"
    text = soup.get_text(" ")
    assert url in text and b.timestamp in text and f"sha256:{b.sha256}" in text and "alice" in text
    j = client.get(f"/c/{b.citation_id}.json").json()
    assert j["ok"] is False and j["status"] == 410 and j["reason"] == "takedown request from the author"
    assert j["url"] == url and j["sha256"] == b.sha256
    assert client.get(f"/c/{b.citation_id}", params={"q": "capture 2"}).status_code == 410
    assert client.get(f"/web/{b.timestamp}/{url}").status_code == 410
    assert client.get(f"/web/{b.timestamp}id_/{url}").status_code == 410
    # out of the TimeMap, the TimeGate, the capture list
    tm = client.get(f"/timemap/link/{url}").text
    assert b.timestamp not in tm and a.timestamp in tm and c.timestamp in tm
    assert [m["timestamp"] for m in client.get(f"/timemap/json/{url}").json()["mementos"]["list"]] \
        == [a.timestamp, c.timestamp]
    near_b = client.get(f"/web/{b.timestamp[:16]}/{url}", follow_redirects=False)
    assert near_b.status_code == 302 and b.timestamp not in near_b.headers["location"]
    listing = client.get(f"/web/*.json/{url}").json()
    assert [s["id"] for d in listing["days"] for s in d["captures"]] == [c.citation_id, a.citation_id]
    # out of a WACZ export
    out = tmp_path / "x.wacz"
    assert cli("export-wacz", str(out)).exit_code == 0
    with zipfile.ZipFile(out) as z:
        pages = z.read("pages/pages.jsonl").decode()
        import gzip
        cdx = gzip.decompress(z.read("indexes/index.cdx.gz")).decode()
    assert b.citation_id not in pages and a.citation_id in pages and b.timestamp not in cdx
    # the bytes stay and are still checked
    v = cli("verify")
    assert v.exit_code == 0 and "3 record(s) checked" in v.output, v.output
    # recorded with who and why; reversible
    with client.app.state.db.Session() as s:
        events = s.scalars(select(AccessEvent).where(AccessEvent.citation_id == b.citation_id)).all()
        assert [(e.action, e.actor, e.reason) for e in events] == [("withdraw", "alice", "takedown request from the author")]
        assert withdrawn_snapshot_ids(s) == {b.id}
    assert cli("reinstate", b.citation_id, "--reason", "the author agreed").exit_code == 0
    assert client.get(f"/c/{b.citation_id}").status_code == 200
    assert b.timestamp in client.get(f"/timemap/link/{url}").text


def test_restrict_answers_403_without_showing_the_capture(cli, client, three):
    url, (_, b, _) = three
    assert cli("restrict", b.citation_id, "--reason", "personal data").exit_code == 0
    r = client.get(f"/c/{b.citation_id}")
    assert r.status_code == 403 and "restricted" in r.text and url not in r.text and "personal data" not in r.text
    assert client.get(f"/web/{b.timestamp}/{url}").status_code == 403
    again = cli("restrict", b.citation_id, "--reason", "twice")
    assert again.exit_code == 1 and "already restricted" in again.output


def test_unknown_or_malformed_ids_and_missing_reasons_are_clear_errors(cli, three):
    r = cli("withdraw", "ZZZZ-ZZZZ", "--reason", "x")
    assert r.exit_code == 1 and "no snapshot has citation id ZZZZ-ZZZZ" in r.output
    r = cli("withdraw", "not-an-id", "--reason", "x")
    assert r.exit_code == 1 and "is not a citation id" in r.output
    r = cli("withdraw", three[1][0].citation_id, "--reason", "   ")
    assert r.exit_code == 1 and "needs a reason" in r.output


def test_withdrawal_survives_a_reindex_from_the_warc_files(backend_db, server):
    db = backend_db
    url = server.route("/gone", "<p>captured by mistake</p>")
    snap = capture_urls(db, [url])[0].snapshot
    other = capture_urls(db, [server.route("/kept", "<p>kept</p>")])[0].snapshot
    from app.audit.access import change_access

    change_access(db, snap.citation_id, "withdraw", "captured by mistake", actor="bob")
    change_access(db, other.citation_id, "restrict", "private", actor="bob")
    change_access(db, other.citation_id, "reinstate", "fine after all", actor="carol")
    db = _lose_database(db)
    reindex_all(db, reparse=False)
    with db.Session() as s:
        got = s.scalar(select(Snapshot).where(Snapshot.citation_id == snap.citation_id))
        kept = s.scalar(select(Snapshot).where(Snapshot.citation_id == other.citation_id))
        assert (got.access, got.access_reason, got.access_by) == ("withdrawn", "captured by mistake", "bob")
        assert kept.access == "public"
        actions = [(e.citation_id, e.action, e.actor) for e in s.scalars(select(AccessEvent).order_by(AccessEvent.id))]
        assert actions == [(snap.citation_id, "withdraw", "bob"), (other.citation_id, "restrict", "bob"),
                           (other.citation_id, "reinstate", "carol")]
    assert reindex_all(db, reparse=False).indexed == 0   # idempotent: nothing applied twice
    with db.Session() as s:
        assert len(s.scalars(select(AccessEvent)).all()) == 3
    db.dispose()


def test_the_ui_action_needs_a_signed_in_reviewer_and_csrf(client, app, three):
    _, (_, b, _) = three
    anon = client.post(f"/c/{b.citation_id}/access", data={"action": "withdraw", "reason": "x"}, follow_redirects=False)
    assert anon.status_code == 401
    _login(client, app)
    page = client.get(f"/c/{b.citation_id}")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    assert "Withdraw" in BeautifulSoup(page.text, "html.parser").select_one(".access-form").get_text()
    forged = client.post(f"/c/{b.citation_id}/access", data={"action": "withdraw", "reason": "x"},
                         follow_redirects=False)
    assert forged.status_code == 403
    assert client.get(f"/c/{b.citation_id}").status_code == 200
    ok = client.post(f"/c/{b.citation_id}/access", data={"action": "withdraw", "reason": "mistake",
                                                          "csrf_token": token}, follow_redirects=False)
    assert ok.status_code == 303
    tomb = client.get(f"/c/{b.citation_id}")
    assert tomb.status_code == 410
    soup = BeautifulSoup(tomb.text, "html.parser")
    assert "withdraw by rev" in soup.select_one(".access-history").get_text()
    token = soup.select_one(".access-form input[name=csrf_token]")["value"]
    back = client.post(f"/c/{b.citation_id}/access", data={"action": "reinstate", "reason": "undo",
                                                            "csrf_token": token}, follow_redirects=False)
    assert back.status_code == 303 and client.get(f"/c/{b.citation_id}").status_code == 200


def test_capture_list_groups_by_day_with_a_json_twin(client, three):
    url, (a, b, c) = three
    r = client.get(f"/web/*/{url}")
    assert r.status_code == 200
    soup = BeautifulSoup(r.text, "html.parser")
    assert [x["href"] for x in soup.select("a.citation-link")] == [f"/c/{s.citation_id}" for s in (c, b, a)]
    day = f"{a.timestamp[0:4]}-{a.timestamp[4:6]}-{a.timestamp[6:8]}"
    assert soup.select_one(f"section.day#d{day} h2").get_text().startswith(day)
    alt = soup.find("link", rel="alternate", type="application/json")["href"]
    j = client.get(alt).json()
    assert j["count"] == 3 and j["days"][0]["date"] == day
    assert j["days"][0]["captures"][0]["replay_url"] == f"http://caveat.test/web/{c.timestamp}/{url}"
    assert client.get("/web/*/http://never.example/").status_code == 404
    # the framed view and the citation page link to it
    frame = BeautifulSoup(client.get(f"/web/{a.timestamp}/{url}").text, "html.parser")
    assert frame.select_one("a.captures-link")["href"] == f"/web/*/{url}"


def test_a_withdrawn_capture_leaves_the_quotable_evidence_and_comes_back_on_reinstate(app, client, server):
    """The seed's GLM-5.3-Flash ladder, crawled: quotable 373 on its steady state. Withdraw the capture it
    was read from: the recipe quotes nothing and every entry's working number is none (the reason says
    why); reinstate it: 373 again. Real crawl, the withdrawal service, the public API."""
    from app.models import Entry
    from app.watch.schedule import crawl
    from app.claims.sources import add_source
    from app.audit.access import change_access

    rows = "".join(f"<tr><td>GLM-5.3-Flash</td><td>RTX PRO 6000</td><td>SGLang</td><td>{k}</td><td>{t}</td>"
                   f"<td>{'acceptance 64/1.00 on locked attractor; steady state 373-391 tok/s' if k == 64 else ''}</td></tr>"
                   for k, t in ((8, "300.7"), (12, "443.1"), (28, "808.5"), (64, "1,004.9")))
    page = ("<table><tr><th>Model</th><th>GPU</th><th>Engine</th><th>Draft tokens</th><th>tok/s</th><th>Notes</th></tr>"
            f"{rows}</table>")
    url = server.route("/ladder", page, content_type="text/html; charset=utf-8")
    db = app.state.db
    with db.session() as s:
        add_source(s, "ladder", url, "html")
    crawl(db, app.state.settings, ["ladder"])
    with db.Session() as s:
        rid = s.scalar(select(Entry.recipe_id).where(Entry.model == "GLM-5.3-Flash"))
        cid = s.scalar(select(Snapshot.citation_id).where(Snapshot.url == url))

    def answer():
        return client.get(f"/api/recipes/{rid}/quotable").json()

    assert (answer()["quotable_tps"], answer()["basis"]) == (373.0, "steady_state")
    change_access(db, cid, "withdraw", "captured by mistake", actor="tester")
    a = answer()
    assert a["quotable_tps"] is None and a["basis"] == "none"
    assert cid not in str(a.get("citations"))      # none of its evidence is cited
    with db.Session() as s:
        entries = s.scalars(select(Entry).where(Entry.recipe_id == rid)).all()
        assert entries and all(e.working_tps is None and "withdrawn" in (e.basis_reason or "") for e in entries)
    change_access(db, cid, "reinstate", "it was right after all", actor="tester")
    assert (answer()["quotable_tps"], answer()["basis"]) == (373.0, "steady_state")


def test_the_audit_log_shows_who_withdrew_what_and_why(cli, client, three):
    _url, snaps = three
    r = cli("withdraw", snaps[0].citation_id, "--reason", "takedown request from the page owner", "--by", "alice")
    assert r.exit_code == 0, r.output
    page = BeautifulSoup(client.get("/audit-log").text, "html.parser")
    row = page.select_one(".access-log tbody tr")
    assert row is not None and "alice" in row.get_text() and "withdrawn" in row.get_text()
    assert "takedown request from the page owner" in row.get_text()
    assert row.select_one("a")["href"] == f"/c/{snaps[0].citation_id}"
    twin = client.get("/audit-log.json").json()
    assert twin["access_events"][0]["reason"] == "takedown request from the page owner"
