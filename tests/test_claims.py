"""Storing parse results: entry identity, versions with provenance, change history, recipes, ladders.

These tests hand-make ParseResults (the parsers are tested in tests/test_scrapers*.py) and store them
against snapshot rows, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest
from sqlalchemy import func, select

from app.db import Database
from app.models import Entry, EntryVersion, Recipe, Snapshot
from app.claims.store import SourceState, store_parse
from app.claims.identity import entry_keys, recipe_id_for, recipe_key
from app.claims.sources import add_source
from scrapers.fields import ParsedEntry, ParseResult

_ids = itertools.count(1)

LADDER = [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]


def make_snapshot(session, source, ts: str) -> Snapshot:
    n = next(_ids)
    snap = Snapshot(
        citation_id=f"T{n:03d}-TEST"[:9], url=source.url, surt="test", timestamp=ts,
        captured_at=datetime.now(timezone.utc), status=200, mime="text/html", warc_file="t.warc.gz",
        offset=0, length=1, record_id=f"<urn:uuid:{n}-{ts}>", sha256="0" * 64, source_id=source.id,
    )
    session.add(snap)
    session.flush()
    return snap


def ladder_result(*, hardware="RTX PRO 6000 Blackwell", headline_64=1004.9,
                  notes="acceptance 64/1.00 on locked attractor", drop_last=False) -> ParseResult:
    entries = []
    for draft, tps in LADDER:
        if draft == 64:
            tps = headline_64
        f = {"model": "GLM-5.3-Flash", "hardware": hardware, "gpu_count": 2, "engine": "SGLang",
             "quantization": "NVFP4", "tp": 2, "concurrency": 1, "context_length": 8192, "draft_tokens": draft,
             "headline_tps": tps, "submitter": "alice"}
        q = {"headline_tps": f"{tps:,}", "model": "GLM-5.3-Flash"}
        if draft == 64 and notes is not None:
            f["notes"] = notes
            q["notes"] = notes
        entries.append(ParsedEntry(fields=f, quotes=q, extra={"rank": draft}))
    if drop_last:
        entries = entries[:-1]
    return ParseResult(kind="html", entries=entries)


@pytest.fixture
def sdb(backend_settings):
    d = Database(backend_settings)
    yield d
    d.dispose()


def test_recipe_id_ignores_draft_width_and_naming_noise():
    a = {"model": "zai-org/GLM-5.3-Flash", "hardware": "RTX PRO 6000 Blackwell", "engine": "SGLang", "draft_tokens": 8}
    b = {"model": "glm-5.3-flash", "hardware": "rtx  pro 6000", "engine": "sglang", "draft_tokens": 64,
         "headline_tps": 1.0, "notes": "x"}
    c = dict(b, hardware="RTX 6000 Ada")
    assert recipe_id_for(recipe_key(a)) == recipe_id_for(recipe_key(b))
    assert recipe_id_for(recipe_key(a)) != recipe_id_for(recipe_key(c))
    assert recipe_id_for(recipe_key(a)).startswith("r-") and len(recipe_id_for(recipe_key(a))) == 14
    assert recipe_key({"headline_tps": 5.0}) is None


def test_entry_keys_give_repeated_rows_ordinals():
    rows = [{"model": "m", "draft_tokens": 20}, {"model": "m", "draft_tokens": 20}, {"model": "m", "draft_tokens": 8}]
    keys = entry_keys(rows)
    assert len(set(keys)) == 3
    assert keys[0].endswith(":0") and keys[1].endswith(":1") and keys[2].endswith(":0")
    assert entry_keys(rows) == keys


def test_first_store_creates_entries_versions_and_one_recipe(sdb):
    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        snap = make_snapshot(s, src, "20261201000000000")
        summary = store_parse(s, src, snap, ladder_result())
        assert (summary.new, summary.changed, summary.unchanged, summary.gone) == (6, 0, 0, 0)
        assert len(summary.entry_ids) == 6
    with sdb.session() as s:
        entries = s.scalars(select(Entry).order_by(Entry.id)).all()
        assert len({e.recipe_id for e in entries}) == 1
        assert s.scalar(select(func.count(Recipe.id))) == 1
        top = entries[-1]
        assert top.headline_tps == 1004.9 and top.draft_tokens == 64 and top.notes.startswith("acceptance")
        v = s.get(EntryVersion, top.current_version_id)
        assert v.version_no == 1 and v.snapshot_id == top.first_snapshot_id
        assert v.provenance["headline_tps"] == "1,004.9"
        assert v.extra == {"rank": 64}


def test_recrawl_records_changed_fields_and_keeps_history(sdb):
    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        s1 = make_snapshot(s, src, "20261201000000000")
        store_parse(s, src, s1, ladder_result())
        rid = s.scalar(select(Entry.recipe_id))
    with sdb.session() as s:
        src = s.get(type(src), src.id)
        s2 = make_snapshot(s, src, "20261202000000000")
        summary = store_parse(s, src, s2, ladder_result(headline_64=990.0, notes=None))
        assert (summary.new, summary.changed, summary.unchanged) == (0, 1, 5)
        s3 = make_snapshot(s, src, "20261203000000000")
        summary = store_parse(s, src, s3, ladder_result(headline_64=990.0, notes=None))
        assert (summary.new, summary.changed, summary.unchanged) == (0, 0, 6)
    with sdb.session() as s:
        top = s.scalar(select(Entry).where(Entry.draft_tokens == 64))
        assert top.headline_tps == 990.0 and top.notes is None and top.recipe_id == rid
        assert top.last_snapshot_id == s3.id
        versions = s.scalars(select(EntryVersion).where(EntryVersion.entry_id == top.id)
                             .order_by(EntryVersion.version_no)).all()
        assert [v.version_no for v in versions] == [1, 2]
        assert versions[0].fields["headline_tps"] == 1004.9  # nothing overwritten
        assert versions[1].changed_fields == {
            "headline_tps": [1004.9, 990.0], "notes": ["acceptance 64/1.00 on locked attractor", None]}


def test_absent_rows_are_marked_gone_and_come_back(sdb):
    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        store_parse(s, src, make_snapshot(s, src, "20261201000000000"), ladder_result())
        summary = store_parse(s, src, make_snapshot(s, src, "20261202000000000"), ladder_result(drop_last=True))
        assert summary.gone == 1
        assert s.scalar(select(func.count(Entry.id)).where(Entry.gone.is_(True))) == 1
        assert s.scalar(select(func.count(Entry.id))) == 6  # not deleted
        summary = store_parse(s, src, make_snapshot(s, src, "20261203000000000"), ladder_result())
        assert summary.gone == 0 and summary.unchanged == 6
        assert s.scalar(select(func.count(Entry.id)).where(Entry.gone.is_(True))) == 0


def test_empty_parse_changes_nothing(sdb):
    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        store_parse(s, src, make_snapshot(s, src, "20261201000000000"), ladder_result())
        summary = store_parse(s, src, make_snapshot(s, src, "20261202000000000"),
                              ParseResult(kind="html", warnings=["no table found"]))
        assert summary.parsed == 0 and summary.gone == 0
        assert summary.warnings == ["page: no table found"]
        assert s.scalar(select(func.count(Entry.id)).where(Entry.gone.is_(True))) == 0


def test_replaying_history_with_the_same_parser_adds_no_versions(sdb):
    """Reparse compares each snapshot with the entry as it stood at that snapshot, not with today."""
    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        snaps = [make_snapshot(s, src, f"2026120{d}000000000") for d in (1, 2)]
        store_parse(s, src, snaps[0], ladder_result())
        store_parse(s, src, snaps[1], ladder_result(headline_64=990.0))
        before = s.scalar(select(func.count(EntryVersion.id)))
        state = SourceState.load(s, src.id, all_versions=True)
        for snap, res in zip(snaps, (ladder_result(), ladder_result(headline_64=990.0))):
            summary = store_parse(s, src, snap, res, state=state)
            assert summary.changed == 0 and summary.new == 0
        assert s.scalar(select(func.count(EntryVersion.id))) == before
        # An improved parser that now reads the hardware differently changes identity only if it
        # changes the normalised name; case and vendor words do not.
        state = SourceState.load(s, src.id, all_versions=True)
        summary = store_parse(s, src, snaps[1], ladder_result(hardware="NVIDIA rtx pro 6000", headline_64=990.0),
                              state=state)
        assert summary.new == 0


def test_bad_field_types_become_warnings_not_errors(sdb):
    bad = ParsedEntry(fields={"model": "m", "gpu_count": "two", "headline_tps": "fast"},
                      warnings=["headline_tps: could not read 'fast'"])
    res = ParseResult(kind="json", entries=[bad])
    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        summary = store_parse(s, src, make_snapshot(s, src, "20261201000000000"), res)
        assert summary.new == 1
        text = "\n".join(summary.warnings)
        assert "could not read 'fast'" in text and "gpu_count: 'two' is not a int" in text
        e = s.scalar(select(Entry))
        assert e.gpu_count is None and e.headline_tps is None and e.model == "m"
        v = s.get(EntryVersion, e.current_version_id)
        assert v.fields["gpu_count"] == "two" and len(v.warnings) == 3


def test_an_improved_parser_rewrites_history_one_version_per_differing_snapshot(sdb):
    def improved(**kw):
        res = ladder_result(**kw)
        res.entries[-1].fields["acceptance_rate"] = 1.0
        return res

    with sdb.session() as s:
        src = add_source(s, "board", "http://example.org/board")
        s1, s2 = (make_snapshot(s, src, f"2026120{d}000000000") for d in (1, 2))
        store_parse(s, src, s1, ladder_result())
        store_parse(s, src, s2, ladder_result(headline_64=990.0))
        state = SourceState.load(s, src.id, all_versions=True)
        first = store_parse(s, src, s1, improved(), state=state)
        second = store_parse(s, src, s2, improved(headline_64=990.0), state=state)
        assert (first.changed, first.unchanged, second.changed, second.unchanged) == (1, 5, 1, 5)
        top = s.scalar(select(Entry).where(Entry.draft_tokens == 64))
        versions = s.scalars(select(EntryVersion).where(EntryVersion.entry_id == top.id)
                             .order_by(EntryVersion.version_no)).all()
        assert [(v.version_no, v.snapshot_id) for v in versions] == [(1, s1.id), (2, s2.id), (3, s1.id), (4, s2.id)]
        assert versions[2].changed_fields == {"acceptance_rate": [None, 1.0]}
        assert versions[3].changed_fields == {"headline_tps": [1004.9, 990.0]}
        assert top.current_version_id == versions[3].id
        assert top.headline_tps == 990.0 and top.acceptance_rate == 1.0
        # and reading the same again adds nothing
        state = SourceState.load(s, src.id, all_versions=True)
        again = [store_parse(s, src, sn, r, state=state)
                 for sn, r in ((s1, improved()), (s2, improved(headline_64=990.0)))]
        assert [a.changed for a in again] == [0, 0]


def test_details_stated_once_in_notes_do_not_split_the_ladder_but_batching_does():
    rung = {"model": "GLM-5.3-Flash", "hardware": "RTX PRO 6000", "gpu_count": 2, "engine": "SGLang", "tp": 2,
            "draft_tokens": 28}
    headline = dict(rung, draft_tokens=64, concurrency=1, context_length=8192, prompt_tokens=403,
                    clocks="clocks locked", power="450 W", proposer="n-gram", spec_method="block draft")
    batched = dict(rung, concurrency=8)
    assert recipe_id_for(recipe_key(rung)) == recipe_id_for(recipe_key(headline))
    assert recipe_id_for(recipe_key(rung)) != recipe_id_for(recipe_key(batched))
    # a prose claim keeps its identity when its figure is edited
    a = entry_keys([{"label": "100 tokens in 1.822 seconds = ~55 tok/s."}])
    b = entry_keys([{"label": "100 tokens in 1.75 seconds = ~57 tok/s."}])
    assert a == b


def test_recipes_never_merge_phase_scope_concurrency_test_speculation_or_scenario():
    from app.claims.identity import recipe_id_for, recipe_key

    base = dict(model="GLM-5.2", hardware="RTX PRO 6000", gpu_count=4, engine="vLLM", headline_tps=80.0)

    def rid(**kw):
        return recipe_id_for(recipe_key(dict(base, **kw)))

    decode = rid(phase="decode", scope="per_user")
    assert rid(phase="prefill", scope="per_user") != decode
    assert rid(phase="decode", scope="aggregate") != decode
    assert rid(phase="decode", scope="per_user", concurrency=8) != decode
    assert rid(phase="decode", scope="per_user", test="tg128") != rid(phase="decode", scope="per_user", test="pp512")
    assert rid(phase="decode", scope="per_user", draft_tokens=3, spec_method="MTP") != decode  # speculation on/off
    assert rid(phase="decode", scope="per_user", label="Estonia suite") != rid(phase="decode", scope="per_user",
                                                                               label="LAVD suite")
    assert recipe_id_for(recipe_key(dict(base, phase="decode", _extra={"ngl": 99}))) != \
        recipe_id_for(recipe_key(dict(base, phase="decode", _extra={"ngl": 40})))
    # draft width alone still forms the ladder, whatever the rung's label says of it
    assert rid(draft_tokens=8, label="draft 8") == rid(draft_tokens=64, label="draft 64", headline_tps=1004.9)
    # rows that state none of the new fields keep the recipe id they had
    assert recipe_key(base) == {"model": "glm-5.2", "hardware": "rtx pro 6000", "gpu_count": 4, "engine": "vllm"}


def test_a_prose_sentence_is_not_a_scenario_label():
    from app.claims.identity import recipe_id_for, recipe_key

    base = dict(model="Llama-3.1-70B", hardware="RTX 3090", gpu_count=2, phase="decode", scope="per_user")
    a = recipe_id_for(recipe_key(dict(base, label="This configuration produces about 13 tokens/second in typical use.")))
    b = recipe_id_for(recipe_key(dict(base, label="Up from 9 tokens/second with only the 3090s.")))
    assert a == b  # two sentences about one setup: one recipe
    assert recipe_id_for(recipe_key(dict(base, label="fp8 KV"))) != recipe_id_for(recipe_key(dict(base, label="nvfp4 KV")))


def test_recipe_key_keeps_a_rows_settings_and_drops_its_links_and_workload_names():
    from app.claims.identity import recipe_key

    base = {"model": "m", "hardware": "RTX 3090", "headline_tps": 50.0, "headline_label": "python", "label": "python"}
    a = recipe_key({**base, "_extra": {"draft-min": "1", "rocm": "6.4.1"}})
    b = recipe_key({**base, "_extra": {"draft-min": "2", "rocm": "6.4.1"}})
    assert a != b and a["x_draft-min"] == "1" and "label" not in a          # the column's workload is not a key
    link = recipe_key({**base, "_extra": {"link": "https://example.org/run/1", "status": "verified"}})
    assert link == recipe_key({**base, "_extra": {"link": "https://example.org/run/2", "status": "pending"}})
    assert recipe_key({**base, "label": "Server", "headline_label": "tok/s"}) == \
        recipe_key({**base, "label": "Offline", "headline_label": "tok/s"})      # MLPerf scenarios: the load
    assert recipe_key({**base, "label": "6 experts", "headline_label": "tok/s"}) != \
        recipe_key({**base, "label": "8 experts", "headline_label": "tok/s"})
    assert recipe_key({**base, "kv_cache": "fp8"}) != recipe_key({**base, "kv_cache": "nvfp4_ds_mla"})
