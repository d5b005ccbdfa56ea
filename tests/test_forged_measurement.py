"""Issue 24, item 3: a forged measurement cannot become a quotable number. The test builds the forgery
itself: a measurement that failed its output checks against a real OpenAI-compatible server on
127.0.0.1 is exported, its metadata record edited (checks passed, 5,000 tok/s, another recipe's id) and
re-written with digests of its own, and imported into a fresh installation; `caveat reindex` of a data
folder holding the forged file is tried too."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

from click.testing import CliRunner
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from app.audit.engine import audit_entries
from app.cli import main
from app.cli.context import CliContext
from app.db import Database
from app.models import Measurement, Recipe
from app.rebuild.reindex import reindex_all
from scrapers.fields import ParsedEntry
from tests.audit_data import glm_entries, store as store_entries
from tests.conftest import make_settings
from tests.openai_server import Behaviour, OpenAIServer


def _recipes(settings) -> list[str]:
    db = Database(settings)
    try:
        with db.session() as s:
            entries = glm_entries()
            # a second recipe: the same model on another engine
            entries += [ParsedEntry(fields=dict(e.fields, engine="vLLM"), quotes=dict(e.quotes)) for e in glm_entries()]
            _, _, summary = store_entries(s, entries)
            audit_entries(s, settings, summary.entry_ids)
            return sorted(s.scalars(select(Recipe.recipe_id)))
    finally:
        db.dispose()


def _cli(settings, *args):
    return CliRunner().invoke(main, list(args), obj=CliContext(settings), catch_exceptions=False)


def _forge(src, dst, edit) -> None:
    """Copy a WARC member by member, passing each measurement metadata record's JSON through ``edit``
    (written again with digests of its own, as a forger would)."""
    raw = src.read_bytes()
    with open(src, "rb") as f, open(dst, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        it = ArchiveIterator(f)
        for rec in it:
            body = rec.content_stream().read()
            it.read_to_end()
            if rec.rec_type == "metadata" and b'"caveat_measurement"' in body[:64]:
                doc = json.loads(body)
                edit(doc)
                headers = rec.rec_headers
                for name in ("WARC-Block-Digest", "WARC-Payload-Digest", "Content-Length"):
                    headers.remove_header(name)
                writer.write_record(writer.create_warc_record(headers.get_header("WARC-Target-URI"), "metadata",
                                                              payload=io.BytesIO(json.dumps(doc).encode()),
                                                              warc_headers=headers))
            else:
                start = it.get_record_offset()
                out.write(raw[start:start + it.get_record_length()])


def _exported_warc(settings, tmp_path):
    out = tmp_path / "m.wacz"
    r = _cli(settings, "export-wacz", str(out))
    assert "1 measurement" in r.output, r.output  # (the seed entries' made-up snapshot is reported as missing)
    with zipfile.ZipFile(out) as z:
        name = next(n for n in z.namelist() if n.startswith("archive/"))
        z.extract(name, tmp_path / "x")
    return tmp_path / "x" / name


def _fresh(tmp_path, sqlite_template, name):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(sqlite_template, d / "caveat.db")
    return make_settings(d, f"sqlite:///{d / 'caveat.db'}")


def _measure(settings, text, recipe, *extra):
    with OpenAIServer(Behaviour(text=text, rate=2000)) as srv:
        r = _cli(settings, "measure", "--endpoint", srv.url, "--model", "test-model", "--prompts", "4",
                 "--max-tokens", "40", "--json", "--recipe", recipe, *extra)
    return json.loads(r.stdout)["measurement"]


def _quote(settings, recipe) -> dict:
    r = _cli(settings, "quote", recipe, "--json")
    return json.loads(r.output)["recipes"][0]


def test_a_forged_measurement_imported_or_reindexed_is_unverified_and_never_measured(settings, tmp_path,
                                                                                         sqlite_template):
    rec_a, rec_b = _recipes(settings)[:2]
    failed = _measure(settings, "garbage", rec_a, "--repeats", "0")
    assert failed["output_check"]["passed"] is False and failed["counts_as_measured"] is False
    warc = _exported_warc(settings, tmp_path)

    def edit(doc):
        doc["recipe_id"] = rec_b
        res = doc["result"]
        res["output_check"] = {"passed": True, "problems": []}
        res["decode_tps"] = res["decode_tps_p10"] = res["decode_tps_p90"] = 5000.0
        res["per_user"]["decode_tps"] = 5000.0
        for q in res["requests"]:
            q["passed"], q["problems"] = True, []
            if q["kind"] == "unique":
                q["decode_tps"] = 5000.0

    forged = tmp_path / "forged.warc.gz"
    _forge(warc, forged, edit)

    other = _fresh(tmp_path, sqlite_template, "other")
    assert _recipes(other)[:2] == [rec_a, rec_b]
    r = _cli(other, "import-warc", str(forged))
    assert r.exit_code == 0 and "1 measurement restored" in r.output, r.output
    quoted = _quote(other, rec_b)
    assert quoted["basis"] != "measured" and quoted["measurement"] is None
    db = Database(other)
    try:
        with db.Session() as s:
            m = s.scalars(select(Measurement)).one()
            assert m.recipe_id == rec_b and m.tps == 5000.0 and m.verified is False
            assert "do not follow from the archived exchanges" in m.verification
            assert "garbage" in m.verification  # the recomputed checks say why
    finally:
        db.dispose()
    from fastapi.testclient import TestClient

    from app.main import create_app

    app = create_app(other)
    with TestClient(app, base_url="http://caveat.test") as c:
        q = c.get(f"/api/recipes/{rec_b}/quotable").json()
        assert q["basis"] != "measured" and q["measurement"] is None
        got = c.get(f"/api/measurements/{m.id}").json()["measurement"]
        assert got["verified"] is False and got["counts_as_measured"] is False
        page = c.get(f"/c/{m.citation_id}")
        assert page.status_code == 200 and "unverified" in page.text.lower()
    app.state.db.dispose()

    # the same forged file dropped into a data folder and reindexed: unverified too
    third = _fresh(tmp_path, sqlite_template, "third")
    _recipes(third)
    third.warc_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(forged, third.warc_dir / "dropped.warc.gz")
    db = Database(third)
    try:
        reindex_all(db, reparse=False)
        with db.Session() as s:
            m = s.scalars(select(Measurement)).one()
            assert m.verified is False and m.recipe_id == rec_b
    finally:
        db.dispose()
    assert _quote(third, rec_b)["basis"] != "measured"


def test_missing_exchanges_make_a_measurement_unverified_and_honest_ones_stay_measured(settings, tmp_path,
                                                                                        sqlite_template):
    rec_a = _recipes(settings)[0]
    good = _measure(settings, "prose", rec_a, "--repeats", "2")
    assert good["counts_as_measured"] is True
    warc = _exported_warc(settings, tmp_path)

    honest = _fresh(tmp_path, sqlite_template, "honest")
    _recipes(honest)
    r = _cli(honest, "import-warc", str(warc))
    assert r.exit_code == 0, r.output
    assert _quote(honest, rec_a)["basis"] == "measured"
    db = Database(honest)
    try:
        with db.Session() as s:
            m = s.scalars(select(Measurement)).one()
            assert m.verified is True, m.verification
    finally:
        db.dispose()

    # only the evidence record, none of the exchanges it names
    lone = tmp_path / "lone.warc.gz"
    with open(warc, "rb") as f, open(lone, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for rec in ArchiveIterator(f):
            if rec.rec_type == "metadata":
                body = rec.content_stream().read()
                writer.write_record(writer.create_warc_record(rec.rec_headers.get_header("WARC-Target-URI"),
                                                              "metadata", payload=io.BytesIO(body),
                                                              warc_headers=rec.rec_headers))
    bare = _fresh(tmp_path, sqlite_template, "bare")
    _recipes(bare)
    r = _cli(bare, "import-warc", str(lone))
    assert r.exit_code == 0 and "1 measurement restored" in r.output, r.output
    assert _quote(bare, rec_a)["basis"] != "measured"
    db = Database(bare)
    try:
        with db.Session() as s:
            m = s.scalars(select(Measurement)).one()
            assert m.verified is False and "not in the archive" in m.verification
    finally:
        db.dispose()

