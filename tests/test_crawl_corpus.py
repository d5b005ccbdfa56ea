"""Crawl the whole parser corpus (tests/data/corpus/<kind>/*) from a local server in one run.

Checks what the crawl promises over pages nobody tuned the crawler for: every page is archived, a
malformed one does not stop the others, and every stored value's quote is text that really occurs
in the archived response, so the citation layer can find it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from sqlalchemy import func, select

from app.db import Database
from app.models import Entry, EntryVersion, Snapshot, Source
from app.storage.snapshots import load_record

CORPUS = Path(__file__).parent / "data" / "corpus"
TYPES = {".json": "application/json", ".html": "text/html; charset=utf-8", ".md": "text/markdown; charset=utf-8",
         ".txt": "text/plain; charset=utf-8"}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(text))


def test_every_corpus_page_is_crawled_and_every_quote_is_in_the_archive(cli, server, settings):
    files = sorted(p for p in CORPUS.glob("*/*") if p.suffix in TYPES and ".expected" not in p.name)
    assert len(files) >= 12, "the parser corpus is missing"
    for p in files:
        name = f"{p.parent.name}-{p.stem}"
        url = server.route(f"/{p.parent.name}/{p.name}", p.read_bytes(), content_type=TYPES[p.suffix])
        assert cli("source", "add", name, url, "--kind", p.parent.name).exit_code == 0
    r = cli("crawl")
    table = {line.split()[0]: line.split() for line in r.output.splitlines()
             if line.split() and line.split()[0] in {f"{p.parent.name}-{p.stem}" for p in files}}
    assert len(table) == len(files), r.output
    for name, cols in table.items():
        if "malformed" in name:
            continue
        assert cols[1] in ("ok", "warnings"), r.output
        assert int(cols[2]) >= 1, f"{name} stored no entry:\n{r.output}"
    # exit code 1 exactly when some source failed or parsed nothing (malformed.json parses nothing)
    failed = [n for n, cols in table.items() if cols[1] in ("failed", "empty")]
    assert (r.exit_code == 1) == bool(failed)
    assert all("malformed" in n for n in failed), r.output

    db = Database(settings)
    with db.session() as s:
        for p in files:  # as many entries stored as the corpus expects (repeated rows kept)
            expected = json.loads(p.with_name(p.stem + ".expected.json").read_text())["entries"]
            stored = s.scalar(select(func.count(Entry.id)).join(Source, Source.id == Entry.source_id)
                              .where(Source.name == f"{p.parent.name}-{p.stem}"))
            assert stored == len(expected), p.name
        assert s.scalar(select(Snapshot.id).join(Source, Source.id == Snapshot.source_id)
                        .where(Source.name == "json-malformed")) is not None  # kept though nothing parsed
        rows = s.execute(select(EntryVersion, Snapshot).join(Snapshot, Snapshot.id == EntryVersion.snapshot_id)).all()
        assert len(rows) == s.query(Entry).count() > 40
        bodies: dict[int, str] = {}
        missing = []
        for version, snap in rows:
            if snap.id not in bodies:
                raw = load_record(settings, snap, session=s).body.decode("utf-8", "replace")
                # a quote may come from the markup or from the page's text (tags removed)
                bodies[snap.id] = _squash(raw) + "\n" + _squash(re.sub(r"<[^>]+>", "", raw))
            for field, quote in version.provenance.items():
                if field.startswith("_") or not quote:
                    continue
                if _squash(quote) not in bodies[snap.id]:
                    missing.append((snap.url.rsplit("/", 1)[-1], field, quote))
        assert not missing, f"quotes not found in their archived snapshot: {missing[:10]}"
    db.dispose()
