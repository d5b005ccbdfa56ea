"""Corrections (issue 27) and reviewer records in the WARC files (issue 29 item 2): fix a field, add a
missed figure from a quote selector, reject an entry; every correction applied after every parse, kept
through `caveat reparse` and through `caveat reindex` after the database is deleted; a stale correction
gets 412 with the current state; the API needs the `correct` scope, and CSRF with a cookie."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.crawl.workflow import reparse
from app.accounts import auth
from app.errors import BadRequest, PreconditionFailed
from app.models import ChangeEvent, Correction, Entry, Flag, Snapshot
from app.rebuild.reindex import reindex_all
from app.review import corrections as review
from tests.test_reindex import _lose_database

BOARD = """# Decode speed

| Model | GPU | Engine | tok/s |
| --- | --- | --- | --- |
| Llama-3-8B | RTX 4090 | vLLM | 120.5 |
| Qwen3-32B | H100 | SGLang | 88.0 |

Footnote: Mistral-7B scored 140.2 on the A100 box, and 140.2 again later.
"""


def _setup(cli, server):
    url = server.route("/board.md", BOARD, content_type="text/markdown")
    assert cli("source", "add", "board", url, "--kind", "markdown").exit_code == 0
    r = cli("crawl")
    assert r.exit_code == 0, r.output
    return url


def _entry(db, model):
    with db.Session() as s:
        return s.scalar(select(Entry).where(Entry.model == model))


def _live(db):
    with db.Session() as s:
        return sorted((e.model, e.headline_tps) for e in s.scalars(select(Entry).where(Entry.gone.is_(False))))


def test_fix_add_reject_survive_reparse_and_reindex(cli, server, db):
    _setup(cli, server)
    settings = db.settings
    before = _live(db)
    assert ("Llama-3-8B", 120.5) in before and ("Qwen3-32B", 88.0) in before
    llama = _entry(db, "Llama-3-8B")
    st = review.entry_state(db.Session(), llama.id)
    out = review.fix_entry(db, settings, llama.id, {"model": "Llama-3.1-8B", "gpu_count": "2"}, "the page's title says 3.1",
                           actor="alice", version=st["version"])
    assert out["entry_id"] == llama.id and out["entry"]["fields"]["model"] == "Llama-3.1-8B"
    assert out["entry"]["fields"]["gpu_count"] == 2 and out["entry"]["version"] == st["version"] + 1
    # a stale second correction: 412 with the current state, nothing stored
    with pytest.raises(PreconditionFailed) as stale:
        review.fix_entry(db, settings, llama.id, {"model": "X"}, "too late", actor="bob", version=st["version"])
    assert stale.value.detail["current"]["fields"]["model"] == "Llama-3.1-8B"
    qwen = _entry(db, "Qwen3-32B")
    review.reject_entry(db, settings, qwen.id, "a prefill figure from a vendor ad, not a claim", actor="alice")
    with db.Session() as s:
        snap = s.scalar(select(Snapshot).where(Snapshot.source_id.is_not(None)))
        cid = snap.citation_id
    # a missed figure: bad selectors first, nothing stored
    for quote, prefix, why in (("999.9", "", "not in"), ("140.2", "", "occurs"), ("Mistral-7B", "", "not a number")):
        with pytest.raises(BadRequest, match=why):
            review.add_entry(db, settings, cid, quote, prefix, "", {}, "missed", actor="alice")
    added = review.add_entry(db, settings, cid, "140.2", "scored ", " on", {"model": "Mistral-7B", "engine": "TensorRT-LLM"},
                             "the side note's figure", actor="alice")
    assert added["entry"]["fields"]["headline_tps"] == 140.2
    want = sorted([("Llama-3.1-8B", 120.5), ("Mistral-7B", 140.2)])
    assert _live(db) == want
    with db.Session() as s:
        assert [c.kind for c in s.scalars(select(Correction).order_by(Correction.id))] == ["fix", "reject", "add"]
        assert s.scalar(select(ChangeEvent).where(ChangeEvent.kind == "corrected")) is not None
    # reparse keeps them
    reparse(db, settings)
    assert _live(db) == want
    # and so does a reindex after losing the database
    fresh = _lose_database(db)
    reindex_all(fresh)
    assert _live(fresh) == want
    with fresh.Session() as s:
        rows = s.scalars(select(Correction).order_by(Correction.id)).all()
        assert [(c.kind, c.actor) for c in rows] == [("fix", "alice"), ("reject", "alice"), ("add", "alice")]
    e = _entry(fresh, "Llama-3.1-8B")
    with fresh.Session() as s:
        hist = review.history(s, e.id)
    assert hist and hist[0]["fields"] == {"model": "Llama-3.1-8B", "gpu_count": 2}


def _token(db, scopes):
    with db.session() as s:
        if auth.get_user(s, "rev") is None:
            auth.create_user(s, "rev", "reviewer-pass")
        return auth.create_token(s, "rev", f"t-{scopes}", scopes=scopes)


def test_api_scope_version_and_bad_input(cli, server, client, app):
    _setup(cli, server)
    db = app.state.db
    llama = _entry(db, "Llama-3-8B")
    body = {"fields": {"model": "Llama-3.1-8B"}, "why": "title says 3.1"}
    # without the `correct` scope: refused, nothing stored
    weak = _token(db, "read,decide")
    r = client.patch(f"/api/entries/{llama.id}", json=body, headers={"Authorization": f"Bearer {weak}"})
    assert r.status_code == 403 and "correct" in r.json()["error"]
    tok = {"Authorization": f"Bearer {_token(db, 'read,correct')}"}
    got = client.get(f"/api/entries/{llama.id}").json()
    assert got["field_sources"]["model"] == "parser" and got["etag"] == f'"v{got["version"]}"'
    # a wrong type: 400, nothing stored
    r = client.patch(f"/api/entries/{llama.id}", json={"fields": {"gpu_count": "two"}, "why": "x"}, headers=tok)
    assert r.status_code == 400 and "gpu_count" in r.json()["error"]
    r = client.patch(f"/api/entries/{llama.id}", json=body, headers={**tok, "If-Match": got["etag"]})
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == f'"v{got["version"] + 1}"'
    # the same If-Match again is stale: 412 with the current state
    r = client.patch(f"/api/entries/{llama.id}", json={"fields": {"model": "Other"}, "why": "x"},
                     headers={**tok, "If-Match": got["etag"]})
    assert r.status_code == 412 and r.json()["detail"]["current"]["fields"]["model"] == "Llama-3.1-8B"
    now = client.get(f"/api/entries/{llama.id}").json()
    assert now["fields"]["model"] == "Llama-3.1-8B" and now["field_sources"]["model"] == "reviewer"
    assert now["field_sources"]["hardware"] == "parser"
    assert now["reviewed"]["model"]["by"] == "rev" and now["reviewed"]["model"]["was"] == "Llama-3-8B"
    assert [c["kind"] for c in now["corrections"]] == ["fix"]
    changes = client.get("/api/changes", params={"kind": "corrected"}).json()
    assert changes["changes"] and changes["changes"][0]["kind"] == "corrected"
    # a missed figure: a bad selector is a 400 and nothing is stored
    with db.Session() as s:
        cid = s.scalar(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None)))
    r = client.post("/api/entries", json={"snapshot": cid, "quote": {"exact": "140.2"}, "why": "x"}, headers=tok)
    assert r.status_code == 400 and "2 times" in r.json()["error"]
    r = client.post("/api/entries", json={"snapshot": cid, "quote": {"exact": "Footnote"}, "why": "x"}, headers=tok)
    assert r.status_code == 400 and "not a number" in r.json()["error"]
    with db.Session() as s:
        assert len(s.scalars(select(Correction)).all()) == 1
    r = client.post("/api/entries", json={"snapshot": cid, "quote": {"exact": "140.2", "prefix": "scored ", "suffix": " on"},
                                          "fields": {"model": "Mistral-7B"}, "why": "footnote"}, headers=tok)
    assert r.status_code == 201 and r.json()["entry"]["fields"]["headline_tps"] == 140.2
    qwen = _entry(db, "Qwen3-32B")
    r = client.post(f"/api/entries/{qwen.id}/reject", json={"why": "vendor ad"}, headers=tok)
    assert r.status_code == 200 and r.json()["entry"]["gone"] is True
    assert client.get(f"/api/entries/{qwen.id}").json()["rejected"]["why"] == "vendor ad"


def test_cookie_needs_csrf(cli, server, client, app):
    _setup(cli, server)
    from tests.test_csrf import _login
    _login(client, app)
    llama = _entry(app.state.db, "Llama-3-8B")
    r = client.patch(f"/api/entries/{llama.id}", json={"fields": {"model": "X"}, "why": "x"})
    assert r.status_code == 403
    page = client.get(f"/entries/{llama.id}")
    import re
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    r = client.patch(f"/api/entries/{llama.id}", json={"fields": {"model": "X"}, "why": "x"},
                     headers={"X-CSRF-Token": token})
    assert r.status_code == 200, r.text


def test_cli_fix_add_reject(cli, server, db):
    _setup(cli, server)
    llama = _entry(db, "Llama-3-8B")
    r = cli("entry", "fix", str(llama.id), "--model", "Llama-3.1-8B", "--phase", "decode", "--why", "title", "--by", "carol")
    assert r.exit_code == 0 and "fixed model, phase" in r.output, r.output
    r = cli("entry", "fix", str(llama.id), "--gpu-count", "x", "--why", "bad")
    assert r.exit_code == 1 and "gpu_count" in r.output
    r = cli("entry", "fix", str(llama.id), "--model", "Y", "--why", "stale", "--version", "1")
    assert r.exit_code == 1 and "version" in r.output
    with db.Session() as s:
        cid = s.scalar(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None)))
    r = cli("entry", "add", cid, "--quote", "140.2", "--prefix", "scored ", "--suffix", " on", "--model", "Mistral-7B",
            "--why", "footnote", "--json")
    assert r.exit_code == 0 and '"headline_tps": 140.2' in r.output, r.output
    qwen = _entry(db, "Qwen3-32B")
    r = cli("entry", "reject", str(qwen.id), "--why", "not a claim")
    assert r.exit_code == 0 and "rejected" in r.output
    assert _live(db) == [("Llama-3.1-8B", 120.5), ("Mistral-7B", 140.2)]


def test_decisions_come_back_after_reindex_and_reindex_says_what_it_cannot(cli, server, client, app):
    _setup(cli, server)
    db = app.state.db
    tok = {"Authorization": f"Bearer {_token(db, 'read,decide')}"}
    with db.Session() as s:
        flag = s.scalar(select(Flag).order_by(Flag.id))
        assert flag is not None
        eid, rule = flag.entry_id, flag.rule
        model = s.get(Entry, eid).model
    r = client.post(f"/api/flags/{flag.id}/decision", json={"action": "dismiss", "note": "checked the page"}, headers=tok)
    assert r.status_code == 200, r.text
    with db.Session() as s:
        assert [(c.kind, c.fields["rule"], c.actor) for c in s.scalars(select(Correction))] == [("decision", rule, "rev")]
    db.dispose()
    fresh = _lose_database(db)
    fresh.dispose()
    r = cli("reindex")
    assert r.exit_code == 0, r.output
    assert "not restored" in r.output and "accounts" in r.output and "tokens" in r.output and "webhooks" in r.output
    with fresh.Session() as s:
        e = s.scalar(select(Entry).where(Entry.model == model))
        f = s.scalar(select(Flag).where(Flag.entry_id == e.id, Flag.rule == rule))
        assert f.status == "dismissed"
