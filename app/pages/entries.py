"""Read side of claims: entry lists with filters, one entry with history and provenance, recipe ladders.

The JSON API (``app/api/entries.py``, ``app/api/recipes.py``) and the HTML views call these; every
entry is rendered by ``entry_json`` so both faces show the same fields.
"""

from __future__ import annotations


from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from app.audit.roofline import roofline_json
from app.audit.rules import read_entry
from app.config import Settings
from app.review.corrections import history as review_history
from app.errors import BadRequest, NotFound
from app.models import Entry, EntryVersion, Flag, Recipe, Snapshot, Source
from app.audit import engine as audit
from app.replay import citations, withdrawal

MAX_LIMIT = 500
SEVERITIES = ("critical", "high", "medium", "low")


def quote_url(settings: Settings, citation_id: str | None, text: str | None, selector: dict | None = None) -> str | None:
    """The citation URL of ``text`` inside snapshot ``citation_id`` (the whole snapshot without text), pinned
    to the one occurrence the parser read it from when its ``selector`` is known (prefix, suffix, pos)."""
    if not citation_id:
        return None
    if not text:
        return f"{citations.public_base(settings)}/c/{citation_id}"
    if selector:
        return citations.selector_url(settings, citation_id, text, selector)
    return citations.quote_url(settings, citation_id, text)


def _selector(provenance: dict | None, name: str) -> dict | None:
    sels = (provenance or {}).get("_selectors")
    return sels.get(name) if isinstance(sels, dict) else None


def _flags(session: Session, entry_ids: list[int]) -> dict[int, list[dict]]:
    if not entry_ids:
        return {}
    return {eid: list(fl) for eid, fl in audit.flags_for_entries(session, entry_ids).items()}


def _withheld(access: str | None) -> bool:
    return (access or withdrawal.PUBLIC) != withdrawal.PUBLIC


def withheld_marker(citation_id: str | None, access: str | None) -> dict | None:
    """What an entry read from a withdrawn or restricted capture says instead of its figures and text."""
    if not _withheld(access):
        return None
    return {"snapshot": citation_id, "access": access, "status": withdrawal.STATUS_OF.get(access, 410),
            "note": "read from a capture that is withdrawn or restricted: its figures, notes and quotes are "
                    "not shown (the citation answers with its tombstone)"}


def _roofline(e: Entry, fields: dict | None) -> dict:
    """The entry's memory-bandwidth bound (issue 28), from its current version's fields, else its columns."""
    if not fields:
        fields = {k: getattr(e, k) for k in ("model", "hardware", "gpu_count", "quantization", "headline_tps",
                                             "concurrency", "draft_tokens")}
    return roofline_json(fields)


STATUSES = ("read", "proposed", "any")


def chosen_by(e: Entry, provenance: dict | None) -> dict:
    """Which part chose the entry: the rules, the learned reader (a proposal: its model and version) or a
    reviewer (an ``add`` correction, with the proposal it confirmed)."""
    by = (provenance or {}).get("_chosen_by")
    if isinstance(by, dict):
        return by
    return {"part": "learned" if e.status == "proposed" else "rules"}


def _status_json(e: Entry, provenance: dict | None) -> dict:
    return {"status": e.status or "read", "confidence": e.confidence, "chosen_by": chosen_by(e, provenance),
            "evidence": (provenance or {}).get("_context") if e.status == "proposed" else None}


def entry_json(settings: Settings, e: Entry, source_name: str | None, citation_id: str | None,
               provenance: dict | None, flags: list[dict], access: str | None = None,
               fields: dict | None = None) -> dict:
    out = _entry_json(settings, e, source_name, citation_id, provenance, flags, access, fields)
    out.update(_status_json(e, provenance if out.get("withheld") is None else None))
    return out


def _entry_json(settings: Settings, e: Entry, source_name: str | None, citation_id: str | None,
                provenance: dict | None, flags: list[dict], access: str | None = None,
                fields: dict | None = None) -> dict:
    if _withheld(access):   # nothing read from a withheld capture: no figures, notes, quotes or selectors
        out = {"id": e.id, "source": source_name, "model": e.model, "hardware": e.hardware, "gpu_count": e.gpu_count,
               "engine": e.engine, "engine_version": None, "quantization": e.quantization, "headline_tps": None,
               "steady_state": None, "draft_tokens": None, "acceptance_rate": None, "concurrency": e.concurrency,
               "recipe_id": e.recipe_id, "notes": None, "snapshot": citation_id,
               "citation": quote_url(settings, citation_id, None), "working_tps": None, "basis": "none",
               "flags": [], "gone": e.gone, "withheld": withheld_marker(citation_id, access), "roofline": None}
        return out
    steady = None
    if e.steady_low is not None or e.steady_high is not None:
        steady = {"low": e.steady_low, "high": e.steady_high}
    headline_quote = (provenance or {}).get("headline_tps")
    return {
        "id": e.id, "source": source_name, "model": e.model, "hardware": e.hardware, "gpu_count": e.gpu_count,
        "engine": e.engine, "engine_version": e.engine_version, "quantization": e.quantization,
        "headline_tps": e.headline_tps, "steady_state": steady, "draft_tokens": e.draft_tokens,
        "acceptance_rate": e.acceptance_rate, "concurrency": e.concurrency, "recipe_id": e.recipe_id,
        "notes": e.notes, "snapshot": citation_id,
        "citation": quote_url(settings, citation_id, headline_quote, _selector(provenance, "headline_tps")),
        "working_tps": e.working_tps, "basis": e.basis, "flags": flags, "gone": e.gone, "withheld": None,
        "roofline": _roofline(e, fields),
    }


def _rows_query():
    return (
        select(Entry, Source.name, Snapshot.citation_id, EntryVersion.provenance, Snapshot.access, EntryVersion.fields)
        .outerjoin(Source, Source.id == Entry.source_id)
        .outerjoin(EntryVersion, EntryVersion.id == Entry.current_version_id)
        .outerjoin(Snapshot, Snapshot.id == EntryVersion.snapshot_id)
    )


def _render(session: Session, settings: Settings, rows) -> list[dict]:
    flags = _flags(session, [r[0].id for r in rows])
    return [entry_json(settings, e, name, cid, prov, flags.get(e.id, []), access, fields)
            for e, name, cid, prov, access, fields in rows]


def list_entries(session: Session, settings: Settings, *, source: str | None = None, model: str | None = None,
                 recipe_id: str | None = None, flagged: bool | None = None, severity: str | None = None,
                 rule: str | None = None, include_gone: bool = False, limit: int = 50, offset: int = 0,
                 status: str | None = None) -> dict:
    """``status``: ``read`` (the default: what the rules read and reviewers added), ``proposed`` (the learned
    reader's proposals, most confident first) or ``any``."""
    status = (status or "read").strip().lower()
    if status not in STATUSES:
        raise BadRequest(f"Unknown status {status!r}: use read, proposed or any.")
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be between 1 and {MAX_LIMIT}; page with offset for more.")
    if offset < 0:
        raise BadRequest("offset must be 0 or more.")
    conds = [] if status == "any" else [Entry.status == status]
    if source is not None:
        src_id = session.scalar(select(Source.id).where(Source.name == source))
        if src_id is None:
            raise NotFound(f"No source named {source!r}. GET /api/sources lists them.")
        conds.append(Entry.source_id == src_id)
    if model is not None:
        conds.append(func.lower(Entry.model) == model.strip().lower())
    if recipe_id is not None:
        conds.append(Entry.recipe_id == recipe_id)
    if not include_gone:
        conds.append(Entry.gone.is_(False))
    # Flags that count: raised by the latest audit and not dismissed by a reviewer.
    active = (Flag.entry_id == Entry.id) & Flag.active.is_(True) & (Flag.status != "dismissed")
    if flagged is not None:
        conds.append(exists().where(active) if flagged else ~exists().where(active))
    if severity is not None:
        sev = severity.strip().lower()
        if sev not in SEVERITIES:
            raise BadRequest(f"Unknown severity {severity!r}: use one of {', '.join(SEVERITIES)}.")
        conds.append(exists().where(active & (Flag.severity == sev)))
    if rule is not None:
        conds.append(exists().where(active & (Flag.rule == rule.strip())))
    total = session.scalar(select(func.count(Entry.id)).where(*conds))
    order = [Entry.confidence.desc(), Entry.id] if status == "proposed" else [Entry.id]
    rows = session.execute(_rows_query().where(*conds).order_by(*order).limit(limit).offset(offset)).all()
    return {"entries": _render(session, settings, rows), "total": total or 0, "limit": limit, "offset": offset}


def get_entry(session: Session, settings: Settings, entry_id: int) -> dict:
    row = session.execute(_rows_query().where(Entry.id == entry_id)).first()
    if row is None:
        raise NotFound(f"No entry {entry_id}. GET /api/entries lists them.")
    e = row[0]
    out = _render(session, settings, [row])[0]
    versions = session.execute(
        select(EntryVersion, Snapshot.citation_id, Snapshot.captured_at, Snapshot.url, Snapshot.access)
        .join(Snapshot, Snapshot.id == EntryVersion.snapshot_id)
        .where(EntryVersion.entry_id == e.id).order_by(EntryVersion.version_no)
    ).all()
    current = next((v for v, *_ in versions if v.id == e.current_version_id), None)
    cid = row[2]
    if _withheld(row[4]):
        current = None   # read from a withheld capture: none of its fields, quotes, selectors or context
    out["entry_key"] = e.entry_key
    out["fields"] = current.fields if current else {}
    out["extra"] = (current.extra if current else None) or {}
    out["warnings"] = (current.warnings if current else None) or []
    prov = (current.provenance or {}) if current else {}
    selectors = prov.get("_selectors") or {}
    out["provenance"] = {
        name: {"value": (current.fields or {}).get(name), "quote": text, "selector": selectors.get(name),
               "snapshot": cid, "citation": quote_url(settings, cid, text, selectors.get(name))}
        for name, text in prov.items() if not name.startswith("_")
    }
    out["context"] = ((current.provenance or {}) if current else {}).get("_context")
    out["notes_reading"] = notes_reading(settings, cid, out["fields"], out["extra"], prov)
    out["history"] = [_version_json(settings, v, vcid, cap, url, access) for v, vcid, cap, url, access in versions]
    out["recipe"] = f"/api/recipes/{e.recipe_id}" if e.recipe_id else None
    # reviewers' corrections (issue 27): each field's provenance, the entry's version (If-Match), its history
    reviewer = prov.get("_reviewer") or {}
    out["version"] = current.version_no if current else None
    out["etag"] = f'"v{current.version_no}"' if current else None
    out["field_sources"] = {name: ("reviewer" if name in reviewer else "parser") for name in out["fields"]}
    out["reviewed"] = reviewer
    out["corrections"] = review_history(session, e.id) if current else []
    out["rejected"] = next(({"by": c["by"], "why": c["why"], "at": c["at"]} for c in reversed(out["corrections"])
                            if c["kind"] == "reject"), None) if e.gone else None
    return out


def notes_reading(settings: Settings, citation_id: str | None, fields: dict, extra: dict, prov: dict) -> list[dict]:
    """What Caveat made of each clause of the entry's notes (issue 25): ``text``, ``field``, ``reading``
    (condition | benign | not_understood | context), ``rule``, ``kind``, and, where the field's archived
    text is pinned, the clause's own ``selector`` (TextQuoteSelector and TextPositionSelector) and
    ``citation``."""
    selectors = prov.get("_selectors") or {}
    out = []
    for c in read_entry({**fields, "_extra": extra} if extra else fields):
        item = {k: v for k, v in c.as_dict().items() if k not in ("start", "end")}
        sel = selectors.get(c.field) if isinstance(selectors, dict) else None
        quote = prov.get(c.field)
        if isinstance(sel, dict) and isinstance(quote, str) and quote == str(fields.get(c.field)) and c.end > c.start:
            start = sel.get("start")
            exact = quote[c.start:c.end]
            prefix = ((sel.get("prefix") or "") + quote[:c.start])[-32:]
            suffix = (quote[c.end:] + (sel.get("suffix") or ""))[:32]
            item["selector"] = {"exact": exact, "prefix": prefix, "suffix": suffix,
                                "start": start + c.start if isinstance(start, int) else None,
                                "end": start + c.end if isinstance(start, int) else None}
            item["citation"] = quote_url(settings, citation_id, exact, item["selector"]) if citation_id else None
        else:
            item["selector"] = None
            item["citation"] = quote_url(settings, citation_id, c.text) if citation_id and c.end > c.start else None
        out.append(item)
    return out


def _version_json(settings: Settings, v: EntryVersion, vcid: str, cap, url: str, access: str | None) -> dict:
    if _withheld(access):   # the version is listed; nothing read from its capture is
        return {"version": v.version_no, "snapshot": vcid, "captured_at": None, "url": None, "changed_fields": {},
                "warnings": [], "parser": v.parser, "headline_tps": None, "citation": quote_url(settings, vcid, None),
                "withheld": withheld_marker(vcid, access)}
    return {"version": v.version_no, "snapshot": vcid, "captured_at": cap.isoformat() if cap else None, "url": url,
            "changed_fields": v.changed_fields or {}, "warnings": v.warnings or [], "parser": v.parser,
            "headline_tps": (v.fields or {}).get("headline_tps"),
            "citation": quote_url(settings, vcid, (v.provenance or {}).get("headline_tps"),
                                  _selector(v.provenance, "headline_tps")), "withheld": None}


def get_recipe(session: Session, settings: Settings, recipe_id: str) -> dict:
    recipe = session.scalar(select(Recipe).where(Recipe.recipe_id == recipe_id))
    if recipe is not None and recipe.merged_into:   # merged when model keys came: the id still resolves
        recipe = session.scalar(select(Recipe).where(Recipe.recipe_id == recipe.merged_into)) or recipe
        recipe_id = recipe.recipe_id
    if recipe is None:
        raise NotFound(f"No recipe {recipe_id!r}. Recipe ids look like r-0123456789ab; see an entry's recipe_id.")
    rows = session.execute(
        _rows_query().where(Entry.recipe_id == recipe_id, Entry.gone.is_(False))
        .order_by(Entry.draft_tokens.is_(None), Entry.draft_tokens, Entry.id)
    ).all()
    rungs = _render(session, settings, rows)
    return {
        "recipe_id": recipe.recipe_id, "key": recipe.key, "model": recipe.model, "hardware": recipe.hardware,
        "gpu_count": recipe.gpu_count, "engine": recipe.engine, "quotable": recipe.quotable,
        "quotable_tps": recipe.quotable_tps, "basis": recipe.basis,
        "ladder": [
            {"draft_tokens": r["draft_tokens"], "headline_tps": r["headline_tps"],
             "acceptance_rate": r["acceptance_rate"], "steady_state": r["steady_state"], "entry": r["id"],
             "source": r["source"], "snapshot": r["snapshot"], "citation": r["citation"]}
            for r in rungs
        ],
        "entries": rungs,
    }
