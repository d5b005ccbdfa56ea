"""``caveat corpus export``: every page a reviewer marked "every figure checked" as a labelled page, in the
format of the hand-labelled sets in ``tests/data/real*/`` (docs/claims.md): ``pages/<page>`` holds the
archived response body as served (Content-Encoding undone, nothing else changed) and ``labels/<page>.json``
the entries Caveat reads from it with every reviewer correction applied (the same reading ``store_parse``
stores), so a reviewer's work becomes pages the reader can be trained and evaluated on.

A snapshot is exported when it has a ``checked`` correction; withdrawn or restricted captures never are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from app.claims import corrections as store
from app.config import Settings
from app.crawl.workflow import parse_archived
from app.db import Database
from app.errors import BadRequest, NotFound
from app.models import Correction, Snapshot, Source
from app.replay import withdrawal
from app.storage.snapshots import load_record

LABEL_FIELDS = ("model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase", "scope",
                "concurrency", "test", "draft_tokens", "spec_method", "steady_low", "steady_high")
SUFFIX = {"html": ".html", "markdown": ".md", "json": ".json", "text": ".txt"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def checked_snapshots(session, source: str | None = None) -> list[tuple[Snapshot, Source, list[Correction]]]:
    """(snapshot, its source, its checked marks) for every checked page, oldest snapshot first."""
    q = (select(Correction, Snapshot, Source).join(Snapshot, Snapshot.citation_id == Correction.citation_id)
         .join(Source, Source.id == Snapshot.source_id).where(Correction.kind == "checked"))
    if source is not None:
        if session.scalar(select(Source.id).where(Source.name == source)) is None:
            raise NotFound(f"No source named {source!r}. `caveat source list` lists them.")
        q = q.where(Source.name == source)
    out: dict[str, tuple[Snapshot, Source, list[Correction]]] = {}
    for c, snap, src in session.execute(q.order_by(Snapshot.timestamp, Correction.id)):
        out.setdefault(snap.citation_id, (snap, src, []))[2].append(c)
    return list(out.values())


def page_name(src: Source, snap: Snapshot, kind: str) -> str:
    return f"{_UNSAFE.sub('-', src.name).strip('-') or 'source'}-{snap.citation_id}{SUFFIX.get(kind, '.txt')}"


def label_entry(pe, reviewed: dict | None) -> dict:
    """One labelled entry in the hand-labelled sets' format, from a corrected parsed entry."""
    f = pe.fields
    out = {"figure": f.get("headline_tps"), "quote": (pe.quotes or {}).get("headline_tps"),
           "where": " ".join((pe.context or "").split())[:200] or None}
    out.update({k: f.get(k) for k in LABEL_FIELDS})
    out["selector"] = (pe.selectors or {}).get("headline_tps")
    notes = [f"{name}: {n.get('by')} ({n.get('why')})" for name, n in sorted((reviewed or {}).items())
             if isinstance(n, dict)]
    out["note"] = ("corrected by a reviewer: " + "; ".join(notes)) if notes else "as the reader read it; checked by a reviewer"
    return out


def export(db: Database, settings: Settings, out_dir: Path, *, source: str | None = None,
           progress: Callable[[str], None] | None = None) -> dict:
    """Write every checked page and its labels under ``out_dir`` (``pages/``, ``labels/``, ``README.md``)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise BadRequest(f"{out_dir} is a file; give a directory to export into")
    (out_dir / "pages").mkdir(parents=True, exist_ok=True)
    (out_dir / "labels").mkdir(parents=True, exist_ok=True)
    pages, skipped = [], []
    with db.Session() as s:
        found = checked_snapshots(s, source)
        for n, (snap, src, marks) in enumerate(found, 1):
            if (snap.access or withdrawal.PUBLIC) != withdrawal.PUBLIC:
                skipped.append(f"{snap.citation_id}: withdrawn or restricted, not exported")
                continue
            stored = load_record(settings, snap, session=s)
            if not stored.decoded:
                skipped.append(f"{snap.citation_id}: its body could not be decoded")
                continue
            parsed = parse_archived(s, settings, snap)
            applied = store.apply(s, snap, parsed)
            result = applied.result if applied is not None else parsed
            reviewed = applied.reviewed if applied is not None else {}
            name = page_name(src, snap, src.kind or parsed.kind)
            (out_dir / "pages" / name).write_bytes(stored.body)
            label = {
                "page": name,
                "origin": {"source": "caveat snapshot", "caveat_source": src.name, "citation_id": snap.citation_id,
                           "record_id": snap.record_id, "url": snap.url, "title": None, "captured": snap.timestamp,
                           "checked": [{"by": m.actor, "why": m.reason, "at": m.created_at.isoformat()} for m in marks],
                           "retrieved": f"{datetime.now(UTC).date().isoformat()} via caveat corpus export"},
                "format": src.kind or parsed.kind,
                "content_type": _content_type(stored),
                "entries": [label_entry(pe, reviewed.get(i)) for i, pe in enumerate(result.entries)
                            if pe.fields.get("headline_tps") is not None],
            }
            (out_dir / "labels" / f"{name}.json").write_text(json.dumps(label, indent=2, ensure_ascii=False) + "\n")
            pages.append({"page": name, "snapshot": snap.citation_id, "entries": len(label["entries"])})
            if progress is not None:
                progress(f"[{n}/{len(found)}] {name}: {len(label['entries'])} entries")
    (out_dir / "README.md").write_text(_readme(pages, source))
    return {"dir": str(out_dir), "pages": pages, "skipped": skipped}


def _content_type(stored) -> str | None:
    for k, v in stored.headers or []:
        if str(k).lower() == "content-type":
            return v
    return stored.mime


def _readme(pages: list[dict], source: str | None) -> str:
    return (
        "# Pages checked by Caveat's reviewers\n\n"
        f"Exported by `caveat corpus export{' --source ' + source if source else ''}` on "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}: {len(pages)} page(s), each one a snapshot a reviewer "
        "marked \"every figure checked\".\n\n"
        "- `pages/<page>`: the archived response body as served (Content-Encoding undone).\n"
        "- `labels/<page>.json`: the entries read from it with every reviewer correction applied, in the format of "
        "`tests/data/real/LABELLING.md`; `origin` names the snapshot (citation id, WARC-Record-ID, URL) and who "
        "checked it. `flags`, `working_tps` and `basis` are not exported.\n\n"
        "Score the reader on them: copy this folder to `tests/data/<name>/`, `git add` it (only committed labels "
        "are scored), then `CAVEAT_TEST_REAL_CORPUS=tests/data/<name> python tests/test_real_corpus.py`.\n"
    )
