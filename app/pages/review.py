"""What a reviewer's correction pages show (issue 27): the entry page's correction form (each field's value,
its provenance and its history), the archived page view with every figure marked (read by the reader,
or seen and not read) and the reader's best guesses for a figure it missed, a snapshot's "every figure
checked" marks, and what a citation of a corrected figure says about the correction.

HTML and JSON are built from these same dicts (``app/views/corrections.py``, ``app/views/entries.py``,
``app/views/citation.py``).
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections import OrderedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.claims import corrections as store
from app.config import Settings
from app.models import Entry, EntryVersion, Snapshot
from app.replay import citations
from app.review.corrections import checked_marks
from archive import quoteview
from scrapers.meaning import TPS_UNIT

# the form's fields, in the order a reviewer reads an entry: (field, label, kind)
FORM_FIELDS = (
    ("model", "Model", "text"), ("hardware", "Hardware", "text"), ("gpu_count", "GPU count", "int"),
    ("engine", "Engine", "text"), ("engine_version", "Engine version", "text"),
    ("quantization", "Quantization", "text"), ("phase", "Phase", store.PHASES),
    ("scope", "Scope", store.SCOPES), ("concurrency", "Concurrency", "int"), ("test", "Test", "text"),
    ("draft_tokens", "Draft width", "int"), ("spec_method", "Speculative method", "text"),
    ("steady_low", "Steady state, low", "float"), ("steady_high", "Steady state, high", "float"),
    ("prompt", "Prompt", "text"),
)
GUESSED = ("model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase", "scope",
           "concurrency", "test", "draft_tokens", "spec_method")
_FIGURE = re.compile(r"(?<![\w.\-/])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,\-/])\d+(?:\.\d+)?(?![\w]|\.\d)")
_TPS_WORDS = TPS_UNIT   # the reader's own tok/s words
MAX_FIGURES = 3000   # figures marked on one page at most (the rest are shown unmarked)


def _shown(value):
    return "" if value is None else value


def correction_form(entry: dict) -> list[dict]:
    """One row per correctable field: value, ``source`` (``parser`` | ``reviewer``), input kind or choices,
    and the field's history (who, when, why, what it was) from the entry's corrections."""
    fields = entry.get("fields") or {}
    reviewed = entry.get("reviewed") or {}
    rows = []
    for name, label, kind in FORM_FIELDS:
        history = [{"by": c["by"], "at": c["at"], "why": c["why"], "kind": c["kind"],
                    "value": (c.get("fields") or {}).get(name)}
                   for c in entry.get("corrections") or [] if name in (c.get("fields") or {})]
        note = reviewed.get(name) if isinstance(reviewed.get(name), dict) else None
        rows.append({"name": name, "label": label, "value": _shown(fields.get(name)),
                     "kind": "choice" if isinstance(kind, tuple) else kind,
                     "choices": list(kind) if isinstance(kind, tuple) else None,
                     "source": "reviewer" if note else "parser",
                     "was": note.get("was") if note else None, "history": history})
    return rows


def snapshot_entries(session: Session, snap: Snapshot, text: str | None = None) -> list[dict]:
    """The source's entries as read on ``snap``: id, fields, where their headline figure is in ``snap``'s
    decoded ``text``, gone. An entry whose current version was read from another capture (an unchanged
    entry keeps the version of the capture that first read it so) is found in ``text`` by its quote
    selector; one whose figure is not there is left out."""
    if snap.source_id is None:
        return []
    rows = session.execute(select(Entry.id, Entry.gone, EntryVersion.fields, EntryVersion.provenance,
                                  EntryVersion.snapshot_id)
                           .join(EntryVersion, EntryVersion.id == Entry.current_version_id)
                           .where(Entry.source_id == snap.source_id).order_by(Entry.id))
    out = []
    for eid, gone, fields, prov, snapshot_id in rows:
        sel = ((prov or {}).get("_selectors") or {}).get("headline_tps") or {}
        if snapshot_id == snap.id:
            start, end = sel.get("start"), sel.get("end")
        else:
            at = store.locate(text, sel, same_snapshot=False) if text and sel.get("exact") else None
            if at is None:
                continue
            start, end = at
        out.append({"id": eid, "gone": bool(gone), "fields": fields or {}, "start": start, "end": end,
                    "reviewed": sorted((prov or {}).get("_reviewer") or {})})
    return out


def guesses(entries: list[dict], source: str, start: int) -> dict:
    """The reader's best guesses for a figure at ``start``: the fields of the nearest entry it made on the
    page (the same line first, then the nearest before, then after), without its figure."""
    live = [e for e in entries if isinstance(e.get("start"), int) and not e["gone"]]
    if not live:
        return {}
    line_a = source.rfind("\n", 0, start) + 1
    line_b = source.find("\n", start)
    line_b = len(source) if line_b < 0 else line_b
    same = [e for e in live if line_a <= e["start"] < line_b]
    before = [e for e in live if e["start"] < start]
    pick = (same or before or live)
    best = min(pick, key=lambda e: abs(e["start"] - start))
    return {k: best["fields"][k] for k in GUESSED if best["fields"].get(k) is not None} | {"_from": best["id"]}


def _layout(source: str, kind: str) -> tuple[quoteview.Document, list[tuple[int, int, int, int, bool]]]:
    """The page read once: its inert document and every figure in its visible text as (text start, text
    end, source start, source end, near tok/s words)."""
    doc = quoteview.build(source, kind)
    text = doc.text
    words = [m.start() for m in _TPS_WORDS.finditer(text)]
    headers: dict = {}
    out = []
    for m in _FIGURE.finditer(text):
        if len(out) >= MAX_FIGURES:
            break
        s0, last = doc.to_source(m.start()), doc.to_source(m.end() - 1)
        if s0 is None or last is None or source[s0:last + 1] != m.group(0):
            continue
        line_a = text.rfind("\n", 0, m.start()) + 1
        line_b = text.find("\n", m.end())
        lo, hi = max(line_a, m.start() - 160), (len(text) if line_b < 0 else min(line_b, m.end() + 160))
        k = bisect_left(words, lo)
        near = k < len(words) and words[k] < hi
        if not near and doc.kind == "html":   # a cell under a tok/s column
            near = bool(_TPS_WORDS.search(doc.column_header(m.start(), headers) or ""))
        out.append((m.start(), m.end(), s0, last + 1, near))
    return doc, out


def _cached(cache: OrderedDict, key, make, size: int = 16):
    with _LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    value = make()
    with _LOCK:
        cache[key] = value
        while len(cache) > size:
            cache.popitem(last=False)
    return value


_LOCK = threading.Lock()
_LAYOUTS: OrderedDict = OrderedDict()    # (citation id, digest) -> _layout(...): an archived page never changes
_RENDERS: OrderedDict = OrderedDict()    # (citation id, digest, statuses) -> the page's marked HTML


def archived_view(session: Session, settings: Settings, citation_id: str) -> dict:
    """The archived page, inert, every figure in it marked: ``read`` (an entry's headline; links to it),
    ``unread`` (a figure that no entry reads with the reader's tok/s words near it, on its line or in its
    table column's header: one click starts the add form),
    ``rejected`` or ``plain``. Each figure carries its position in the decoded text (the parsers' offsets)
    and, for the ones not read, the reader's guesses for the form."""
    snap = citations.lookup(session, settings, citation_id)
    stored = citations.check_fixity(session, settings, snap)   # recomputed on every read, as /c/{id} does
    key = (snap.citation_id, snap.sha256 or snap.payload_digest or snap.record_id)
    source, kind = citations.document_source(stored)
    doc, layout = _cached(_LAYOUTS, key, lambda: _layout(source, kind))
    entries = snapshot_entries(session, snap, source)
    read_at = {e["start"]: e for e in entries if isinstance(e.get("start"), int)}
    figures = []
    for n, (t0, t1, s0, s1, near) in enumerate(layout, 1):
        e = read_at.get(s0)
        status = ("rejected" if e["gone"] else "read") if e else ("unread" if near else "plain")
        fig = {"n": n, "exact": source[s0:s1], "start": s0, "end": s1, "status": status,
               "entry": e["id"] if e else None}
        if status == "unread":
            fig["guess"] = guesses(entries, source, s0)
        figures.append(fig)
    statuses = tuple(f["status"] for f in figures)
    marks = [quoteview.Occurrence(t0, t1, "text", s0, s1) for t0, t1, s0, s1, _ in layout]
    html = _cached(_RENDERS, (*key, statuses),
                   lambda: doc.render_figures(marks, list(statuses), [f["start"] for f in figures]))
    return {"ok": True, "id": snap.citation_id, "url": snap.url, "timestamp": snap.timestamp,
            "source_id": snap.source_id, "html": html, "figures": figures,
            "counts": {s: statuses.count(s) for s in ("read", "unread", "rejected", "plain")},
            "entries": [{k: e[k] for k in ("id", "gone", "start", "end")} | {"fields": e["fields"]} for e in entries],
            "checked": checked_marks(session, snap.citation_id), "fields": [
                {"name": n, "label": lab, "kind": "choice" if isinstance(k, tuple) else k,
                 "choices": list(k) if isinstance(k, tuple) else None} for n, lab, k in FORM_FIELDS]}


def quote_corrections(session: Session, citation_id: str, exact: str | None, prefix: str | None,
                      suffix: str | None, pos: int | None) -> list[dict]:
    """For a citation of a figure: the corrections made on it (what, by whom, when, why), each field beside
    the reader's original reading."""
    if not exact:
        return []
    snap = session.scalar(select(Snapshot).where(Snapshot.citation_id == citation_id))
    if snap is None or snap.source_id is None:
        return []
    sel = {"exact": exact, "prefix": prefix or "", "suffix": suffix or "",
           "start": pos, "end": pos + len(exact) if isinstance(pos, int) else None}
    rows = [c for c in store.for_entry(session, snap.source_id, citation_id, sel) if c.kind in store.APPLIED]
    if not rows:
        return []
    originals = _originals(session, snap.source_id, {c.id for c in rows})
    out = []
    for c in rows:
        clause = dict(c.fields or {}) if c.kind == "clause" else None   # a reading of the notes, not a field
        fields = [] if clause else [{"name": k, "original": originals.get(k), "corrected": v}
                                    for k, v in sorted((c.fields or {}).items())]
        out.append({"kind": c.kind, "by": c.actor, "at": c.created_at.isoformat() if c.created_at else None,
                    "why": c.reason, "fields": fields, "clause": clause, "snapshot": c.citation_id})
    return out


def _originals(session: Session, source_id: int, ids: set[int]) -> dict[str, object]:
    """field -> the reader's own reading of the figure, before any correction (the ``was`` the corrected
    entry's provenance keeps)."""
    rows = session.execute(select(EntryVersion.provenance).join(Entry, Entry.current_version_id == EntryVersion.id)
                           .where(Entry.source_id == source_id))
    for (prov,) in rows:
        notes = (prov or {}).get("_reviewer") or {}
        if any(isinstance(n, dict) and n.get("correction") in ids for n in notes.values()):
            return {name: n.get("was") for name, n in notes.items() if isinstance(n, dict)}
    return {}
