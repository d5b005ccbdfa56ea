"""View models for the reviewer pages (entry, recipe, sources, audit log): one dict per page, rendered
as HTML by a template and returned as it is by the page's ``.json`` twin.

Built from the claims and audit services (``entries.get_entry``, ``entries.get_recipe``,
``audit.flags_for_entries``, ``decisions.list_decisions``); nothing here computes a number of its own
except the chart's points, which are the recipe's ladder as stored.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.models import Crawl, Entry
from app.pages import entries as entries_service
from app.pages.review import correction_form
from app.audit.engine import flags_for_entries
from app.audit.decisions import list_decisions
from app.claims.sources import list_sources, source_json
from app.audit.decisions import count_decisions
from app.replay.withdrawal import recent_events
from app.audit.measurements import list_for_recipe
from app.watch.changes import list_changes, title

MAX_MARKS = 50
RECENT_CRAWLS = 5
LOG_PER_PAGE = 50


def sources_page(session: Session) -> dict:
    out = []
    for src in list_sources(session):
        d = source_json(session, src)
        crawls = session.scalars(select(Crawl).where(Crawl.source_id == src.id)
                                 .order_by(Crawl.id.desc()).limit(RECENT_CRAWLS)).all()
        d["recent_crawls"] = [{
            "id": c.id, "kind": c.kind, "status": c.status,
            "started_at": c.started_at.isoformat() if c.started_at else None,
            "finished_at": c.finished_at.isoformat() if c.finished_at else None,
            "entries_new": c.entries_new, "entries_changed": c.entries_changed,
            "entries_unchanged": c.entries_unchanged, "warnings": len(c.warnings or []), "error": c.error,
        } for c in crawls]
        out.append(d)
    return {"sources": out}


def audit_log_page(session: Session, before_id: int | None, offset: int = 0) -> dict:
    """One page of the log in the API's paging shape: ``count``, ``total``, ``limit``, ``offset`` and the
    ``next`` page's path (null on the last page); ``before_id`` still filters (older than that id)."""
    rows = list_decisions(session, limit=LOG_PER_PAGE, before_id=before_id, offset=offset)
    total = count_decisions(session, before_id=before_id)
    ids = {r["entry_id"] for r in rows}
    entries = {e.id: e for e in session.scalars(select(Entry).where(Entry.id.in_(ids)))} if ids else {}
    for r in rows:
        e = entries.get(r["entry_id"])
        r["entry_url"] = f"/entries/{r['entry_id']}"
        r["model"] = e.model if e else None
        r["hardware"] = e.hardware if e else None
    more = offset + len(rows) < total
    query = (f"before_id={before_id}&" if before_id is not None else "") + f"offset={offset + len(rows)}"

    return {"count": len(rows), "total": total, "limit": LOG_PER_PAGE, "offset": offset,
            "next": f"/audit-log?{query}" if more and rows else None, "decisions": rows,
            # withdrawals, restrictions and reinstatements, newest first (who, why, when; first page only)
            "access_events": recent_events(session, 50) if offset == 0 and before_id is None else []}


def note_segments(notes: str | None, quotes: list[dict]) -> list[dict]:
    """Split ``notes`` into plain and highlighted pieces: each evidence quote found verbatim in the notes
    is marked (with the rules that cite it). Overlapping quotes merge into one mark."""
    if not notes:
        return []
    spans: list[list] = []
    for q in quotes:
        text = q.get("text") or ""
        if not text or len(spans) >= MAX_MARKS:
            continue
        start = notes.find(text)
        while start != -1:
            spans.append([start, start + len(text), {q.get("rule")} - {None}, q.get("citation")])
            start = notes.find(text, start + len(text))
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list] = []
    for s in spans:
        if merged and s[0] < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], s[1])
            merged[-1][2] |= s[2]
            merged[-1][3] = merged[-1][3] or s[3]
        else:
            merged.append(s)
    out, pos = [], 0
    for start, end, rules, citation in merged:
        if start > pos:
            out.append({"text": notes[pos:start], "mark": False})
        out.append({"text": notes[start:end], "mark": True, "rules": sorted(rules), "citation": citation})
        pos = end
    if pos < len(notes):
        out.append({"text": notes[pos:], "mark": False})
    return out


def ladder_chart(ladder: list[dict], steady: dict | None, highlight: int | None = None) -> dict:
    """Points for the draft-width chart (repeated rungs kept) and the stated steady-state band."""
    points = [{"x": r["draft_tokens"], "y": r["headline_tps"], "entry": r["entry"],
               "current": r["entry"] == highlight}
              for r in ladder if r.get("draft_tokens") is not None and r.get("headline_tps") is not None]
    band = None
    if steady and (steady.get("low") is not None or steady.get("high") is not None):
        low = steady.get("low") if steady.get("low") is not None else steady.get("high")
        high = steady.get("high") if steady.get("high") is not None else low
        band = {"low": low, "high": high, "citation": steady.get("citation")}
    return {"points": points, "band": band, "unplotted": len(ladder) - len(points)}


def _evidence_quotes(flags: list[dict]) -> list[dict]:
    out = []
    for f in flags:
        for q in (f.get("evidence") or {}).get("quotes") or []:
            out.append({"text": q.get("text"), "rule": f["rule"], "citation": q.get("citation"),
                        "field": q.get("field")})
    return out


def _steady(recipe: dict | None, entry: dict) -> dict | None:
    quotable = (recipe or {}).get("quotable") or {}
    if quotable.get("steady_state"):
        return quotable["steady_state"]
    return entry.get("steady_state")


def _num(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "not a number"
        return f"{v:,.2f}" if abs(v) < 10 else f"{v:,.1f}".removesuffix(".0")
    return str(v)


def _in_words(name: str, value) -> str:
    """One evidence number as a reader would say it: ``acceptance rate 1.00``, lists as their items."""
    label = name.replace("_", " ")
    if value is None:
        return f"{label}: not stated"
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (dict, list, tuple)) for v in value):
            return f"{label}: {len(value)} items"
        if all(isinstance(v, str) for v in value):
            return "; ".join(value) if name in ("reasons", "why") else f"{label}: " + "; ".join(value)
        return f"{label}: " + ", ".join(_num(v) for v in value)
    if isinstance(value, dict):
        return f"{label}: " + ", ".join(f"{k.replace('_', ' ')} {_num(v)}" for k, v in value.items())
    return f"{label} {_num(value)}"


def standing_flags(flags: list[dict]) -> list[dict]:
    """The flags that count (active, not dismissed), most severe first, with their evidence in words."""
    out = []
    for f in flags:
        if f.get("status") == "dismissed" or f.get("active") is False:
            continue
        ev = f.get("evidence") or {}
        numbers = ev.get("numbers") or {}
        out.append({"id": f.get("id"), "rule": f["rule"], "severity": f["severity"], "status": f.get("status"),
                    "explanation": f.get("explanation"), "citation": f.get("citation"),
                    "facts": [_in_words(k, v) for k, v in numbers.items()
                              if not isinstance(v, (list, tuple, dict)) or k in ("reasons", "why")]
                    if isinstance(numbers, dict) else [],
                    "quotes": [q for q in (ev.get("quotes") or []) if isinstance(q, dict) and q.get("text")]})
    return out


def verdict(entry: dict, standing: list[dict]) -> dict:
    """The one-line answer for the reviewer: quote this, quote that instead, or do not quote."""
    head, work, basis = entry.get("headline_tps"), entry.get("working_tps"), entry.get("basis") or "none"
    why = entry.get("basis_reason") or ""
    worst = standing[0]["severity"] if standing else None
    if work is None or basis == "none":
        return {"kind": "do-not-quote", "text": "Do not quote this entry",
                "why": why or "no measurement, no stated steady state, and the headline is flagged",
                "worst": worst}
    if basis == "unreviewed":
        return {"kind": "unreviewed", "text": f"Not quotable yet: {_num(float(work))} tok/s waits for a reviewer",
                "why": why or "the notes hold clauses Caveat did not understand", "worst": worst}
    if head is not None and abs(work - head) < 1e-9 and basis == "headline":
        return {"kind": "quote-this", "text": f"Quote this: {_num(float(work))} tok/s, the headline",
                "why": why, "worst": worst}
    text = f"Quote {_num(float(work))} tok/s instead"
    if head is not None:
        text += f" of the headline {_num(float(head))}"
    return {"kind": "quote-instead", "text": text, "why": why, "worst": worst}


def roofline_view(roofline: dict | None) -> dict | None:
    """The memory-bandwidth bound as the pages show it: the bound, the figure's share of it, each input
    with its source, the assumptions and what is missing (issue 28)."""
    if not roofline:
        return None
    ins = roofline.get("inputs") or {}
    rows = []
    acc = ins.get("accelerator")
    if acc:
        rows.append({"label": "hardware", "value": f"{acc['name']}, {_num(acc['bandwidth_gbs'])} GB/s", "source": acc.get("source")})
    if ins.get("gpu_count"):
        rows.append({"label": "devices", "value": str(ins["gpu_count"]), "source": None})
    p = ins.get("params")
    if p:
        rows.append({"label": "active parameters", "value": f"{_num(p['active_b'])}B of {_num(p['total_b'])}B"
                     if p.get("total_b") else f"{_num(p['active_b'])}B", "source": p.get("source")})
    b = ins.get("bits_per_weight")
    if b:
        rows.append({"label": "bits per weight", "value": f"{_num(b['value'])} ({b.get('key') or 'stated'})",
                     "source": b.get("source")})
    ratio = roofline.get("ratio")
    return {"bound_tps": roofline.get("bound_tps"), "ratio": ratio, "beyond": ratio is not None and ratio > 1,
            "applies": roofline.get("applies", True), "inputs": rows,
            "assumptions": roofline.get("assumptions") or [], "missing": roofline.get("missing") or [],
            "version": roofline.get("version")}


def entry_page(session: Session, settings: Settings, entry_id: int) -> dict:
    entry = entries_service.get_entry(session, settings, entry_id)
    row = session.get(Entry, entry_id)
    flags = [] if entry.get("withheld") else flags_for_entries(session, [entry_id], evidence=True).get(entry_id, [])
    entry["flags"] = flags   # read from a withheld capture: no flag quotes its text
    entry["basis_reason"] = row.basis_reason
    entry["inflation_ratio"] = row.inflation_ratio
    entry["max_severity"] = row.max_severity
    entry["decision_status"] = row.decision_status
    entry["open_flag_count"] = row.open_flag_count
    recipe = entries_service.get_recipe(session, settings, row.recipe_id) if row.recipe_id else None
    ladder = recipe["ladder"] if recipe else [
        {"draft_tokens": entry["draft_tokens"], "headline_tps": entry["headline_tps"], "entry": entry_id}]
    standing = standing_flags(flags)
    return {
        "entry": entry,
        "verdict": verdict(entry, standing),
        "standing": standing,
        "recipe": None if recipe is None else {
            "recipe_id": recipe["recipe_id"], "url": f"/recipes/{recipe['recipe_id']}",
            "quotable_tps": recipe["quotable_tps"], "basis": recipe["basis"],
            "reason": (recipe["quotable"] or {}).get("reason"), "rungs": len(recipe["ladder"]),
        },
        "notes": note_segments(entry.get("notes"), _evidence_quotes(flags)),
        "notes_reading": entry.get("notes_reading") or [],
        "chart": ladder_chart(ladder, _steady(recipe, entry), highlight=entry_id),
        "decisions": list_decisions(session, entry_id=entry_id, limit=100),
        "roofline": roofline_view(entry.get("roofline")),
        # the reviewer's correction form (issue 27): each field, its provenance (parser | reviewer), its history
        "correction_form": [] if entry.get("withheld") else correction_form(entry),
    }


def recipe_page(session: Session, settings: Settings, recipe_id: str) -> dict:
    recipe = entries_service.get_recipe(session, settings, recipe_id)
    quotable = recipe.get("quotable") or {}
    top = max((e for e in recipe["entries"] if e.get("headline_tps") is not None),
              key=lambda e: e["headline_tps"], default=None)
    flags = flags_for_entries(session, [top["id"]], evidence=True).get(top["id"], []) if top else []
    ids = [e["id"] for e in recipe["entries"]]
    rows = {e.id: e for e in session.scalars(select(Entry).where(Entry.id.in_(ids)))} if ids else {}
    for e in recipe["entries"]:
        r = rows.get(e["id"])
        e["url"] = f"/entries/{e['id']}"
        e["severity"] = r.max_severity if r else None
        e["inflation_ratio"] = r.inflation_ratio if r else None
        e["roofline_ratio"] = (e.get("roofline") or {}).get("ratio")
    return {
        "recipe": recipe,
        "quotable": quotable,
        "headline_entry": top,
        "flags": flags,
        "notes": note_segments(top.get("notes") if top else None, _evidence_quotes(flags)),
        "chart": ladder_chart(recipe["ladder"], quotable.get("steady_state") or (top or {}).get("steady_state"),
                              highlight=top["id"] if top else None),
        "measurements": _measurements_of(session, settings, recipe_id),
        "changes": _recipe_changes(session, settings, recipe_id),
        "roofline": roofline_view((top or {}).get("roofline")),
    }


def _measurements_of(session: Session, settings: Settings, recipe_id: str) -> list[dict]:
    """The recipe's measurements for its page (issue 15): typed in, or made by `caveat measure`."""
    return list_for_recipe(session, recipe_id, settings)


def _recipe_changes(session: Session, settings: Settings, recipe_id: str) -> list[dict]:
    """The recipe's history of change events (issue 17), newest first, with both citations."""
    rows, _ = list_changes(session, settings, recipe_id=recipe_id, limit=20)
    for ev in rows:
        ev["title"] = title(ev)
    return rows
