"""Issue 24, item 4: the transparency log does not accept forgeries. A record appended to Caveat's own
WARC file by hand (backdated, with digests of its own) is reported by `caveat verify --log` and indexed
by `caveat reindex` as unverified, not as a capture Caveat made (and /c/ID says so); a log cut short and
re-signed with a new key fails verification unless the key is pinned (CAVEAT_LOG_PUBLIC_KEYS) or
accepted (`--accept-key`). Real HTTP servers on 127.0.0.1 for the captures."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from sqlalchemy import select
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from app.capture.http import capture_urls
from app.models import Snapshot
from app.rebuild.reindex import reindex_all
from app.storage import tlog
from tests.conftest import make_settings
from tests.test_reindex import _lose_database


@pytest.fixture
def captured(app, server):
    urls = [server.route(f"/p{i}", f"<html><body><p>page {i}: {i}00 tok/s</p></body></html>") for i in range(3)]
    results = capture_urls(app.state.db, urls)
    assert all(r.ok for r in results)
    return [r.snapshot for r in results]


def _append_forged(path, url: str) -> str:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True, warc_version="1.1")
    body = b"<html><body><p>page 9: 5000 tok/s</p></body></html>"
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                            protocol="HTTP/1.1")
    rec = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                    warc_headers_dict={"WARC-Date": "2020-01-02T03:04:05Z"})
    writer.write_record(rec)
    with open(path, "ab") as f:
        f.write(buf.getvalue())
    return rec.rec_headers.get_header("WARC-Record-ID")


def test_a_record_appended_by_hand_is_unlogged_and_reindexed_as_unverified(app, cli, captured, settings):
    first = captured[0]
    forged_id = _append_forged(settings.warc_dir / first.warc_file, "http://127.0.0.1:1/forged")
    r = cli("verify", "--log")
    assert r.exit_code == 1 and f"unlogged record: response {forged_id}" in r.output, r.output

    db = _lose_database(app.state.db)
    try:
        reindex_all(db, reparse=False)
        with db.Session() as s:
            rows = {x.record_id: x for x in s.scalars(select(Snapshot))}
    finally:
        db.dispose()
    forged = rows[forged_id]
    assert forged.verified is False
    assert all(rows[c.record_id].verified is True for c in captured)
    r = cli("verify", "--log")
    assert r.exit_code == 1 and f"unlogged record: response {forged_id}" in r.output, r.output

    from fastapi.testclient import TestClient

    from app.main import create_app

    fresh = create_app(settings)
    with TestClient(fresh, base_url="http://caveat.test") as c:
        page = c.get(f"/c/{forged.citation_id}")
        assert page.status_code == 200 and "Unverified" in page.text and "not a capture Caveat made" in page.text
        assert c.get(f"/c/{forged.citation_id}.json").json()["verified"] is False
        honest = c.get(f"/c/{captured[1].citation_id}")
        assert "captured by Caveat" in honest.text and "Unverified" not in honest.text
    fresh.state.db.dispose()


def test_imports_are_listed_as_such_and_pass(cli, app, settings, tmp_path):
    from app.rebuild.importer import import_warcs
    from tests.capture_helpers import foreign_warc

    path = tmp_path / "other-tool.warc.gz"
    foreign_warc(path, 3, "imp")
    assert len(import_warcs(app.state.db, [path])[0].imported) == 3
    r = cli("verify", "--log")
    assert r.exit_code == 0 and "imports: 3 logged record(s)" in r.output, r.output


def _rekey_after_cut(settings, keep: int, *, keep_old_heads: bool) -> None:
    """What an operator who wants withdrawals gone does: the WARC and the log cut back to ``keep``
    leaves, the signing key deleted, a new tree head signed with a new key."""
    d = tlog.log_dir(settings)
    entries = tlog.read_entries(d)
    cut = entries[keep]
    with open(settings.warc_dir / cut["warc_file"], "r+b") as f:
        f.truncate(cut["offset"])
    (d / "entries.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries[:keep]))
    (d / "leaves").write_bytes(b"".join(tlog.read_leaves(d)[:keep]))
    for name in ("state.json", "sth.json"):
        (d / name).unlink(missing_ok=True)
    if not keep_old_heads:   # (a careless one leaves the old tree heads in sth/)
        shutil.rmtree(d / "sth")
    tlog.key_path(settings).unlink()
    tlog._KEYS.clear()
    tlog._STATE_OK.clear()
    tlog.sign_latest(settings)


@pytest.mark.parametrize("keep_old_heads", [False, True])
def test_a_log_cut_and_re_signed_with_a_new_key_fails_unless_pinned_or_accepted(app, cli, captured, settings,
                                                                                  tmp_path, keep_old_heads):
    held = tmp_path / "held.json"
    shutil.copy(tlog.log_dir(settings) / "sth.json", held)
    old_key = json.loads(held.read_text())["public_key"]
    before = len(tlog.read_entries(tlog.log_dir(settings)))
    for snap in captured:
        assert cli("withdraw", snap.citation_id, "--reason", "asked to").exit_code == 0
    assert cli("verify", "--log", "--tree-head", str(held)).exit_code == 0
    _rekey_after_cut(settings, before, keep_old_heads=keep_old_heads)
    new_key = tlog.latest_tree_head(settings)["public_key"]
    assert new_key != old_key

    r = cli("verify", "--log", "--tree-head", str(held))
    assert r.exit_code == 1 and "signed by another key" in r.output and new_key in r.output, r.output
    pinned = make_settings(tmp_path, settings.database_url, log_public_keys=old_key)
    r = cli("verify", "--log", settings_override=pinned)
    assert r.exit_code == 1 and "another key than the pinned ones" in r.output, r.output
    if keep_old_heads:   # the heads left behind tell on their own
        r = cli("verify", "--log")
        assert r.exit_code == 1 and "signed by another key" in r.output, r.output
        assert f"stored tree head of size {before + 1}" in r.output and "leaves were cut" in r.output
        return
    # a deliberate change of key, accepted explicitly or pinned, passes
    r = cli("verify", "--log", "--tree-head", str(held), "--accept-key", new_key)
    assert r.exit_code == 0, r.output
    both = make_settings(tmp_path, settings.database_url, log_public_keys=f"{old_key},{new_key}")
    assert cli("verify", "--log", "--tree-head", str(held), settings_override=both).exit_code == 0


def test_an_honest_log_passes_with_its_key_pinned(app, cli, captured, settings, tmp_path):
    key = tlog.latest_tree_head(settings)["public_key"]
    pinned = make_settings(tmp_path, settings.database_url, log_public_keys=key)
    r = cli("verify", "--log", settings_override=pinned)
    assert r.exit_code == 0 and "every WARC record is logged" in r.output, r.output


