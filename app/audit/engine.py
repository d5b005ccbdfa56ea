"""Run the rules over entries, store flags and working numbers, and cache each recipe's quotable answer.

``audit_entries(session, settings, entry_ids)`` audits those entries *and every entry of their recipes*
(a new rung changes the ladder and the steady state its siblings are judged against). For each entry
it reads the current ``EntryVersion`` (fields and provenance quotes) and:

- upserts one ``flags`` row per rule that fires (unique ``(entry_id, rule)``), with the evidence and
  its citations and the ``RULESET_VERSION``; a rule that no longer fires leaves its row with
  ``active=False``; a reviewer's ``status`` (confirmed / dismissed) is never changed here;
- fills the entry's audit columns (``working_tps``, ``basis``, ``basis_reason``, ``inflation_ratio``,
  ``max_severity``, ``severity_rank``, ``flag_count``, ``open_flag_count``, ``decision_status``);
- stores the recipe's quotable JSON in ``recipes.quotable`` (and ``quotable_tps``, ``basis``).

The service flushes; the caller commits.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from app.config import Settings
from app.db import chunked
from app.models import Entry, EntryVersion, Flag, Measurement, Recipe, Snapshot, utcnow
from app.replay import citations
from app.audit.answer import cite, cite_ref, recipe_answer, standing  # noqa: F401  (cite, cite_ref re-exported)
from app.audit.rules import RULESET_VERSION, SEVERITY_RANK, read_entry, Context, Finding, Rung, Steady, run_rules
from app.audit.working import NOT_DECODE, Candidate, StandingFlag, decide, lowest_steady
from app.audit.roofline import ratio_for

CHUNK = 500
DENORMALISED = ("model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "headline_tps",
                "steady_low", "steady_high", "draft_tokens", "acceptance_rate", "concurrency", "notes")


@dataclass
class Loaded:
    entry: Entry
    fields: dict
    quotes: dict
    citation_id: str | None
    withheld: bool = False      # its capture is withdrawn or restricted: no evidence for a quotable number


def _load(session: Session, entries: list[Entry]) -> list[Loaded]:
    version_ids = [e.current_version_id for e in entries if e.current_version_id]
    versions: dict[int, tuple[dict, dict, str | None]] = {}
    for part in chunked(version_ids, CHUNK):
        q = (select(EntryVersion.id, EntryVersion.fields, EntryVersion.provenance, EntryVersion.extra,
                    Snapshot.citation_id, Snapshot.access)
             .join(Snapshot, Snapshot.id == EntryVersion.snapshot_id).where(EntryVersion.id.in_(part)))
        for vid, fields, prov, extra, cid, access in session.execute(q):
            fields = fields or {}
            if extra:  # source columns no parser field names (llama-bench's type_k, say): rules may read them
                fields = {**fields, "_extra": extra}
            versions[vid] = (fields, prov or {}, cid, (access or "public") != "public")
    out = []
    for e in entries:
        if e.current_version_id in versions:
            fields, prov, cid, withheld = versions[e.current_version_id]
        else:  # no stored version: fall back on the entry's own columns
            fields, prov, cid, withheld = ({k: getattr(e, k) for k in DENORMALISED if getattr(e, k) is not None},
                                           {}, None, False)
        out.append(Loaded(e, fields, prov, cid, withheld))
    return out


def _page_singles(session: Session, source_ids: set[int]) -> dict[int, tuple[int, set]]:
    """Per source: how many of its current entries are single-stream, and which ones (ids)."""
    out: dict[int, tuple[int, set]] = {sid: (0, set()) for sid in source_ids}
    for part in chunked(sorted(source_ids), CHUNK):
        q = select(Entry.source_id, Entry.id, Entry.concurrency).where(Entry.source_id.in_(part),
                                                                         Entry.gone.is_(False), Entry.status == "read")
        for sid, eid, conc in session.execute(q):
            if _single(conc):
                n, ids = out.get(sid, (0, set()))
                ids.add(eid)
                out[sid] = (n + 1, ids)
    return out



def _group_context(group: list[Loaded]) -> tuple[list[Rung], list[Steady]]:
    """The ladder and stated steady states of one recipe, built once and shared by its entries."""
    ladder = [Rung(g.entry.id, g.fields.get("draft_tokens"), g.fields.get("headline_tps")) for g in group]
    steady = []
    for g in group:
        vals = [v for v in (g.fields.get("steady_low"), g.fields.get("steady_high"))
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v > 0]
        if vals:
            steady.append(Steady(g.entry.id, float(min(vals)), float(max(vals)),
                                 g.quotes.get("steady_low") or g.quotes.get("steady_high")))
    return ladder, steady


def _single(conc) -> bool:
    return conc is None or conc <= 1


def _context(item: Loaded, shared: tuple[list[Rung], list[Steady]], page_singles: dict[int, tuple[int, set]]) -> Context:
    singles, ids = page_singles.get(item.entry.source_id, (0, set()))
    if item.entry.id in ids:
        singles -= 1  # the other entries of the page only
    return Context(entry_id=item.entry.id, ladder=shared[0], steady=shared[1], page_singles=singles)


def _evidence(settings: Settings, finding: Finding, item: "Loaded") -> tuple[dict, str | None]:
    selectors = item.quotes.get("_selectors") or {}
    quotes = []
    for q in finding.quotes:
        sel = selectors.get(q.get("field")) if isinstance(selectors, dict) else None
        quotes.append(dict(q, citation=cite_ref(item.citation_id, q["text"], sel if isinstance(sel, dict) else None)))
    first = next((q["citation"] for q in quotes if q["citation"]), None) or cite_ref(item.citation_id, None)
    return {"numbers": finding.numbers, "quotes": quotes}, first


@dataclass
class NewFlag:
    """A flag raised for the first time, inserted in bulk with the others of the audit (not an ORM object:
    a page of 100,000 rows raises hundreds of thousands)."""

    entry_id: int
    rule: str
    severity: str
    explanation: str
    evidence: dict
    citation: str | None
    ruleset_version: str
    active: bool
    status: str
    created_at: object
    updated_at: object

    def row(self) -> dict:
        return dict(self.__dict__)


def _store_flags(session: Session, settings: Settings, item: Loaded, findings: list[Finding],
                 existing: dict[str, Flag], inserts: list[NewFlag], changes: list[dict]) -> list:
    """The entry's flags after this audit. New ones go to ``inserts``; a stored flag that changed gets its
    new values in memory (not marked dirty) and in ``changes`` (one bulk UPDATE writes them)."""
    now = utcnow()
    fired = set()
    for f in findings:
        fired.add(f.rule)
        evidence, citation = _evidence(settings, f, item)
        flag = existing.get(f.rule)
        if flag is None:
            flag = NewFlag(entry_id=item.entry.id, rule=f.rule, severity=f.severity, explanation=f.explanation,
                           evidence=evidence, citation=citation, ruleset_version=RULESET_VERSION, active=True,
                           status="open", created_at=now, updated_at=now)
            inserts.append(flag)
            existing[f.rule] = flag
            continue
        changed = (flag.severity, flag.explanation, flag.evidence, flag.citation, flag.ruleset_version,
                   flag.active) != (f.severity, f.explanation, evidence, citation, RULESET_VERSION, True)
        if changed:  # the reviewer's status stays as it is
            _change(flag, changes, severity=f.severity, explanation=f.explanation, evidence=evidence,
                    citation=citation, ruleset_version=RULESET_VERSION, active=True, updated_at=now)
    for rule, flag in existing.items():
        if rule not in fired and flag.active:
            _change(flag, changes, active=False, updated_at=now)
    return list(existing.values())


def _change(flag, changes: list[dict], **values) -> None:
    if isinstance(flag, NewFlag):
        flag.__dict__.update(values)
        return
    for k, v in values.items():
        set_committed_value(flag, k, v)
    changes.append({"id": flag.id, **values})


def candidate(item: Loaded, flags: list[Flag]) -> Candidate:
    f = item.fields
    return Candidate(item.entry.id, f.get("headline_tps"), f.get("spread"), list(f.get("samples") or []),
                     f.get("steady_low"), f.get("steady_high"),
                     [StandingFlag(x.rule, x.severity) for x in standing(flags)], phase=f.get("phase"),
                     superseded=f.get("superseded_by") is not None, withheld=item.withheld)


SUMMARY = ("working_tps", "basis", "basis_reason", "inflation_ratio", "max_severity", "severity_rank",
           "flag_count", "open_flag_count", "decision_status", "roofline_ratio")


def _roofline_ratio(item: Loaded) -> float | None:
    """The per-user decode figure over its memory-bandwidth bound (cached per setup), rounded; None when
    the figure is not a per-user decode figure, an input is unknown, or its capture is withheld."""
    if item.withheld:
        return None
    r = ratio_for(item.fields)
    return round(r, 4) if r is not None else None


def _summarise(entry: Entry, flags: list, working, roofline_ratio: float | None = None) -> dict | None:
    """The entry's audit columns; a dict for a bulk UPDATE when any differs from what it holds, else None."""
    active = [f for f in flags if f.active]
    counting = standing(flags)
    top = max(counting, key=lambda f: SEVERITY_RANK.get(f.severity, 0), default=None)
    open_count = sum(1 for f in active if f.status == "open")
    values = dict(working_tps=working.tps, basis=working.basis, basis_reason=working.reason,
                  inflation_ratio=working.inflation_ratio, max_severity=top.severity if top else None,
                  severity_rank=SEVERITY_RANK.get(top.severity, 0) if top else 0, flag_count=len(active),
                  open_flag_count=open_count,
                  decision_status="none" if not active else ("pending" if open_count else "decided"),
                  roofline_ratio=roofline_ratio)
    if all(getattr(entry, k) == v for k, v in values.items()):
        return None
    return {"id": entry.id, **values}


def _measurements(session: Session, recipe_ids: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for part in chunked(recipe_ids, CHUNK):
        q = select(Measurement.recipe_id, Measurement.tps).where(
            Measurement.recipe_id.in_(part), Measurement.non_repeating_prompts.is_(True),
            Measurement.output_checked.is_(True), Measurement.verified.is_(True))
        for rid, tps in session.execute(q):
            out.setdefault(rid, []).append(tps)
    return out


def audit_entries(session: Session, settings: Settings, entry_ids, *, page_cache: dict | None = None) -> dict:
    """Audit these entries and their recipes' other entries. Returns counts for reports.

    ``page_cache``: a dict the caller keeps across several calls on the same pages, when nothing is
    stored between them (a crawl auditing one long page in batches): each page's single-stream count is
    then read once, not once per batch."""
    entries, recipe_ids = _with_recipes(session, entry_ids)
    if not entries:
        return {"entries": 0, "recipes": 0, "flags_active": 0}
    return _audit(session, settings, entries, recipe_ids, page_cache)


def plan_entries(session: Session, settings: Settings, entry_ids, *, page_cache: dict | None = None) -> dict:
    """:func:`audit_entries` without the writes: the plan :func:`apply_audit` writes (reads only, so
    another process may compute it while this one writes)."""
    entries, recipe_ids = _with_recipes(session, entry_ids)
    return plan_audit(session, settings, entries, recipe_ids, page_cache)   # nothing to plan: an empty plan


def _with_recipes(session: Session, entry_ids) -> tuple[list[Entry], list[str]]:
    """These entries and their recipes' other entries, and the recipe ids."""
    ids = sorted({int(i) for i in entry_ids})
    if not ids:
        return [], []
    seeds: list[Entry] = []
    for part in chunked(ids, CHUNK):   # a proposal is never audited: it is nothing read yet
        seeds += session.scalars(select(Entry).where(Entry.id.in_(part), Entry.status == "read")).all()
    recipe_ids = sorted({e.recipe_id for e in seeds if e.recipe_id})
    entries = {e.id: e for e in seeds}
    others: list[int] = []
    for part in chunked(recipe_ids, CHUNK):   # the recipes' other entries: ids first, rows only for those
        others += [i for i in session.scalars(select(Entry.id).where(Entry.recipe_id.in_(part))) if i not in entries]
    for part in chunked(others, CHUNK):
        for e in session.scalars(select(Entry).where(Entry.id.in_(part))):
            entries[e.id] = e
    return list(entries.values()), recipe_ids


def audit_recipes(session: Session, settings: Settings, recipe_ids) -> dict:
    """Audit every entry of these recipes (after a measurement, or to refresh a cached answer)."""
    rids = sorted(set(recipe_ids))
    entries: list[Entry] = []
    for part in chunked(rids, CHUNK):
        entries += session.scalars(select(Entry).where(Entry.recipe_id.in_(part))).all()
    return _audit(session, settings, entries, rids)


def audit_all(session: Session, settings: Settings) -> dict:
    rids = list(session.scalars(select(Recipe.recipe_id)))
    total = {"entries": 0, "recipes": 0, "flags_active": 0}
    for part in chunked(rids, 200):
        for k, v in audit_recipes(session, settings, part).items():
            total[k] += v
    loose = list(session.scalars(select(Entry.id).where(Entry.recipe_id.is_(None), Entry.status == "read")))
    for part in chunked(loose, CHUNK):
        for k, v in audit_entries(session, settings, part).items():
            total[k] += v
    return total


def _audit(session: Session, settings: Settings, entries: list[Entry], recipe_ids: list[str],
           page_cache: dict | None = None) -> dict:
    plan = plan_audit(session, settings, entries, recipe_ids, page_cache)
    apply_audit(session, plan)
    return plan["counts"]


def plan_audit(session: Session, settings: Settings, entries: list[Entry], recipe_ids: list[str],
               page_cache: dict | None = None) -> dict:
    """Everything an audit of these entries writes, computed from reads only: new flags, changed flags,
    entry and recipe audit columns (plain dicts, so another process may compute a plan and this one
    apply it). The loaded ORM objects are given the new values without being marked dirty."""
    loaded = _load(session, sorted(entries, key=lambda e: e.id))
    groups: dict[object, list[Loaded]] = {}
    for item in loaded:
        groups.setdefault(item.entry.recipe_id or ("entry", item.entry.id), []).append(item)
    sources = {i.entry.source_id for i in loaded if i.entry.source_id is not None}
    if page_cache is None:
        page = _page_singles(session, sources)
    else:
        page_cache.update(_page_singles(session, sources - set(page_cache)))
        page = page_cache
    existing: dict[int, dict[str, Flag]] = {}
    for part in chunked([i.entry.id for i in loaded], CHUNK):
        for flag in session.scalars(select(Flag).where(Flag.entry_id.in_(part))):
            existing.setdefault(flag.entry_id, {})[flag.rule] = flag
    measured = _measurements(session, recipe_ids)
    flags_by_entry: dict[int, list] = {}
    inserts: list[NewFlag] = []
    flag_changes: list[dict] = []
    for group in groups.values():
        shared = _group_context(group)
        for item in group:
            findings = run_rules(item.fields, item.quotes, _context(item, shared, page), read_entry(item.fields))
            flags_by_entry[item.entry.id] = _store_flags(session, settings, item, findings,
                                                         existing.setdefault(item.entry.id, {}), inserts,
                                                         flag_changes)
    recipes: dict[str, Recipe] = {}
    keys = [k for k in groups if isinstance(k, str)]
    for part in chunked(keys, CHUNK):
        recipes.update((r.recipe_id, r) for r in session.scalars(select(Recipe).where(Recipe.recipe_id.in_(part))))
    active = 0
    updates: list[dict] = []
    recipe_updates: list[dict] = []
    for key, group in groups.items():
        cands = [candidate(i, flags_by_entry[i.entry.id]) for i in group]
        ms = measured.get(key, []) if isinstance(key, str) else []
        steady = lowest_steady([c for c in cands if not c.withheld])   # a withdrawn capture states nothing
        same: dict[bool, object] = {}
        for item, cand in zip(group, cands):
            # a decode entry's working number is its recipe's, worded apart only for the entry whose steady
            # state it is: decided once per recipe, not once per entry (n, not n squared, on a long board)
            if cand.withheld or cand.superseded or cand.phase in NOT_DECODE:
                working = decide(cands, ms, entry=cand, recipe_steady=steady)
            else:
                own = steady is not None and steady["entry_id"] == cand.entry_id
                working = same.get(own)
                if working is None:
                    working = same[own] = decide(cands, ms, entry=cand, recipe_steady=steady)
            changed = _summarise(item.entry, flags_by_entry[item.entry.id], working, _roofline_ratio(item))
            if changed is not None:
                updates.append(changed)
                for k, v in changed.items():
                    if k != "id":
                        set_committed_value(item.entry, k, v)
            active += sum(1 for f in flags_by_entry[item.entry.id] if f.active)
        if isinstance(key, str):
            recipe = recipes.get(key)
            if recipe is not None:
                shown = [i for i in group if not i.withheld]   # a withdrawn capture is no evidence
                answer = recipe_answer(settings, key, shown, flags_by_entry, decide(cands, ms))
                if (recipe.quotable, recipe.quotable_tps, recipe.basis) != (answer, answer["quotable_tps"],
                                                                            answer["basis"]):
                    row = {"id": recipe.id, "quotable": answer, "quotable_tps": answer["quotable_tps"],
                           "basis": answer["basis"]}
                    recipe_updates.append(row)
                    for k in ("quotable", "quotable_tps", "basis"):
                        set_committed_value(recipe, k, row[k])
    counts = {"entries": len(loaded), "recipes": sum(1 for k in groups if isinstance(k, str)), "flags_active": active}
    return {"flag_inserts": [f.row() for f in inserts], "flag_changes": flag_changes, "entry_updates": updates,
            "recipe_updates": recipe_updates, "counts": counts}


def apply_audit(session: Session, plan: dict) -> None:
    """Write what :func:`plan_audit` computed: bulk INSERT of new flags, bulk UPDATEs by primary key."""
    session.flush()
    for part in chunked(plan["flag_inserts"], CHUNK):
        session.execute(insert(Flag), part)
    groups: dict[tuple, list[dict]] = {}
    for row in plan["flag_changes"]:
        groups.setdefault(tuple(sorted(row)), []).append(row)
    for rows in groups.values():
        for part in chunked(rows, CHUNK):
            session.execute(update(Flag), part)
    for part in chunked(plan["recipe_updates"], CHUNK):
        session.execute(update(Recipe), part)
    for part in chunked(plan["entry_updates"], CHUNK):
        session.execute(update(Entry), part)


def reaudit_entry(session: Session, settings: Settings, entry_id: int) -> None:
    """Recompute working numbers after a decision: flags are re-run too, but decisions stay."""
    audit_entries(session, settings, [entry_id])


def flag_json(f: Flag, *, evidence: bool = True, settings: Settings | None = None) -> dict:
    """A flag as served: its stored host-free citations made absolute (``citations.absolute``)."""
    out = {"id": f.id, "rule": f.rule, "severity": f.severity, "explanation": f.explanation,
           "citation": _served(settings, f.citation), "status": f.status, "active": f.active,
           "ruleset_version": f.ruleset_version}
    if evidence:
        ev = dict(f.evidence or {})
        if isinstance(ev.get("quotes"), list):
            ev["quotes"] = [dict(q, citation=_served(settings, q.get("citation"))) if isinstance(q, dict) else q
                            for q in ev["quotes"]]
        out["evidence"] = ev
    return out


def _served(settings: Settings | None, ref: str | None) -> str | None:
    return citations.absolute(settings, ref)


def flags_for_entries(session: Session, entry_ids, *, evidence: bool = False,
                      settings: Settings | None = None) -> dict[int, list[dict]]:
    """Active flags of each entry (dismissed ones included, with their status), most severe first."""
    out: dict[int, list[dict]] = {}
    ids = list({int(i) for i in entry_ids})
    for part in chunked(ids, CHUNK):
        for f in session.scalars(select(Flag).where(Flag.entry_id.in_(part), Flag.active.is_(True))):
            out.setdefault(f.entry_id, []).append(flag_json(f, evidence=evidence, settings=settings))
    for flags in out.values():
        flags.sort(key=lambda d: (-SEVERITY_RANK.get(d["severity"], 0), d["rule"]))
    return out
