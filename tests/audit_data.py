"""Test data for the audit tests: the seed's GLM-5.3-Flash ladder stored through the claims service
(real rows: snapshot, entries, versions, recipe), and small builders for other entries."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from app.models import Entry, Snapshot, Source, utcnow
from app.claims.store import store_parse
from archive.citeid import new_citation_id
from scrapers.fields import ParsedEntry, ParseResult

GLM_NOTES = "acceptance 64/1.00 on locked attractor"
LADDER = [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]
GLM_BASE = dict(model="GLM-5.3-Flash", hardware="RTX PRO 6000 Blackwell", gpu_count=2, engine="SGLang",
                quantization="NVFP4", tp=2, concurrency=1, context_length=8192, spec_method="block draft",
                proposer="32-gram cyclic tiling", prompt_tokens=403, clocks="locked", power="450 W",
                submitter="someone",
                command="python -m sglang.launch_server --tp 2 --speculative-algorithm BLOCK")


def make_snapshot(session, url="https://leaderboard.test/page") -> Snapshot:
    snap = Snapshot(citation_id=new_citation_id(), url=url, surt="test,leaderboard)/page",
                    timestamp=utcnow().strftime("%Y%m%d%H%M%S%f")[:17], captured_at=utcnow(), status=200,
                    mime="text/html", warc_file="test.warc.gz", offset=0, length=1,
                    record_id=f"<urn:uuid:{uuid.uuid4()}>", sha256="0" * 64)
    session.add(snap)
    session.flush()
    return snap


def make_source(session, name="board") -> Source:
    src = Source(name=name, url=f"https://{name}.test/")
    session.add(src)
    session.flush()
    return src


def glm_entries() -> list[ParsedEntry]:
    out = []
    for k, tps in LADDER:
        fields = dict(GLM_BASE, draft_tokens=k, headline_tps=tps)
        quotes = {"headline_tps": f"{tps:,}", "draft_tokens": str(k)}
        if k == 64:
            fields.update(acceptance_rate=1.0, notes=GLM_NOTES, steady_low=373.0, steady_high=391.0)
            quotes.update(notes=GLM_NOTES, steady_low="373 to 391", steady_high="373 to 391",
                          acceptance_rate="64/1.00")
        out.append(ParsedEntry(fields=fields, quotes=quotes))
    return out


def store(session, entries: list[ParsedEntry], source: Source | None = None, snapshot: Snapshot | None = None):
    source = source or make_source(session)
    snapshot = snapshot or make_snapshot(session)
    summary = store_parse(session, source, snapshot, ParseResult(kind="html", entries=entries))
    session.flush()
    return source, snapshot, summary


def entry_by_draft(session, k: int) -> Entry:
    rows = session.scalars(select(Entry).where(Entry.draft_tokens == k).order_by(Entry.id)).all()
    return rows[-1]
