"""The tamper-evident log (issue 13): RFC 9162 hashing and proofs, every record Caveat writes appended,
a signed tree head at /log/sth.json, the inclusion proof on the citation page, and `caveat verify --log`
catching a tampered record, a deleted record and a forked log, also after `caveat reindex`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings as hsettings, strategies as st

from app.storage import tlog
from app.capture.http import capture_urls
from archive import merkle
from tests.test_reindex import _lose_database


# -- the tree ----------------------------------------------------------------------------------------

def test_hashing_follows_rfc_9162():
    # the well-known Certificate Transparency values: the empty tree and the leaf of empty data
    assert merkle.root([]).hex() == hashlib.sha256(b"").hexdigest()
    assert merkle.leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    a, b, c = (merkle.leaf_hash(x) for x in (b"a", b"b", b"c"))
    assert merkle.root([a, b, c]) == merkle.node_hash(merkle.node_hash(a, b), c)  # split at the largest power of 2
    assert merkle.node_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()


@hsettings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=70), st.data())
def test_proofs_verify_and_catch_any_change(n, data):
    leaves = [merkle.leaf_hash(str(i).encode()) for i in range(n)]
    f = merkle.Frontier()
    for leaf in leaves:
        f.append(leaf)
    top = merkle.root(leaves)
    assert f.root() == top
    i = data.draw(st.integers(min_value=0, max_value=n - 1))
    path = merkle.inclusion_proof(leaves, i)
    assert merkle.verify_inclusion(leaves[i], i, n, path, top)
    assert not merkle.verify_inclusion(merkle.leaf_hash(b"other"), i, n, path, top)
    if n > 1:
        assert not merkle.verify_inclusion(leaves[i], (i + 1) % n, n, path, top)
    m = data.draw(st.integers(min_value=1, max_value=n))
    proof = merkle.consistency_proof(leaves, m)
    assert merkle.verify_consistency(m, n, merkle.root(leaves[:m]), top, proof)
    forked = [merkle.leaf_hash(b"forged")] + leaves[1:]
    if m < n:
        assert not merkle.verify_consistency(m, n, merkle.root(forked[:m]), top, proof)


# -- the log -----------------------------------------------------------------------------------------

@pytest.fixture
def logged(app, server):
    urls = [server.route(f"/p{i}", f"<html><body><p>page {i}: {i}00 tok/s</p></body></html>") for i in range(3)]
    results = capture_urls(app.state.db, urls)
    assert all(r.ok for r in results)
    return [r.snapshot for r in results]


def _entries(settings):
    return tlog.read_entries(tlog.log_dir(settings))


def test_every_record_written_is_logged_and_the_tree_head_is_signed(app, client, logged, settings):
    entries = _entries(settings)
    ids = {e["record_id"] for e in entries}
    for snap in logged:
        assert snap.record_id in ids                       # responses
    assert len(entries) >= 1 + 2 * len(logged)             # warcinfo, responses, requests
    sth = client.get("/log/sth.json").json()
    assert sth["tree_size"] == len(entries) and tlog.check_tree_head(sth)
    assert client.get(f"/log/sth/{sth['tree_size']}.json").json() == sth
    tampered = dict(sth, root_hash="00" * 32)
    assert not tlog.check_tree_head(tampered)
    # the citation page shows the inclusion proof, and it checks out against the published head
    page = client.get(f"/c/{logged[1].citation_id}")
    soup = BeautifulSoup(page.text, "html.parser")
    assert "checks out" in soup.select_one("#log").get_text()
    j = client.get(f"/c/{logged[1].citation_id}.json").json()["log"]
    assert j["verified"] and j["root_hash"] == sth["root_hash"]
    ok = merkle.verify_inclusion(bytes.fromhex(j["leaf_hash"]), j["leaf_index"], j["tree_size"],
                                 [bytes.fromhex(h) for h in j["audit_path"]], bytes.fromhex(sth["root_hash"]))
    assert ok
    cons = client.get("/log/consistency.json", params={"first": 2, "second": sth["tree_size"]}).json()
    assert merkle.verify_consistency(2, sth["tree_size"], bytes.fromhex(cons["first_root"]),
                                     bytes.fromhex(sth["root_hash"]), [bytes.fromhex(h) for h in cons["proof"]])


def _save_head(settings, tmp_path) -> str:
    path = tmp_path / "held-by-a-reader.json"
    shutil.copy(tlog.log_dir(settings) / "sth.json", path)
    return str(path)


def test_verify_log_passes_on_an_honest_log_and_extends_an_earlier_head(cli, logged, settings, tmp_path, server, app):
    held = _save_head(settings, tmp_path)
    assert capture_urls(app.state.db, [server.route("/later", "<p>later</p>")])[0].ok
    r = cli("verify", "--log", "--tree-head", held)
    assert r.exit_code == 0 and "ok: the log's" in r.output and "2 signed tree head(s)" in r.output, r.output


def _reindexed(app):
    from app.rebuild.reindex import reindex_all

    db = _lose_database(app.state.db)
    reindex_all(db, reparse=False)
    db.dispose()


@pytest.mark.parametrize("after_reindex", [False, True])
def test_a_tampered_record_is_caught(cli, logged, settings, tmp_path, app, after_reindex):
    held = _save_head(settings, tmp_path)
    snap = logged[1]
    path = settings.warc_dir / snap.warc_file
    with open(path, "r+b") as f:                           # one byte inside the response's gzip member
        f.seek(snap.offset + snap.length // 2)
        byte = f.read(1)
        f.seek(snap.offset + snap.length // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    if after_reindex:
        _reindexed(app)
    r = cli("verify", "--log", "--tree-head", held)
    assert r.exit_code == 1 and f"tampered record: {snap.record_id}" in r.output, r.output


@pytest.mark.parametrize("after_reindex", [False, True])
def test_a_deleted_record_is_caught(cli, logged, settings, tmp_path, app, after_reindex):
    held = _save_head(settings, tmp_path)
    last = logged[-1]
    path = settings.warc_dir / last.warc_file
    with open(path, "r+b") as f:                           # the last capture cut out of the file
        f.truncate(last.offset)
    if after_reindex:
        _reindexed(app)
    r = cli("verify", "--log", "--tree-head", held)
    assert r.exit_code == 1 and f"deleted record: {last.record_id}" in r.output, r.output


@pytest.mark.parametrize("after_reindex", [False, True])
def test_a_forked_log_is_caught_by_anyone_holding_an_earlier_tree_head(cli, logged, settings, tmp_path, app,
                                                                       after_reindex):
    """The operator removes a capture from the WARC and rebuilds the log without it, signed with the
    same key: the log checks out on its own, but not against the head a reader saved."""
    held = _save_head(settings, tmp_path)
    victim = logged[1]
    d = tlog.log_dir(settings)
    entries = [e for e in _entries(settings) if e["record_id"] != victim.record_id]
    # rewrite the WARC without the victim's member and the log to match it
    path = settings.warc_dir / victim.warc_file
    data = path.read_bytes()
    cut = data[:victim.offset] + data[victim.offset + victim.length:]
    path.write_bytes(cut)
    for name in ("entries.jsonl", "leaves", "state.json", "sth.json"):
        (d / name).unlink()
    shutil.rmtree(d / "sth")

    class W:  # a record at its new place
        def __init__(self, e):
            shift = victim.length if e["offset"] > victim.offset else 0
            self.record_id, self.offset, self.length = e["record_id"], e["offset"] - shift, e["length"]

    tlog.append_written(settings, victim.warc_file, [W(e) for e in entries], sign=True)
    honest_alone = cli("verify", "--log")
    assert honest_alone.exit_code == 0, honest_alone.output   # self-consistent: only an earlier head can tell
    if after_reindex:
        _reindexed(app)
    r = cli("verify", "--log", "--tree-head", held)
    assert r.exit_code == 1 and "forked log" in r.output, r.output


def test_an_edited_log_entry_and_a_bad_tree_head_file_are_reported(cli, logged, settings, tmp_path):
    d = tlog.log_dir(settings)
    lines = (d / "entries.jsonl").read_text().splitlines()
    e = json.loads(lines[2])
    e["sha256"] = "0" * 64
    lines[2] = json.dumps(e, sort_keys=True)
    (d / "entries.jsonl").write_text("\n".join(lines) + "\n")
    r = cli("verify", "--log")
    assert r.exit_code == 1 and "entry 2 does not hash to leaf 2" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    r = cli("verify", "--log", "--tree-head", str(bad))
    assert r.exit_code == 1 and "is not a tree head" in r.output


def test_withdrawal_records_are_logged_too(cli, logged, settings):
    before = len(_entries(settings))
    assert cli("withdraw", logged[0].citation_id, "--reason", "test").exit_code == 0
    assert len(_entries(settings)) == before + 1
    assert cli("verify", "--log").exit_code == 0


def test_leaves_cut_short_by_a_crash_are_rebuilt_from_the_fsynced_entries(cli, logged, settings, server, app):
    d = tlog.log_dir(settings)
    data = (d / "leaves").read_bytes()
    (d / "leaves").write_bytes(data[:-40])            # the unsynced leaf file lost its tail
    tlog._STATE_OK.clear()                            # a new process
    assert capture_urls(app.state.db, [server.route("/after-crash", "<p>after</p>")])[0].ok
    r = cli("verify", "--log")
    assert r.exit_code == 0, r.output
    assert len(tlog.read_leaves(d)) == len(tlog.read_entries(d))


def test_imported_records_are_logged_too(cli, app, settings, tmp_path):
    """`caveat import-warc` copies records into Caveat's WARC: each one is a leaf of the log, and
    `caveat verify --log` checks them."""
    from app.models import Snapshot
    from app.rebuild.importer import import_warcs
    from tests.capture_helpers import foreign_warc

    path = tmp_path / "other-tool.warc.gz"
    foreign_warc(path, 4, "imp")
    before = len(_entries(settings))
    reports = import_warcs(app.state.db, [path])
    assert len(reports[0].imported) == 4
    entries = _entries(settings)
    with app.state.db.Session() as s:
        ids = {r for (r,) in s.query(Snapshot.record_id)}
    logged = {e["record_id"] for e in entries}
    assert len(entries) - before in (4, 5) and ids <= logged      # (and the new file's warcinfo record)
    r = cli("verify", "--log")
    assert r.exit_code == 0 and "ok: the log's" in r.output, r.output
