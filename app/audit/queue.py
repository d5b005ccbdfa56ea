"""The review queue: flagged entries, filtered, sorted and paged, with a count for every filter value.

``review_queue(session, settings, filters)`` is the one call behind ``/queue`` and ``/queue.json``.

- An entry is in the queue while it has at least one flag raised by the latest audit
  (``entries.flag_count > 0``) and is still on its page (``gone`` false).
- Filters: ``severity`` (the entry's most severe flag still counting, i.e. ``entries.max_severity``;
  ``none`` when every flag was dismissed), ``rule`` (an active flag with that rule id), ``source``
  (name), ``model`` (exact name) and ``decision`` (``pending``: a flag still open; ``decided``: none open).
- Sorts: ``severity`` (most severe first, then the largest inflation ratio, then newest),
  ``inflation`` (largest headline-to-working ratio first) or ``roofline`` (largest share of the
  memory-bandwidth bound first: a per-user decode figure over its bound, ``entries.roofline_ratio``;
  entries without a bound last). Each reads an index in order (``ix_entries_queue``,
  ``ix_entries_inflation``, ``ix_entries_roofline``), so a deep page costs an index walk, not a sort.
- ``status=proposed``: instead of the flagged entries, the learned reader's proposals still on their page
  (``entries.status``), most confident first (``ix_entries_status``); each row carries its ``status`` and
  ``confidence``, and every page says how many proposals wait (``proposals``).
- Pages of ``PER_PAGE`` (50) rows, ``page`` counted from 1.
- ``counts``: for each filter, how many queued entries have each value, given the *other* filters.
  They are computed with grouped queries and kept in a small in-process cache keyed by the filters
  and a fingerprint of the tables that can change them (the newest decision, crawl, measurement and
  flag change), so a decision or a crawl shows in the counts at once; the rows are always read live.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass, replace

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Crawl, Decision, Entry, Flag, Measurement, Source
from app.audit.engine import flags_for_entries
from urllib.parse import urlencode

PER_PAGE = 50
SEVERITY_VALUES = {"critical": 4, "high": 3, "medium": 2, "low": 1, "none": 0}
RANK_NAMES = {v: k for k, v in SEVERITY_VALUES.items()}
DECISIONS = ("pending", "decided")
SORTS = ("severity", "inflation", "roofline")
STATUSES = ("proposed",)
MAX_PAGE = 100_000
TOP_MODELS = 30
_CACHE_SIZE = 256


@dataclass(frozen=True)
class QueueFilters:
    severity: str | None = None
    rule: str | None = None
    source: str | None = None
    model: str | None = None
    decision: str | None = None
    sort: str = "severity"
    page: int = 1
    status: str | None = None      # None: flagged entries; "proposed": the learned reader's proposals

    def params(self, **changes) -> dict:
        """Query parameters for a link to this queue with ``changes`` applied (page reset unless given)."""
        if "page" not in changes:
            changes["page"] = 1
        d = asdict(replace(self, **changes))
        return {k: v for k, v in d.items()
                if v is not None and not (k == "sort" and v == "severity") and not (k == "page" and v == 1)}


def check_filters(f: QueueFilters) -> QueueFilters:
    def clean(v):
        v = (v or "").strip()
        return v or None

    f = replace(f, severity=clean(f.severity), rule=clean(f.rule), source=clean(f.source), model=clean(f.model),
                decision=clean(f.decision), sort=clean(f.sort) or "severity", status=clean(f.status))
    if f.status is not None and f.status.lower() not in STATUSES:
        raise BadRequest(f"Unknown status {f.status!r}: use proposed (the learned reader's proposals), or leave it "
                         "out for the flagged entries.")
    if f.severity is not None and f.severity.lower() not in SEVERITY_VALUES:
        raise BadRequest(f"Unknown severity {f.severity!r}: use one of {', '.join(SEVERITY_VALUES)}.")
    if f.decision is not None and f.decision.lower() not in DECISIONS:
        raise BadRequest(f"Unknown decision status {f.decision!r}: use pending or decided.")
    if f.sort not in SORTS:
        raise BadRequest(f"Unknown sort {f.sort!r}: use severity, inflation or roofline.")
    if not 1 <= f.page <= MAX_PAGE:
        raise BadRequest(f"page must be between 1 and {MAX_PAGE}.")
    return replace(f, severity=f.severity.lower() if f.severity else None,
                   decision=f.decision.lower() if f.decision else None,
                   status=f.status.lower() if f.status else None)


def _conditions(session: Session, f: QueueFilters, skip: str | None = None) -> list:
    if f.status == "proposed":   # proposals carry no flags: the queue lists them by confidence
        conds = [Entry.status == "proposed", Entry.gone.is_(False)]
    else:
        conds = [Entry.flag_count > 0, Entry.gone.is_(False)]
    if f.severity is not None and skip != "severity":
        conds.append(Entry.severity_rank == SEVERITY_VALUES[f.severity])
    if f.decision is not None and skip != "decision":
        conds.append(Entry.decision_status == f.decision)
    if f.source is not None and skip != "source":
        src_id = session.scalar(select(Source.id).where(Source.name == f.source))
        if src_id is None:
            raise NotFound(f"No source named {f.source!r}. The sources page (/sources) lists them.")
        conds.append(Entry.source_id == src_id)
    if f.model is not None and skip != "model":
        conds.append(Entry.model == f.model)
    if f.rule is not None and skip != "rule":
        conds.append(exists().where(Flag.entry_id == Entry.id, Flag.rule == f.rule, Flag.active.is_(True)))
    return conds


def _order(session: Session, sort: str, status: str | None = None) -> list:
    pg = session.get_bind().dialect.name == "postgresql"

    def desc(col):
        return col.desc().nulls_last() if pg else col.desc()  # SQLite puts NULLs last in DESC already

    if status == "proposed":
        return [desc(Entry.confidence), Entry.id.desc()]
    if sort == "inflation":
        return [desc(Entry.inflation_ratio), Entry.id.desc()]
    if sort == "roofline":
        return [desc(Entry.roofline_ratio), Entry.id.desc()]
    return [Entry.severity_rank.desc(), desc(Entry.inflation_ratio), Entry.id.desc()]


# -- counts ----------------------------------------------------------------------------------------
_cache: OrderedDict = OrderedDict()
_lock = threading.Lock()


def fingerprint(session: Session) -> tuple:
    """Cheap markers (index lookups) that move whenever queue counts can change."""
    return (
        session.scalar(select(func.max(Decision.id))),
        session.scalar(select(func.max(Crawl.id))),
        session.scalar(select(func.max(Crawl.finished_at))),
        session.scalar(select(func.max(Measurement.id))),
        session.scalar(select(func.max(Flag.updated_at))),
        session.scalar(select(func.max(Flag.id))),
    )


ENTRY_FACETS = {"severity": Entry.severity_rank, "decision": Entry.decision_status, "source": Entry.source_id,
                "model": Entry.model}


def _tallies(session: Session, f: QueueFilters) -> dict[str, Counter]:
    """Raw counts per value of each entry-level filter, given the other filters.

    A filter whose siblings are all unset shares one grouped scan with the others like it (the usual
    case: no filter, or one); the rest get a grouped query each."""
    tallies = {name: Counter() for name in ENTRY_FACETS}
    shared = [x for x in ENTRY_FACETS if all(getattr(f, o) is None for o in ENTRY_FACETS if o != x)]
    if len(shared) > 1:
        cols = [ENTRY_FACETS[x] for x in shared]
        base = replace(f, severity=None, decision=None, source=None, model=None)
        q = select(*cols, func.count()).where(*_conditions(session, base)).group_by(*cols)
        for row in session.execute(q):
            for i, name in enumerate(shared):
                tallies[name][row[i]] += row[-1]
    else:
        shared = []
    for name, col in ENTRY_FACETS.items():
        if name not in shared:
            q = select(col, func.count()).where(*_conditions(session, f, name)).group_by(col)
            tallies[name].update(dict(session.execute(q).all()))
    return tallies


def _raw_counts(session: Session, f: QueueFilters) -> dict[str, Counter]:
    """Every facet's full tally (source by id, every model): what the cache keeps and a decision adjusts."""
    t = _tallies(session, f)
    queued = select(Entry.id).where(*_conditions(session, f, "rule"))
    q = select(Flag.rule, func.count()).where(Flag.active.is_(True), Flag.entry_id.in_(queued)).group_by(Flag.rule)
    t["rule"] = Counter(dict(session.execute(q).all()))
    return t


def _format(session: Session, t: dict[str, Counter]) -> dict:
    out: dict[str, list[dict]] = {
        "severity": [{"value": RANK_NAMES.get(r, str(r)), "count": n} for r, n in sorted(t["severity"].items(),
                                                                                           key=lambda x: -x[0]) if n > 0],
        "decision": [{"value": v, "count": n} for v, n in sorted(t["decision"].items()) if n > 0],
    }
    ids = [i for i, n in t["source"].items() if i is not None and n > 0]
    names = dict(session.execute(select(Source.id, Source.name).where(Source.id.in_(ids))).all()) if ids else {}
    out["source"] = sorted(({"value": names[i], "count": n} for i, n in t["source"].items() if i in names and n > 0),
                           key=lambda c: (-c["count"], c["value"]))
    models = sorted(((m, n) for m, n in t["model"].items() if m is not None and n > 0), key=lambda x: (-x[1], x[0]))
    out["model"] = [{"value": m, "count": n} for m, n in models[:TOP_MODELS]]
    out["rule"] = [{"value": v, "count": n} for v, n in sorted(t["rule"].items(), key=lambda x: (-x[1], x[0])) if n > 0]
    return out


def _counts(session: Session, f: QueueFilters) -> dict:
    return _format(session, _raw_counts(session, f))


def queue_counts(session: Session, f: QueueFilters) -> dict:
    """The counts for ``f``: from the cache when nothing changed (or only a carried decision), else a
    recount. The cache keeps each filter set's full tallies and, once asked for, their formatted form."""
    url = str(session.get_bind().url)
    key = (url, replace(f, page=1, sort="severity"), fingerprint(session))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is None:
        hit = {"tallies": _raw_counts(session, f), "formatted": None}
        with _lock:
            _cache[key] = hit
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    if hit["formatted"] is None:
        hit["formatted"] = _format(session, hit["tallies"])
    return hit["formatted"]


# -- a decision moves the counts by a delta instead of a recount ------------------------------------
@dataclass
class QueueState:
    """What the queue's counts depend on, for a few entries, at one moment (``state_of``)."""

    url: str
    fingerprint: tuple
    rows: dict  # entry id -> (flag_count, gone, severity_rank, decision_status, source_id, model, status, active rules)


def affected_entries(session: Session, entry_id: int) -> list[int]:
    """The entries a decision on ``entry_id`` can re-audit: the entry and the rest of its recipe."""
    rid = session.scalar(select(Entry.recipe_id).where(Entry.id == entry_id))
    if rid is None:
        return [entry_id]
    return list(session.scalars(select(Entry.id).where(Entry.recipe_id == rid)))


def state_of(session: Session, entry_ids: list[int]) -> QueueState:
    rows: dict[int, list] = {}
    for part in [entry_ids[i:i + 500] for i in range(0, len(entry_ids), 500)]:
        q = select(Entry.id, Entry.flag_count, Entry.gone, Entry.severity_rank, Entry.decision_status,
                   Entry.source_id, Entry.model, Entry.status).where(Entry.id.in_(part))
        for eid, *values in session.execute(q):
            rows[eid] = values + [set()]
        for eid, rule in session.execute(select(Flag.entry_id, Flag.rule).where(Flag.entry_id.in_(part),
                                                                                 Flag.active.is_(True))):
            if eid in rows:
                rows[eid][-1].add(rule)
    return QueueState(str(session.get_bind().url), fingerprint(session),
                      {k: tuple(v[:-1]) + (frozenset(v[-1]),) for k, v in rows.items()})


def _passes(row: tuple, f: QueueFilters, source_id, skip: str) -> bool:
    flag_count, gone, rank, decision, src, model, status, rules = row
    if gone:
        return False
    if f.status == "proposed":
        if status != "proposed":
            return False
    elif not (flag_count and flag_count > 0):
        return False
    return ((f.severity is None or skip == "severity" or rank == SEVERITY_VALUES[f.severity])
            and (f.decision is None or skip == "decision" or decision == f.decision)
            and (f.source is None or skip == "source" or src == source_id)
            and (f.model is None or skip == "model" or model == f.model)
            and (f.rule is None or skip == "rule" or f.rule in rules))


def _shift(t: dict[str, Counter], f: QueueFilters, source_id, row: tuple | None, sign: int) -> None:
    if row is None:
        return
    values = {"severity": row[2], "decision": row[3], "source": row[4], "model": row[5]}
    for name, value in values.items():
        if _passes(row, f, source_id, name):
            t[name][value] += sign
    if _passes(row, f, source_id, "rule"):
        for rule in row[7]:
            t["rule"][rule] += sign


def moved_by_one_decision(before: QueueState, after: QueueState, decision_id: int) -> bool:
    """Only this decision (and the re-audit of its recipe, which may change flags of those entries)
    happened between the two states: no other decision, crawl or measurement. Anything else and the
    counts are recounted. (A re-audit run at the same moment by another process, `caveat audit`, is
    not told apart; its changes show at the next crawl, decision or measurement.)"""
    b, a = before.fingerprint, after.fingerprint
    return a[0] == decision_id and (b[0] or 0) < decision_id and a[1:4] == b[1:4]


def apply_decision(before: QueueState, after: QueueState, decision_id: int, source_ids: dict[str, int | None]) -> int:
    """Carry every cached count taken at ``before`` over to ``after`` by the entries' change; returns how
    many cached filter sets were carried. Called once the decision is committed."""
    if before.url != after.url or not moved_by_one_decision(before, after, decision_id):
        return 0
    carried = 0
    with _lock:
        for (url, f, fp), cached in list(_cache.items()):
            if url != before.url or fp != before.fingerprint:
                continue
            t = {k: Counter(v) for k, v in cached["tallies"].items()}
            src = source_ids.get(f.source) if f.source is not None else None
            for eid in set(before.rows) | set(after.rows):
                _shift(t, f, src, before.rows.get(eid), -1)
                _shift(t, f, src, after.rows.get(eid), +1)
            _cache[(url, f, after.fingerprint)] = {"tallies": t, "formatted": None}
            carried += 1
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return carried


def cached_sources(session: Session, url: str) -> dict[str, int | None]:
    """Source ids of the source filters in the cache (looked up before the commit)."""
    with _lock:
        names = {f.source for (u, f, _), _ in _cache.items() if u == url and f.source is not None}
    if not names:
        return {}
    found = dict(session.execute(select(Source.name, Source.id).where(Source.name.in_(names))).all())
    return {n: found.get(n) for n in names}


def clear_cache() -> None:
    with _lock:
        _cache.clear()


# -- the page --------------------------------------------------------------------------------------
def _row(e: Entry, source: str | None, flags: list[dict]) -> dict:
    return {
        "id": e.id, "url": f"/entries/{e.id}", "source": source, "model": e.model, "hardware": e.hardware,
        "gpu_count": e.gpu_count, "engine": e.engine, "draft_tokens": e.draft_tokens,
        "headline_tps": e.headline_tps, "working_tps": e.working_tps, "basis": e.basis,
        "inflation_ratio": e.inflation_ratio, "roofline_ratio": e.roofline_ratio, "severity": e.max_severity, "decision_status": e.decision_status,
        "flag_count": e.flag_count, "open_flag_count": e.open_flag_count, "recipe_id": e.recipe_id,
        "status": e.status, "confidence": e.confidence,
        "flags": [{"rule": x["rule"], "severity": x["severity"], "status": x["status"]} for x in flags],
    }


def review_queue(session: Session, settings: Settings, f: QueueFilters) -> dict:
    f = check_filters(f)
    counts = queue_counts(session, f)
    conds = _conditions(session, f)
    # The severity counts apply every other filter, so they hold the total without another count.
    total = sum(c["count"] for c in counts["severity"] if f.severity is None or c["value"] == f.severity)
    pages = max(1, -(-total // PER_PAGE))
    ids = list(session.scalars(select(Entry.id).where(*conds).order_by(*_order(session, f.sort, f.status))
                               .limit(PER_PAGE).offset((f.page - 1) * PER_PAGE)))
    rows: list[dict] = []
    if ids:
        found = {e.id: (e, name) for e, name in session.execute(
            select(Entry, Source.name).outerjoin(Source, Source.id == Entry.source_id).where(Entry.id.in_(ids)))}
        flags = flags_for_entries(session, ids)
        rows = [_row(found[i][0], found[i][1], flags.get(i, [])) for i in ids if i in found]
    return {
        "filters": {k: v for k, v in asdict(f).items() if k not in ("page",)},
        "page": f.page, "per_page": PER_PAGE, "pages": pages, "total": total,
        "entries": rows, "counts": counts,
        # the learned reader's proposals waiting for a reviewer (listed with status=proposed)
        "proposals": {"count": _proposals(session), "link": filter_link(QueueFilters(), status="proposed")},
        "next_page": f.page + 1 if f.page < pages else None,
        "prev_page": f.page - 1 if f.page > 1 else None,
    }


def _proposals(session: Session) -> int:
    return session.scalar(select(func.count()).where(Entry.status == "proposed", Entry.gone.is_(False))) or 0


def filter_link(f: QueueFilters, fmt: str = "", **changes) -> str:
    """The ``/queue`` URL for these filters with ``changes`` (``fmt='.json'`` for the JSON twin)."""
    qs = urlencode(f.params(**changes))
    return f"/queue{fmt}" + (f"?{qs}" if qs else "")
