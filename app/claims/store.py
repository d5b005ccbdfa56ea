"""Store one snapshot's ParseResult: entries, immutable versions with provenance, recipes, history.

``store_parse(session, source, snapshot, result)`` compares each parsed row with what the entry held
*as of that snapshot* (the newest version, by version number, whose snapshot is not later) and writes
a new ``EntryVersion`` only where the fields differ, with ``changed_fields`` = ``{field: [old, new]}``
against that state (for a crawl of a new snapshot: the entry's current version). Nothing is
overwritten or deleted: rows absent from the snapshot mark their entries ``gone``. A snapshot where
nothing parsed changes nothing.

Writes are batched (``insert ... returning`` and executemany updates): a 2,000-row leaderboard is a
handful of statements. The service flushes; the caller commits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from app.db import chunked
from app.models import Entry, EntryVersion, Recipe, Snapshot, Source, utcnow
from app.claims import corrections
from app.claims.identity import entry_keys, proposal_keys, recipe_id_for, recipe_key

# Entry columns that mirror the current version's fields (for filters and sorting).
DENORMALISED = {
    "model": str, "hardware": str, "gpu_count": int, "engine": str, "engine_version": str,
    "quantization": str, "headline_tps": float, "steady_low": float, "steady_high": float,
    "draft_tokens": int, "acceptance_rate": float, "concurrency": int, "notes": str,
}
CHUNK = 500
_ENTRIES = Entry.__table__
_VERSIONS = EntryVersion.__table__


@dataclass
class StoreSummary:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    gone: int = 0
    parsed: int = 0
    warnings: list[str] = field(default_factory=list)
    entry_ids: list[int] = field(default_factory=list)  # every entry the rules read in this snapshot
    proposed: int = 0                                   # the learned reader's proposals stored from it
    proposed_new: int = 0                               # ... of which first seen now
    proposal_ids: list[int] = field(default_factory=list)

    def add(self, other: "StoreSummary") -> None:
        self.new += other.new
        self.changed += other.changed
        self.unchanged += other.unchanged
        self.gone += other.gone
        self.parsed += other.parsed
        self.warnings += other.warnings
        self.entry_ids = list(dict.fromkeys(self.entry_ids + other.entry_ids))
        self.proposed_new += other.proposed_new
        if other.parsed or other.proposed:     # the newest snapshot's proposals are what stands
            self.proposed, self.proposal_ids = other.proposed, list(other.proposal_ids)


@dataclass
class _Version:
    order: tuple  # (snapshot timestamp, snapshot id)
    version_no: int
    fields: dict
    extra: dict


@dataclass
class _Known:
    entry_id: int
    gone: bool
    versions: list[_Version]

    def current(self) -> _Version | None:
        return max(self.versions, key=lambda v: v.version_no) if self.versions else None

    def as_of(self, order: tuple) -> _Version | None:
        older = [v for v in self.versions if v.order <= order]
        return max(older, key=lambda v: v.version_no) if older else None


class SourceState:
    """What a source's entries hold, loaded once and kept current while snapshots are stored."""

    def __init__(self, source_id: int | None, known: dict[str, _Known]):
        self.source_id = source_id
        self.known = known

    @classmethod
    def load(cls, session: Session, source_id: int | None, *, all_versions: bool = False) -> "SourceState":
        """``all_versions=False`` loads only current versions (enough when the snapshot is the newest)."""
        cond = Entry.source_id.is_(None) if source_id is None else Entry.source_id == source_id
        known: dict[str, _Known] = {}
        for eid, key, gone in session.execute(select(Entry.id, Entry.entry_key, Entry.gone).where(cond)):
            known[key] = _Known(eid, gone, [])
        by_id = {k.entry_id: k for k in known.values()}
        q = (
            select(EntryVersion.entry_id, EntryVersion.version_no, EntryVersion.fields, EntryVersion.extra,
                   Snapshot.timestamp, Snapshot.id)
            .join(Entry, Entry.id == EntryVersion.entry_id)
            .join(Snapshot, Snapshot.id == EntryVersion.snapshot_id)
            .where(cond)
        )
        if not all_versions:
            q = q.where(EntryVersion.id == Entry.current_version_id)
        for eid, no, flds, extra, ts, sid in session.execute(q):
            by_id[eid].versions.append(_Version((ts, sid), no, flds or {}, extra or {}))
        return cls(source_id, known)


INT_LIMIT = 2**63 - 1  # what SQLite and PostgreSQL BIGINT hold
FLOAT_LIMIT = 1e15  # no throughput, count or length in a claim comes near this


def _jsonable(value: Any) -> Any:
    """A value as it round-trips through a JSON column (tuples become lists; NaN, infinities and
    integers no database column holds become None)."""
    t = type(value)
    if t is str or t is bool or value is None:   # most values: kept as they are
        return value
    if t is int:
        return value if -INT_LIMIT <= value <= INT_LIMIT else None
    if t is float:
        return None if value != value or value in (math.inf, -math.inf) else value
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT <= value <= INT_LIMIT:
        return None
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _clean(fields: dict) -> dict:
    """Fields as a JSON column gives them back, so stored and fresh values compare equal."""
    return {str(k): _jsonable(v) for k, v in fields.items() if v is not None}


def _coerce(name: str, value: Any, warnings: list[str]) -> Any:
    kind = DENORMALISED[name]
    if value is None:
        return None
    t = type(value)
    if kind is str and t is str:      # the common cases, without the general conversion below
        return value
    if kind is float and t is float and -FLOAT_LIMIT <= value <= FLOAT_LIMIT:
        return value
    if kind is int and t is int and -INT_LIMIT <= value <= INT_LIMIT:
        return value
    try:
        if kind is int:
            if isinstance(value, int) and not isinstance(value, bool):
                n = value
            else:
                f = float(value)
                if not math.isfinite(f) or not f.is_integer():
                    raise ValueError
                n = int(f)
            if not -INT_LIMIT <= n <= INT_LIMIT:
                warnings.append(f"{name}: {value!r} is out of range; left out of the entry's columns")
                return None
            return n
        if kind is float:
            f = float(value)
            if not math.isfinite(f) or abs(f) > FLOAT_LIMIT:
                warnings.append(f"{name}: {value!r} is not a finite figure in range; left out of the entry's columns")
                return None
            return f
        return str(value)
    except (TypeError, ValueError, OverflowError):
        warnings.append(f"{name}: {value!r} is not a {kind.__name__}; left out of the entry's columns")
        return None


def denormalised(fields: dict, warnings: list[str]) -> dict:
    return {name: _coerce(name, fields.get(name), warnings) for name in DENORMALISED}


def diff_fields(old: dict, new: dict) -> dict:
    return {k: [old.get(k), new.get(k)] for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}




def _ensure_recipes(session: Session, recipes: dict[str, tuple[dict, dict]]) -> None:
    if not recipes:
        return
    existing: set[str] = set()
    for part in chunked(list(recipes), CHUNK):
        existing.update(session.scalars(select(Recipe.recipe_id).where(Recipe.recipe_id.in_(part))))
    now = utcnow()
    rows = [
        {"recipe_id": rid, "key": key, "model": cols["model"], "hardware": cols["hardware"],
         "gpu_count": cols["gpu_count"], "engine": cols["engine"], "created_at": now, "model_key": key.get("model")}
        for rid, (key, cols) in recipes.items() if rid not in existing
    ]
    if rows:
        # two crawls (two workers) may store the same new recipe at once: the second insert is a no-op
        name = session.get_bind().dialect.name
        if name in ("postgresql", "sqlite"):
            dialect_insert = pg_insert if name == "postgresql" else sqlite_insert
            session.execute(dialect_insert(Recipe).on_conflict_do_nothing(index_elements=["recipe_id"]), rows)
        else:
            session.execute(insert(Recipe), rows)


BATCH_ROWS = 5000  # rows stored between two checkpoints (commits) of a long page


def store_parse(session: Session, source: Source | None, snapshot: Snapshot, result, *,
                parser: str | None = None, state: SourceState | None = None,
                checkpoint: Callable[[], None] | None = None) -> StoreSummary:
    """Store ``result`` (a ``scrapers.fields.ParseResult``) as read from ``snapshot``.

    ``checkpoint`` (the caller's commit) runs after each batch of ``BATCH_ROWS`` rows, so a long page
    never holds the database's write lock for long. Entries are only marked ``gone`` after the last
    batch, so a crawl cut short between two checkpoints leaves each entry either at its earlier version
    or at this snapshot's, never missing."""
    source_id = source.id if source is not None else None
    state = state or SourceState.load(session, source_id)
    proposals = list(getattr(result, "proposals", None) or [])
    # reviewers' corrections of this snapshot's figures (app/claims/corrections.py), applied to every parse;
    # an `add` at a proposal's figure confirms it, a `reject` there drops it
    applied = corrections.apply(session, snapshot, result, proposals=proposals) if source_id is not None else None
    result = applied.result if applied else result
    if applied:
        proposals = applied.proposals
    summary = StoreSummary(parsed=len(result.entries))
    summary.warnings += [f"page: {w}" for w in result.warnings]
    if applied:
        summary.warnings += [f"page: {w}" for w in applied.problems]
    if not result.entries and not proposals:
        # nothing read and nothing proposed: the rules' entries stay; proposals not made again go
        stale = [k for key, k in state.known.items() if key.startswith("p") and not k.gone]
        for part in chunked([k.entry_id for k in stale], CHUNK):
            session.execute(update(Entry).where(Entry.id.in_(part)).values(gone=True, updated_at=utcnow()))
        for k in stale:
            k.gone = True
        return summary

    order = (snapshot.timestamp, snapshot.id)
    parser = parser or f"{result.kind}"
    now = utcnow()
    n_read = len(result.entries)
    items = list(result.entries) + proposals     # the rules' entries (status "read"), then the proposals
    cleaned = [_clean(pe.fields) for pe in items]
    # an entry's identity is the parser's reading, so a corrected field keeps the entry (and its id); a board's
    # own key columns (`caveat source add --key`) and the cells no field took take part in it
    key_columns = list(getattr(source, "key_columns", None) or ())
    identity = [_clean(f) for f in applied.identity] if applied else cleaned[:n_read]
    keys = entry_keys([{**flds, "_extra": pe.extra or {}} for flds, pe in zip(identity, result.entries)], key_columns)
    keys += proposal_keys(cleaned[n_read:], [(pe.chosen_by or {}).get("model_version") for pe in proposals])
    reviewed = applied.reviewed if applied else {}
    seen_ids: list[int] = []
    proposal_ids: list[int] = []

    def store_rows(lo: int, hi: int) -> None:
        recipes: dict[str, dict] = {}

        new_entries, new_versions, changed_updates, touched_known = [], [], [], []
        for i in range(lo, hi):
            key, pe, flds = keys[i], items[i], cleaned[i]
            proposed = i >= n_read
            warnings = list(pe.warnings)
            cols = denormalised(flds, warnings)
            if proposed:       # never in a recipe, never audited, nothing to quote until a reviewer confirms it
                rid = None
                cols.update(_proposal_columns(pe))
            else:
                rkey = recipe_key({**flds, "_extra": pe.extra or {}}, key_columns)
                rid = recipe_id_for(rkey) if rkey else None
                if rid and rid not in recipes:
                    recipes[rid] = (rkey, cols)
                cols["status"] = "read"
            label = flds.get("model") or flds.get("label") or f"row {i + 1}"
            summary.warnings += [f"entry {i + 1} ({label}): {w}" for w in warnings]
            extra = _clean(pe.extra or {})
            provenance = {k: str(v) for k, v in (pe.quotes or {}).items() if v}
            if pe.context:
                provenance["_context"] = pe.context
            selectors = getattr(pe, "selectors", None)
            if selectors:  # W3C TextQuoteSelector + TextPositionSelector per quoted field
                provenance["_selectors"] = {k: v for k, v in selectors.items() if k in provenance}
            if i in reviewed:  # field -> who corrected it, when, why, and what the parser read
                provenance["_reviewer"] = reviewed[i]
            if pe.chosen_by:   # not the rules: the learned reader (a proposal) or a reviewer's add
                provenance["_chosen_by"] = pe.chosen_by
            version = {"snapshot_id": snapshot.id, "fields": flds, "provenance": provenance, "extra": extra or None,
                       "warnings": warnings or None, "parser": parser, "created_at": now}
            known = state.known.get(key)
            if proposed:
                summary.proposed += 1
                summary.proposed_new += known is None
            if known is None:
                new_entries.append(({"source_id": source_id, "entry_key": key, "recipe_id": rid,
                                     "first_snapshot_id": snapshot.id, "last_snapshot_id": snapshot.id,
                                     "gone": False, "created_at": now, "updated_at": now, **cols},
                                    version, key, flds, extra))
                continue
            touched_known.append(known)
            base = known.as_of(order)
            if base is not None and base.fields == flds and base.extra == extra:
                if not proposed:
                    summary.unchanged += 1
                continue
            current = known.current()
            prev = base or current  # what this snapshot's reading replaces
            version.update(entry_id=known.entry_id, version_no=(current.version_no + 1) if current else 1,
                           changed_fields=diff_fields(prev.fields if prev else {}, flds) or None)
            if prev is not None and prev.extra != extra:
                version["changed_fields"] = {**(version["changed_fields"] or {}), "extra": [prev.extra, extra]}
            new_versions.append((version, known, flds, extra))
            changed_updates.append({"id": known.entry_id, "recipe_id": rid, "updated_at": now, **cols})
            if not proposed:
                summary.changed += 1

        _ensure_recipes(session, recipes)

        # New entries, then their first versions.
        if new_entries:
            ids: dict[str, int] = {}
            for part in chunked(new_entries, CHUNK):
                # one INSERT takes rows of one shape: the rules' rows, then the proposals (their own columns)
                for shape in ("read", "proposed"):
                    rows = [row for row, *_ in part if row["status"] == shape]
                    if rows:
                        ids.update(session.execute(insert(_ENTRIES).returning(_ENTRIES.c.entry_key, _ENTRIES.c.id),
                                                   rows).all())
            for _row, version, key, flds, extra in new_entries:
                version.update(entry_id=ids[key], version_no=1, changed_fields=None)
                known = _Known(ids[key], False, [])
                state.known[key] = known
                new_versions.append((version, known, flds, extra))
            summary.new += sum(1 for row, *_ in new_entries if row["status"] == "read")

        # One version per entry per snapshot, so entry_id maps each returned id to its version.
        current_updates = []
        for part in chunked(new_versions, CHUNK):
            vids = dict(session.execute(insert(_VERSIONS).returning(_VERSIONS.c.entry_id, _VERSIONS.c.id),
                                        [v for v, *_ in part]).all())
            for version, known, flds, extra in part:
                known.versions.append(_Version(order, version["version_no"], flds, extra))
                current_updates.append({"id": known.entry_id, "current_version_id": vids[known.entry_id]})

        by_id = {u["id"]: u for u in changed_updates}
        for u in current_updates:
            by_id.setdefault(u["id"], {"id": u["id"]})["current_version_id"] = u["current_version_id"]
        if by_id:
            for part in chunked(list(by_id.values()), CHUNK):
                _bulk_update(session, part)

        touched = [k.entry_id for k in touched_known] + [state.known[k].entry_id for _r, _v, k, _f, _e in new_entries]
        seen_ids.extend(touched)
        proposal_ids.extend(state.known[keys[i]].entry_id for i in range(max(lo, n_read), hi))
        for part in chunked([k.entry_id for k in touched_known], CHUNK):
            session.execute(update(Entry).where(Entry.id.in_(part)).values(last_snapshot_id=snapshot.id, gone=False))
        for k in touched_known:
            k.gone = False

    for lo in range(0, len(cleaned), BATCH_ROWS):
        store_rows(lo, min(len(cleaned), lo + BATCH_ROWS))
        session.flush()
        if checkpoint is not None and lo + BATCH_ROWS < len(cleaned):
            checkpoint()

    seen = set(seen_ids)
    # a page the rules read nothing from changes none of their entries: only the proposals not made again go
    gone_keys = [k for k, known in state.known.items()
                 if known.entry_id not in seen and not known.gone and (n_read or k.startswith("p"))]
    gone = [state.known[k] for k in gone_keys]
    for part in chunked([k.entry_id for k in gone], CHUNK):
        session.execute(update(Entry).where(Entry.id.in_(part)).values(gone=True, updated_at=now))
    for k in gone:
        k.gone = True
    summary.gone = sum(1 for k in gone_keys if not k.startswith("p"))     # the rules' entries gone
    proposal_set = set(proposal_ids)
    summary.entry_ids = [i for i in seen_ids if i not in proposal_set]
    summary.proposal_ids = proposal_ids
    session.flush()
    return summary


def _proposal_columns(pe) -> dict:
    """The entry columns of a proposal: its status and confidence, and no working number, with the reason."""
    by = pe.chosen_by or {}
    conf = by.get("confidence")
    return {"status": "proposed", "confidence": conf, "working_tps": None, "basis": "none",
            "basis_reason": f"proposed by the learned reader ({by.get('model')}, {by.get('model_version')}, "
                            f"confidence {conf}): the rules did not read this figure, so it is never quoted until "
                            "a reviewer confirms it with an `add` correction of its quote"}

def _bulk_update(session: Session, rows: list[dict]) -> None:
    """Executemany UPDATE by primary key; rows are grouped by their set of columns."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(sorted(r)), []).append(r)
    for cols, group in groups.items():
        stmt = (update(_ENTRIES).where(_ENTRIES.c.id == bindparam("_id"))
                .values({c: bindparam(c) for c in cols if c != "id"}))
        session.execute(stmt, [{**{k: v for k, v in r.items() if k != "id"}, "_id": r["id"]} for r in group])
