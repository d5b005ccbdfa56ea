"""Reviewers' corrections, keyed to the archived text and applied after every parse.

A correction names a snapshot (its citation id and WARC-Record-ID) and the selector of one figure in
the snapshot's decoded text (W3C TextQuoteSelector ``exact``/``prefix``/``suffix`` and
TextPositionSelector ``start``/``end``), never a database id, so it applies to whatever entry a later
parser produces for that occurrence:

- ``fix``: set fields of the entry whose headline figure is that occurrence (at a figure the learned reader
  proposes, it confirms the proposal with those fields, as ``add`` does);
- ``add``: a figure the parser missed; the entry stays when no parser reads it (when one does, the
  reviewer's fields are applied to the parser's entry instead, so there is never a duplicate); at a figure
  the learned reader proposes, it confirms the proposal: the reviewer's entry starts from its fields;
- ``reject``: "not a claim": the entry is left out of every later parse (it is marked gone); at a proposal's
  figure, the proposal is dropped;
- ``clause``: a reviewer's reading of one clause of the entry's notes (issue 25): ``benign``, or a
  ``condition`` naming the rule it raises. It is carried in the entry's ``clause_reviews`` field, which the
  audit's clause reader (``app.audit.rules.clauses``) takes over its own reading of that clause;
- ``decision``: a reviewer's decision on a flag (written here so a reindex restores it, issue 29);
- ``checked``: "every figure checked": the reviewer read the whole page (its selector is empty); a
  checked page with its entries is a labelled page (``caveat corpus export``).

:func:`apply` runs inside ``store_parse`` for every snapshot of a source, at or after the snapshot the
correction was made on (later snapshots are matched by the quote), so crawl, reparse and reindex keep
every correction. A correction whose figure is not in a snapshot's text is reported as a warning, never
dropped silently. Rows are append-only (database triggers); each is also a WARC ``metadata`` record
(:data:`CONTENT_TYPE`) and a transparency-log leaf, restored on reindex by the handler registered below.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import Database
from app.errors import BadRequest
from app.models import Correction, Snapshot
from app.storage.indexing import MetadataHandler, register_metadata_handler
from app.storage.tlog import append_written
from app.storage.warcfiles import WarcStore
from archive.timestamps import ts17
from archive.warcwriter import build_record
from scrapers.fields import PHASES, SCOPES, ParsedEntry

CONTENT_TYPE = "application/vnd.caveat.review+json"
KINDS = ("fix", "add", "reject", "clause", "decision", "checked")
APPLIED = ("fix", "add", "reject", "clause")   # the kinds that change what a parse yields
CLAUSE_READINGS = ("benign", "condition")
MAX_CLAUSE = 4000   # characters (the clause reader reads at most this much of one field)
# the fields a reviewer may correct, with their type (a tuple: the allowed values)
CORRECTABLE: dict[str, type | tuple] = {
    "model": str, "hardware": str, "gpu_count": int, "engine": str, "engine_version": str,
    "quantization": str, "phase": PHASES, "scope": SCOPES, "concurrency": int, "test": str,
    "draft_tokens": int, "spec_method": str, "steady_low": float, "steady_high": float, "prompt": str,
}
MAX_REASON = 2000
MAX_TEXT = 500
_NUMBER = re.compile(r"^\s*[~≈]?\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)\s*$")


# -- validation ----------------------------------------------------------------------------------------

def check_reason(reason: str | None) -> str:
    reason = " ".join((reason or "").split())
    if not reason:
        raise BadRequest("say why: a correction needs a reason (--why TEXT / \"why\"), kept in the audit log")
    if len(reason) > MAX_REASON:
        raise BadRequest(f"the reason is {len(reason):,} characters; keep it under {MAX_REASON:,}")
    return reason


def check_fields(values: dict) -> dict:
    """The corrected fields, typed; BadRequest (nothing stored) for an unknown field or a wrong type.
    ``None`` clears a field (the page does not say)."""
    if not isinstance(values, dict):
        raise BadRequest("fields must be an object of field -> value")
    out: dict = {}
    for name, value in values.items():
        kind = CORRECTABLE.get(name)
        if kind is None:
            raise BadRequest(f"{name!r} cannot be corrected; correctable fields: {', '.join(CORRECTABLE)}")
        if value is None:
            out[name] = None
        elif isinstance(kind, tuple):
            if value not in kind:
                raise BadRequest(f"{name} must be one of {', '.join(kind)}, not {value!r}")
            out[name] = value
        elif kind is str:
            text = " ".join(str(value).split()) if isinstance(value, (str, int, float)) else ""
            if not text or isinstance(value, bool) or len(text) > MAX_TEXT:
                raise BadRequest(f"{name} must be a non-empty text of at most {MAX_TEXT} characters")
            out[name] = text
        else:
            out[name] = _typed_number(name, value, kind)
    return out


def check_clause(clause, reading, rule, field: str | None = None) -> dict:
    """A reviewer's reading of one clause, typed: ``{"clause", "field", "reading", "rule"}``; BadRequest
    (nothing stored) for an empty clause, an unknown reading, or a condition without a rule. Whether the
    rule exists and the clause is the entry's is checked by the caller, who knows the rules and the entry."""
    text = " ".join(str(clause or "").split()) if isinstance(clause, str) else ""
    if not text:
        raise BadRequest("say which clause: give its text as shown in the entry's notes reading (--clause / \"clause\")")
    if len(text) > MAX_CLAUSE:
        raise BadRequest(f"the clause is {len(text):,} characters; a clause is at most {MAX_CLAUSE:,}")
    if reading not in CLAUSE_READINGS:
        raise BadRequest(f"reading must be one of {', '.join(CLAUSE_READINGS)}, not {reading!r}")
    if reading == "condition":
        if not isinstance(rule, str) or not rule.strip():
            raise BadRequest("a condition names the rule it raises (--rule / \"rule\"), e.g. best_of")
        rule = rule.strip()
    else:
        rule = None
    return {"clause": text, "field": field if isinstance(field, str) and field else None, "reading": reading,
            "rule": rule}


def clause_key(text: str) -> str:
    """How a clause is matched to a reviewer's reading of it: its words, whitespace collapsed."""
    return " ".join((text or "").split())


def _typed_number(name: str, value, kind: type):
    if isinstance(value, bool):
        raise BadRequest(f"{name} must be a{'n integer' if kind is int else ' number'}, not {value!r}")
    try:
        f = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a{'n integer' if kind is int else ' number'}, not {value!r}") from None
    if f != f or f in (float("inf"), float("-inf")) or f < 0 or f > 1e15:
        raise BadRequest(f"{name} must be a finite, non-negative number, not {value!r}")
    if kind is int:
        if not f.is_integer():
            raise BadRequest(f"{name} must be an integer, not {value!r}")
        return int(f)
    return f


def figure_of(exact: str) -> float:
    """The number a quoted figure states; BadRequest when it is not a number ("48.3", "1,204", "~57")."""
    m = _NUMBER.match(exact or "")
    if not m:
        raise BadRequest(f"the quote {exact!r} is not a number: select just the figure (e.g. \"48.3\")")
    return float(m.group(1).replace(",", ""))


def matches(text: str, exact: str, prefix: str = "", suffix: str = "") -> list[int]:
    """Offsets where ``exact`` occurs in ``text`` preceded by ``prefix`` and followed by ``suffix``."""
    out, i = [], text.find(exact) if exact else -1
    while i >= 0:
        if text[:i].endswith(prefix or "") and text.startswith(suffix or "", i + len(exact)):
            out.append(i)
        i = text.find(exact, i + 1)
    return out


def select_quote(text: str, exact: str, prefix: str = "", suffix: str = "") -> dict:
    """The selector of the one occurrence the quote names; BadRequest when it names none or several."""
    if not exact or not exact.strip():
        raise BadRequest("the quote is empty: give the figure's exact text (--quote)")
    found = matches(text, exact, prefix, suffix)
    if not found:
        raise BadRequest(f"the quote {exact!r} (with that prefix and suffix) is not in the archived text; "
                         "copy it from the archived page view")
    if len(found) > 1:
        raise BadRequest(f"the quote {exact!r} occurs {len(found)} times with that prefix and suffix; "
                         "give a longer --prefix or --suffix so it names one occurrence")
    start = found[0]
    return {"exact": exact, "prefix": prefix or "", "suffix": suffix or "", "start": start, "end": start + len(exact)}


def selector_at(text: str, start: int, end: int) -> dict:
    """The selector of the figure at ``text[start:end]`` (a position the archived page view gave): its
    quote with a prefix and suffix of 32 characters, longer where that still names several occurrences."""
    if not (0 <= start < end <= len(text)):
        raise BadRequest(f"the position {start}-{end} is not in the archived text ({len(text):,} characters); "
                         "select the figure again on the archived page view")
    exact = text[start:end]
    figure_of(exact)
    width = 32
    while True:
        prefix, suffix = text[max(0, start - width):start], text[end:end + width]
        if len(matches(text, exact, prefix, suffix)) == 1 or (start - width <= 0 and end + width >= len(text)):
            return {"exact": exact, "prefix": prefix, "suffix": suffix, "start": start, "end": end}
        width *= 2


def locate(text: str, sel: dict, *, same_snapshot: bool) -> tuple[int, int] | None:
    """Where the selector's figure is in ``text``: its position in its own snapshot (when the text there
    still says it), else the one occurrence its quote names; None when it is not there (or ambiguous)."""
    exact, start, end = sel.get("exact") or "", sel.get("start"), sel.get("end")
    if same_snapshot and isinstance(start, int) and isinstance(end, int) and text[start:end] == exact:
        return start, end
    found = matches(text, exact, sel.get("prefix") or "", sel.get("suffix") or "")
    return (found[0], found[0] + len(exact)) if len(found) == 1 else None


# -- applying them to a parse -----------------------------------------------------------------------

@dataclass
class Applied:
    result: object                                           # the ParseResult, corrected
    identity: list[dict]                                     # fields each row's entry key is computed from
    reviewed: dict[int, dict] = field(default_factory=dict)  # row -> field -> reviewer provenance
    problems: list[str] = field(default_factory=list)
    proposals: list = field(default_factory=list)            # the learned reader's, less confirmed and rejected ones


def for_snapshot(session: Session, snapshot: Snapshot) -> list[Correction]:
    """The corrections that apply to ``snapshot``: made on it or an earlier snapshot of its source."""
    if snapshot.source_id is None:
        return []
    q = (select(Correction).join(Snapshot, Snapshot.citation_id == Correction.citation_id)
         .where(Correction.source_id == snapshot.source_id, Correction.kind.in_(APPLIED),
                Snapshot.timestamp <= snapshot.timestamp)
         .order_by(Correction.id))
    return list(session.scalars(q))


def _note(c: Correction, was=None) -> dict:
    out = {"correction": c.id, "kind": c.kind, "by": c.actor, "why": c.reason,
           "at": c.created_at.isoformat() if c.created_at else None}
    if was is not None:
        out["was"] = was
    return out


def _position(pe) -> tuple[int, int] | None:
    s = (pe.selectors or {}).get("headline_tps")
    return (s["start"], s["end"]) if s and isinstance(s.get("start"), int) and isinstance(s.get("end"), int) else None


def apply(session: Session, snapshot: Snapshot, result, rows: list[Correction] | None = None,
          proposals: list | None = None) -> Applied | None:
    """``result`` with the corrections of ``snapshot`` applied (None when there are none).

    ``proposals``: the learned reader's (``ParsedEntry`` with ``chosen_by``). An ``add`` at a proposal's
    figure confirms it: the reviewer's entry starts from the proposal's fields (the reviewer's own fields
    win) and keeps who proposed it; a ``reject`` there drops it. Either way it is no longer a proposal."""
    rows = for_snapshot(session, snapshot) if rows is None else rows
    if not rows:
        return None
    proposed_at = {pos: pe for pe in (proposals or []) if (pos := _position(pe)) is not None}
    rejected_at: set[tuple[int, int]] = set()
    text = getattr(result, "text", "") or ""
    entries = [copy.copy(pe) for pe in result.entries]
    identity = [dict(pe.fields) for pe in entries]
    at: dict[tuple[int, int], list[int]] = {}
    for i, pe in enumerate(entries):
        s = (pe.selectors or {}).get("headline_tps")
        if s and isinstance(s.get("start"), int):
            at.setdefault((s["start"], s["end"]), []).append(i)
    applied = Applied(result, identity)
    rejected: set[int] = set()
    for c in rows:
        pos = locate(text, c.selector or {}, same_snapshot=c.citation_id == snapshot.citation_id)
        if pos is None:
            applied.problems.append(f"correction {c.id} ({c.kind}, {(c.selector or {}).get('exact')!r} of "
                                    f"{c.citation_id}): its figure is not in snapshot {snapshot.citation_id}'s "
                                    "text; not applied there")
            continue
        targets = at.get(pos, [])
        if c.kind == "reject":
            rejected.update(targets)
            rejected_at.add(pos)
            continue
        if not targets and (c.kind == "add" or (c.kind == "fix" and pos in proposed_at)):
            pe = _added(text, pos, c, proposed_at.get(pos))
            entries.append(pe)
            # its identity is the figure and where the reviewer added it (not a proposal's names)
            identity.append({"headline_tps": pe.fields["headline_tps"], "label": f"added {c.citation_id} {pos[0]}"})
            at[pos] = [len(entries) - 1]
            applied.reviewed[len(entries) - 1] = {"headline_tps": _note(c)}
            targets = at[pos]
        for i in targets:
            pe = entries[i]
            pe.fields = dict(pe.fields)
            notes = applied.reviewed.setdefault(i, {})
            if c.kind == "clause":
                _read_clause(pe, notes, c)
                continue
            for name, value in (c.fields or {}).items():
                if name not in CORRECTABLE:
                    continue
                notes[name] = _note(c, was=notes.get(name, {}).get("was", pe.fields.get(name)))
                if value is None:
                    pe.fields.pop(name, None)
                else:
                    pe.fields[name] = value
    keep = [i for i in range(len(entries)) if i not in rejected]
    applied.result = dataclasses.replace(result, entries=[entries[i] for i in keep])
    applied.identity = [identity[i] for i in keep]
    applied.reviewed = {keep.index(i): v for i, v in applied.reviewed.items() if i in keep}
    applied.proposals = [pe for pe in (proposals or []) if _position(pe) not in at and _position(pe) not in rejected_at]
    return applied


def _read_clause(pe: ParsedEntry, notes: dict, c: Correction) -> None:
    """Carry a reviewer's reading of a clause in the entry's ``clause_reviews`` (clause words -> reading);
    a later reading of the same clause replaces an earlier one."""
    f = c.fields or {}
    key = clause_key(f.get("clause") or "")
    if not key or f.get("reading") not in CLAUSE_READINGS:
        return
    reviews = dict(pe.fields.get("clause_reviews") or {})
    reviews[key] = {"reading": f["reading"], "rule": f.get("rule"), "field": f.get("field"), "correction": c.id,
                    "by": c.actor}
    pe.fields["clause_reviews"] = reviews
    notes["clause_reviews"] = _note(c)


def _added(text: str, pos: tuple[int, int], c: Correction, proposal: ParsedEntry | None = None) -> ParsedEntry:
    """The entry of an ``add``: the figure at ``pos``; a proposal's fields when it confirms one."""
    start, end = pos
    line_a = text.rfind("\n", 0, start) + 1
    line_b = text.find("\n", end)
    context = text[line_a:line_b if line_b >= 0 else len(text)].strip()[:500]
    exact = text[start:end]
    sel = {"exact": exact, "prefix": text[max(0, start - 32):start], "suffix": text[end:end + 32],
           "start": start, "end": end}
    fields = {"headline_tps": figure_of(exact)}
    chosen_by = {"part": "reviewer", "correction": c.id}
    if proposal is not None:
        fields = {**proposal.fields, **fields}
        chosen_by["proposed_by"] = proposal.chosen_by
    return ParsedEntry(fields=fields, quotes={"headline_tps": exact}, context=context,
                       selectors={"headline_tps": sel}, chosen_by=chosen_by)


# -- the WARC record and the row --------------------------------------------------------------------

def block(kind: str, snap: Snapshot, selector: dict, fields: dict | None, reason: str, actor: str,
          at: datetime, entry_version: int | None) -> bytes:
    return json.dumps({"caveat-review": kind, "citation_id": snap.citation_id, "record_id": snap.record_id,
                       "url": snap.url, "selector": selector, "fields": fields, "reason": reason, "actor": actor,
                       "entry_version": entry_version, "at": at.isoformat()}, sort_keys=True).encode("utf-8")


def record(db: Database, snap: Snapshot, kind: str, selector: dict, fields: dict | None, reason: str, *,
           actor: str, user_id: int | None = None, entry_version: int | None = None,
           check: Callable[[Session], None] | None = None, then: Callable[[int], None] | None = None) -> int:
    """Write the correction as a WARC metadata record (fsynced, under the writer lock), then its row
    (committed), then its transparency-log leaf. Returns the row's id. ``check(session)`` runs under the
    lock before anything is written (a stale version raises there), ``then(id)`` under the lock after the
    commit (the caller applies it), so two reviewers' corrections of one entry never interleave."""
    if kind not in KINDS:
        raise BadRequest(f"unknown correction kind {kind!r}")
    actor = " ".join((actor or "").split())[:255] or "unknown"
    at = datetime.now(UTC)
    with WarcStore(db) as store:
        store.rotate_if_full()
        writer = store.writer
        start = writer.size
        with db.Session() as s:
            if check is not None:
                check(s)
            try:
                written = writer.append(build_record(
                    "metadata", [("WARC-Target-URI", snap.url), ("WARC-Refers-To", snap.record_id)],
                    content_type=CONTENT_TYPE, ts=ts17(at),
                    head=block(kind, snap, selector, fields, reason, actor, at, entry_version), level=writer.level))
                writer.sync()
                row = Correction(kind=kind, source_id=snap.source_id, citation_id=snap.citation_id,
                                 record_id=snap.record_id, selector=selector, fields=fields, reason=reason,
                                 actor=actor, user_id=user_id, entry_version=entry_version,
                                 warc_record_id=written.record_id, created_at=at)
                s.add(row)
                s.commit()
                cid = row.id
            except BaseException:
                writer.truncate(start)
                writer.sync()
                raise
        append_written(db.settings, writer.path.name, writer.take_appended(), sign=True)
        if then is not None:
            then(cid)
    return cid


def correction_json(c: Correction) -> dict:
    return {"id": c.id, "kind": c.kind, "citation_id": c.citation_id, "selector": c.selector, "fields": c.fields,
            "why": c.reason, "by": c.actor, "entry_version": c.entry_version, "warc_record_id": c.warc_record_id,
            "at": c.created_at.isoformat() if c.created_at else None}


def same_figure(a: dict, a_cid: str, b: dict, b_cid: str) -> bool:
    """Whether two selectors name one occurrence: same snapshot and position, or the same quote."""
    if a_cid == b_cid and a.get("start") is not None and (a.get("start"), a.get("end")) == (b.get("start"), b.get("end")):
        return True
    if a.get("exact") != b.get("exact"):
        return False
    pa, pb, sa, sb = a.get("prefix") or "", b.get("prefix") or "", a.get("suffix") or "", b.get("suffix") or ""
    return bool(pa or sa) and (pa.endswith(pb) or pb.endswith(pa)) and (sa.startswith(sb) or sb.startswith(sa))


def for_entry(session: Session, source_id: int | None, citation_id: str | None, selector: dict | None) -> list[Correction]:
    """The corrections (and decisions) made on the figure an entry's headline was read from, oldest first."""
    if source_id is None or not citation_id or not isinstance(selector, dict):
        return []
    rows = session.scalars(select(Correction).where(Correction.source_id == source_id, Correction.kind != "checked")
                           .order_by(Correction.id))
    return [c for c in rows if same_figure(c.selector or {}, c.citation_id, selector, citation_id)]


# -- from the WARC files (reindex) ------------------------------------------------------------------

def parse_review_record(content_type: str | None, data: bytes) -> dict | None:
    if (content_type or "").split(";")[0].strip().lower() != CONTENT_TYPE:
        return None
    try:
        out = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(out, dict) or out.get("caveat-review") not in KINDS or not out.get("citation_id") \
            or not isinstance(out.get("selector"), dict):
        return None
    return out


def restore(db: Database, records: list[tuple[str, dict]]) -> int:
    """Add the rows of corrections read from the WARC files that the table lacks; returns how many."""
    if not records:
        return 0
    n = 0
    with db.Session() as s:
        known = set(s.scalars(select(Correction.warc_record_id).where(
            Correction.warc_record_id.in_([rid for rid, _ in records]))))
        for rid, data in records:
            if rid in known:
                continue
            snap = s.scalar(select(Snapshot).where(Snapshot.citation_id == data["citation_id"]))
            try:
                at = datetime.fromisoformat(data.get("at") or "")
            except ValueError:
                at = datetime.now(UTC)
            s.add(Correction(kind=data["caveat-review"], source_id=snap.source_id if snap is not None else None,
                             citation_id=data["citation_id"], record_id=str(data.get("record_id") or ""),
                             selector=data["selector"], fields=data.get("fields"),
                             reason=str(data.get("reason") or ""), actor=str(data.get("actor") or "unknown")[:255],
                             entry_version=data.get("entry_version") if isinstance(data.get("entry_version"), int)
                             else None, warc_record_id=rid, created_at=at))
            known.add(rid)
            n += 1
        s.commit()
    return n


def _restore(db: Database, path, items) -> int:
    return restore(db, [(rid, parsed) for _o, _l, rid, _b, parsed in items])


# A correction or decision found in a WARC file by the indexer (reindex, import, catch-up); the reparse
# that follows a reindex applies the corrections, and app.rebuild re-applies the decisions after it.
register_metadata_handler(MetadataHandler("review", parse_review_record, _restore, order=20))
