"""The quotable answer of one recipe, built from an audit's loaded entries and their flags (``recipe_answer``),
and the citation links it and the flags carry. The lowest part of the audit: the engine (``engine``)
builds answers with it; reads of the cached answers are in ``quotable``."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import object_session

from app.audit.roofline import bound_for
from app.audit.rules import RULESET_VERSION, SEVERITY_RANK
from app.claims.identity import recipe_key
from app.config import Settings
from app.models import Flag, Measurement, Recipe
from app.replay import citations


def cite_ref(citation_id: str | None, text: str | None, selector: dict | None = None) -> str | None:
    """Host-free reference (``/c/ID?q=...&prefix=...&suffix=...&pos=...``) to ``text`` in snapshot
    ``citation_id``, pinned by the parser's ``selector`` when it has one; the snapshot itself without
    text. This is what rows store: URLs are built from it when served (``citations.absolute``)."""
    if not citation_id:
        return None
    if not text:
        return citations.quote_ref(citation_id)
    return citations.selector_ref(citation_id, text, selector)


def cite(settings: Settings, citation_id: str | None, text: str | None, selector: dict | None = None) -> str | None:
    """Citation URL of ``text`` in snapshot ``citation_id``; the snapshot itself without text."""
    return citations.absolute(settings, cite_ref(citation_id, text, selector))


def standing(flags: list[Flag]) -> list[Flag]:
    """Flags that count: raised by the latest audit and not dismissed by a reviewer."""
    return [f for f in flags if f.active and f.status != "dismissed"]


DESCRIBES = ("model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase", "scope",
             "concurrency", "test")
FIELDS = ("recipe_id",) + DESCRIBES + (
    "key", "quotable_tps", "basis", "reason", "headline_tps", "inflation_ratio", "steady_state", "measurement",
    "roofline", "flags", "citations", "ruleset_version", "computed_at")
NEAR_BOUND = 0.8    # the answer carries the roofline when the quotable figure is above this share of the bound
MAX_LIST = 200
NOT_DECODE = ("prefill", "e2e")
# llama-bench names its tests by phase: pp512 is prompt processing, tg128 text generation, pp512+tg128
# (or pg) both at once.
_TEST_PHASE = ((re.compile(r"^\s*(pp\s*\d+\s*\+\s*tg\s*\d+|pg\s*\d*)", re.I), "e2e"),
               (re.compile(r"^\s*pp\s*\d+\b", re.I), "prefill"), (re.compile(r"^\s*tg\s*\d+\b", re.I), "decode"))


def phase_of(fields: dict) -> str | None:
    """The figure's phase as the page states it, or as its llama-bench test name says; None if neither."""
    stated = fields.get("phase")
    if isinstance(stated, str) and stated.strip():
        return stated.strip().lower()
    test = fields.get("test")
    if isinstance(test, str):
        for pattern, phase in _TEST_PHASE:
            if pattern.match(test):
                return phase
    return None


def utc_iso(when: datetime | None) -> str | None:
    """ISO 8601 in UTC with its offset (SQLite hands back naive datetimes; they are UTC)."""
    if when is None:
        return None
    when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
    return when.isoformat()


def measurement_url(settings: Settings, measurement_id: int) -> str:
    return citations.absolute(settings, f"/api/measurements/{measurement_id}")


def _absolute(settings: Settings, ref):
    """A stored citation made a full URL: host-free references (``/c/...``) get the base URL."""
    if isinstance(ref, str) and ref.startswith("/") and not ref.startswith("//"):
        return citations.absolute(settings, ref)
    return ref


def _absolute_evidence(settings: Settings, evidence):
    if not isinstance(evidence, dict) or not isinstance(evidence.get("quotes"), list):
        return evidence
    quotes = [dict(q, citation=_absolute(settings, q.get("citation"))) if isinstance(q, dict) else q
              for q in evidence["quotes"]]
    return {**evidence, "quotes": quotes}


def _describes(top, phase: str | None) -> dict:
    fields = top.fields if top is not None else {}
    entry = top.entry if top is not None else None
    out = {}
    for name in DESCRIBES:
        value = fields.get(name)
        if value is None and entry is not None and hasattr(entry, name):
            value = getattr(entry, name)
        out[name] = value
    out["phase"] = phase
    return out


def _measurement_used(group, recipe_id: str, tps: float | None) -> Measurement | None:
    """The measurement the ``measured`` basis rests on: the recipe's lowest one that counts."""
    session = object_session(group[0].entry) if group else None
    if session is None:
        return None
    q = (select(Measurement).where(Measurement.recipe_id == recipe_id, Measurement.non_repeating_prompts.is_(True),
                                   Measurement.output_checked.is_(True), Measurement.verified.is_(True))
         .order_by(Measurement.tps, Measurement.id).limit(1))
    return session.scalar(q)


def _recipe_loaded(group, recipe_id: str) -> Recipe | None:
    """The recipe row the audit loaded into this session just before building its answer."""
    session = object_session(group[0].entry) if group else None
    if session is None:
        return None
    index = session.info.get("caveat_recipes_by_id")
    recipe = index.get(recipe_id) if index else None
    if recipe is None or recipe not in session:
        index = {o.recipe_id: o for o in list(session.identity_map.values()) if isinstance(o, Recipe)}
        session.info["caveat_recipes_by_id"] = index
        recipe = index.get(recipe_id)
    return recipe


def _stamp(answer: dict, previous: dict | None) -> dict:
    """``computed_at``: now, unless the recipe already holds this very answer (then its time is kept, so a
    re-audit that changes nothing changes neither the cache nor its ETag)."""
    if isinstance(previous, dict) and previous.get("computed_at"):
        same = {k: v for k, v in previous.items() if k != "computed_at"} == answer
        if same:
            return {**answer, "computed_at": previous["computed_at"]}
    return {**answer, "computed_at": utc_iso(datetime.now(timezone.utc))}


def recipe_answer(settings: Settings, recipe_id: str, group, flags_by_entry: dict, working) -> dict:
    """Build the cached JSON from an audit's loaded entries (``audit.Loaded``) and their flags."""
    def tps(item):
        v = item.fields.get("headline_tps")
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else float("-inf")

    top = max(group, key=tps) if group else None
    flags = []
    if top is not None:
        for f in sorted(standing(flags_by_entry.get(top.entry.id, [])),
                        key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.rule)):
            flags.append({"rule": f.rule, "severity": f.severity, "explanation": f.explanation,
                          "evidence": _absolute_evidence(settings, f.evidence), "citation": _absolute(settings, f.citation)})
    citations: list[dict] = []

    def add(label: str, value, url: str | None) -> None:
        if url and all(c["citation"] != url or c["label"] != label for c in citations):
            citations.append({"label": label, "value": value, "citation": url})

    quotable_tps, basis, reason = working.tps, working.basis, working.reason
    unreviewed_tps = None
    if basis == "unreviewed":   # shown, never quoted: the notes hold clauses nobody has read yet
        quotable_tps, unreviewed_tps = None, working.tps
    phases = {phase_of(i.fields) for i in group}
    phase = phases.pop() if len(phases) == 1 else None
    if basis != "none" and group and all(phase_of(i.fields) in NOT_DECODE for i in group):
        what = " and ".join(sorted({phase_of(i.fields) for i in group}))
        quotable_tps, basis = None, "none"
        reason = f"a {what} figure (test {top.fields.get('test') or '?'}): only decode figures can be quoted as a decode speed"
    steady = None
    if working.steady_state is not None:
        src = next((i for i in group if i.entry.id == working.steady_state["entry_id"]), None)
        quote = (src.quotes.get("steady_low") or src.quotes.get("steady_high")) if src else None
        url = cite(settings, src.citation_id, quote) if src else None
        steady = {"low": working.steady_state["low"], "high": working.steady_state["high"], "citation": url}
        add("steady state", working.steady_state["low"], url)
    measurement = None
    if basis == "measured":
        m = _measurement_used(group, recipe_id, quotable_tps)
        if m is not None:
            measurement = reference(m, settings)  # a `caveat measure` run adds engine, endpoint, /c/ citation
            add("measurement", m.tps, measurement["citation"])
    if top is not None:
        add("headline", top.fields.get("headline_tps"), cite(settings, top.citation_id, top.quotes.get("headline_tps")))
        add("notes", None, cite(settings, top.citation_id, top.quotes.get("notes")))
        add("snapshot", None, cite(settings, top.citation_id, None))
    for f in flags:
        add(f["rule"], None, f["citation"])
    roofline = near_bound(top.fields, quotable_tps) if top is not None else None
    recipe = _recipe_loaded(group, recipe_id)
    key = recipe.key if recipe is not None and recipe.key else (recipe_key(top.fields) if top is not None else None)
    answer = {"recipe_id": recipe_id, **_describes(top, phase), "key": key,
              "quotable_tps": quotable_tps, "basis": basis, "reason": reason, "unreviewed_tps": unreviewed_tps,
              "headline_tps": working.headline_tps,
              "inflation_ratio": working.inflation_ratio if quotable_tps is not None else None,
              "steady_state": steady, "measurement": measurement, "roofline": roofline, "flags": flags,
              "citations": citations, "ruleset_version": RULESET_VERSION}
    return _stamp(answer, recipe.quotable if recipe is not None else None)


def near_bound(fields: dict, quotable_tps: float | None) -> dict | None:
    """The memory-bandwidth bound of the recipe's setup when the quotable figure is above ``NEAR_BOUND`` of
    it (a plain per-user decode speed that close to the physical ceiling is worth a second look); else None."""
    if quotable_tps is None:
        return None
    r = bound_for(fields)
    ratio = r.ratio(quotable_tps)
    if ratio is None or ratio <= NEAR_BOUND:
        return None
    return {"bound_tps": round(r.bound_tps, 1), "ratio": round(ratio, 3), "inputs": r.inputs_copy(),
            "assumptions": list(r.assumptions), "missing": list(r.missing), "version": r.version}


def evidence_url(settings: Settings | None, m: Measurement) -> str | None:
    """The citation page of a measurement Caveat made itself (``/c/{id}``); None for a typed-in one."""
    if not m.citation_id:
        return None
    return citations.absolute(settings, f"/c/{m.citation_id}") if settings is not None else f"/c/{m.citation_id}"


def reference(m: Measurement, settings: Settings) -> dict:
    """What a quotable answer says about the measurement it rests on."""
    ref = {"id": m.id, "tps": m.tps, "measured_at": utc_iso(m.measured_at), "n_runs": m.n_runs,
           "method": m.method, "citation": measurement_url(settings, m.id)}
    if m.origin == "measure":
        ref.update({"citation": evidence_url(settings, m), "citation_id": m.citation_id, "api_url": ref["citation"],
                    "engine": m.engine, "endpoint": m.endpoint, "model": m.model})
    return ref
