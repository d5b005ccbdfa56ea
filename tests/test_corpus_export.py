"""`caveat corpus export` (issue 27): every page a reviewer marked checked, with its labels in the format of
tests/data/real*/; the corpus scorer reads the export back to P = R = 1.0 against the corrected entries
(and the bare parser, which the corrections overrule, scores below that on the same labels)."""

from __future__ import annotations

import json

from sqlalchemy import select

from app.models import Entry, EntryVersion, Snapshot
from app.review import corrections as review
from tests import test_real_corpus as scorer
from tests.test_corrections import BOARD, _entry, _setup


def _corrected(db) -> list[dict]:
    """The live entries, as the app holds them (corrections applied), as fields dicts."""
    with db.Session() as s:
        rows = s.execute(select(EntryVersion.fields).join(Entry, Entry.current_version_id == EntryVersion.id)
                         .where(Entry.gone.is_(False))).all()
    return [dict(f) for (f,) in rows]


def test_export_checked_pages_scores_one_against_the_corrected_entries(cli, server, db, tmp_path, monkeypatch):
    _setup(cli, server)
    settings = db.settings
    with db.Session() as s:
        cid = s.scalar(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None)))
    # nothing checked yet: nothing exported
    r = cli("corpus", "export", str(tmp_path / "empty"))
    assert r.exit_code == 0 and "exported 0 checked page(s)" in r.output, r.output
    llama = _entry(db, "Llama-3-8B")
    review.fix_entry(db, settings, llama.id, {"model": "Llama-3.1-8B", "gpu_count": 2}, "title says 3.1", actor="alice")
    review.reject_entry(db, settings, _entry(db, "Qwen3-32B").id, "a vendor ad", actor="alice")
    review.add_entry(db, settings, cid, "140.2", "scored ", " on", {"model": "Mistral-7B", "hardware": "A100"},
                     "the footnote", actor="alice")
    review.mark_checked(db, settings, cid, "every figure read", actor="alice")
    r = cli("corpus", "export", "--source", "nosuch", str(tmp_path / "x"))
    assert r.exit_code == 1 and "nosuch" in r.output
    out = tmp_path / "out"
    r = cli("corpus", "export", "--source", "board", str(out))
    assert r.exit_code == 0 and "exported 1 checked page(s), 2 labelled entries" in r.output, r.output
    pages = sorted((out / "pages").iterdir())
    labels = sorted((out / "labels").iterdir())
    assert [p.name for p in pages] == [f"board-{cid}.md"] and [p.name for p in labels] == [f"board-{cid}.md.json"]
    assert pages[0].read_bytes() == BOARD.encode()          # the archived bytes, as served
    assert (out / "README.md").exists()
    label = json.loads(labels[0].read_text())
    assert label["page"] == pages[0].name and label["origin"]["citation_id"] == cid
    assert label["origin"]["checked"][0]["by"] == "alice" and label["format"] == "markdown"
    by_model = {e["model"]: e for e in label["entries"]}
    assert set(by_model) == {"Llama-3.1-8B", "Mistral-7B"}
    assert by_model["Llama-3.1-8B"]["gpu_count"] == 2 and by_model["Llama-3.1-8B"]["figure"] == 120.5
    assert by_model["Mistral-7B"]["quote"] == "140.2" and by_model["Mistral-7B"]["hardware"] == "A100"
    assert "alice" in by_model["Llama-3.1-8B"]["note"]
    for key in ("figure", "quote", "where", "model", "hardware", "gpu_count", "engine", "quantization", "phase",
                "scope", "concurrency", "test", "draft_tokens", "spec_method", "steady_low", "steady_high"):
        assert key in by_model["Mistral-7B"], key
    # the scorer reads the export back: P = R = 1.0 against the corrected entries
    monkeypatch.setattr(scorer, "REAL", out)
    corrected = _corrected(db)
    got = scorer.score_corpus(labels, entries_of=lambda _label: corrected)
    assert got["precision"] == 1.0 and got["recall"] == 1.0 and got["tp"] == 2, scorer.report(got)
    # the parser alone (no corrections) does not: the labels carry the reviewer's work
    bare = scorer.score_corpus(labels)
    assert bare["recall"] < 1.0 and bare["precision"] < 1.0, scorer.report(bare)


def test_checked_and_export_survive_a_lost_database_on_both_backends(backend_settings, backend_db, server, tmp_path):
    """SQLite and PostgreSQL alike: the checked mark and the three corrections come back from the WARC files
    after the database is lost, and the export after the reindex is the export before it."""
    from click.testing import CliRunner

    from app.cli import main
    from app.cli.context import CliContext
    from app.rebuild.reindex import reindex_all
    from tests.test_reindex import _lose_database

    db, settings = backend_db, backend_settings

    def cli(*args, settings_override=None):
        return CliRunner().invoke(main, list(args), obj=CliContext(settings), catch_exceptions=False)

    url = server.route("/board.md", BOARD, content_type="text/markdown")
    assert cli("source", "add", "board", url, "--kind", "markdown", settings_override=settings).exit_code == 0
    assert cli("crawl", settings_override=settings).exit_code == 0
    with db.Session() as s:
        cid = s.scalar(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None)))
    review.fix_entry(db, settings, _entry(db, "Llama-3-8B").id, {"model": "Llama-3.1-8B"}, "title", actor="alice")
    review.reject_entry(db, settings, _entry(db, "Qwen3-32B").id, "a vendor ad", actor="alice")
    review.add_entry(db, settings, cid, "140.2", "scored ", " on", {"model": "Mistral-7B"}, "footnote", actor="alice")
    review.mark_checked(db, settings, cid, "every figure read", actor="alice")
    before = tmp_path / "exports" / "before"
    assert cli("corpus", "export", str(before), settings_override=settings).exit_code == 0
    fresh = _lose_database(db)
    reindex_all(fresh)
    after = tmp_path / "exports" / "after"
    r = cli("corpus", "export", str(after), settings_override=settings)
    assert r.exit_code == 0 and "exported 1 checked page(s), 2 labelled entries" in r.output, r.output
    name = f"board-{cid}.md"
    a = json.loads((before / "labels" / f"{name}.json").read_text())
    b = json.loads((after / "labels" / f"{name}.json").read_text())
    assert a["entries"] == b["entries"] and a["origin"]["checked"] == b["origin"]["checked"]
    assert sorted(e["model"] for e in b["entries"]) == ["Llama-3.1-8B", "Mistral-7B"]
    fresh.dispose()
