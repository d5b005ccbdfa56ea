"""The quotable answer for a recipe: the number a reader may quote, why, what it describes, and what is
wrong with the headline, each number cited to the archived text (or to the measurement it rests on).

The answer is built by the audit (``recipe_answer``) and cached in ``recipes.quotable``; reads serve
that cache (``quotable_raw`` returns the stored JSON text as it is, for the fast API route).

Fields (a public contract, docs/api.md): ``recipe_id``; what it describes: ``model``, ``hardware``,
``gpu_count``, ``engine``, ``engine_version``, ``quantization``, ``phase``, ``scope``, ``concurrency``,
``test``, ``key`` (the recipe's configuration key); the number: ``quotable_tps``, ``basis``, ``reason``,
``headline_tps``, ``inflation_ratio``, ``steady_state``, ``measurement``; ``flags`` (``rule``,
``severity``, ``explanation``, ``evidence``, ``citation``); ``citations`` (``label``, ``value``,
``citation``: every number used, and the snapshot); ``ruleset_version``, ``computed_at``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from sqlalchemy import String, bindparam, cast, func, or_, select, text
from sqlalchemy.orm import Session, object_session

from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Measurement, Recipe
from app.audit.rules import RULESET_VERSION, SEVERITY_RANK

DESCRIBES = ("model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase", "scope",
             "concurrency", "test")
FIELDS = ("recipe_id",) + DESCRIBES + (
    "key", "quotable_tps", "basis", "reason", "headline_tps", "inflation_ratio", "steady_state", "measurement",
    "flags", "citations", "ruleset_version", "computed_at")
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
    return f"{settings.base_url}/api/measurements/{measurement_id}"


def _absolute(settings: Settings, ref):
    """A stored citation made a full URL: host-free references (``/c/...``) get the base URL."""
    if isinstance(ref, str) and ref.startswith("/") and not ref.startswith("//"):
        return f"{settings.base_url}{ref}"
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
                                   Measurement.output_checked.is_(True))
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
    from app.audit.engine import cite, standing
    from app.claims.identity import recipe_key

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
            from app.audit.measurements import reference

            measurement = reference(m, settings)  # a `caveat measure` run adds engine, endpoint, /c/ citation
            add("measurement", m.tps, measurement["citation"])
    if top is not None:
        add("headline", top.fields.get("headline_tps"), cite(settings, top.citation_id, top.quotes.get("headline_tps")))
        add("notes", None, cite(settings, top.citation_id, top.quotes.get("notes")))
        add("snapshot", None, cite(settings, top.citation_id, None))
    for f in flags:
        add(f["rule"], None, f["citation"])
    recipe = _recipe_loaded(group, recipe_id)
    key = recipe.key if recipe is not None and recipe.key else (recipe_key(top.fields) if top is not None else None)
    answer = {"recipe_id": recipe_id, **_describes(top, phase), "key": key,
              "quotable_tps": quotable_tps, "basis": basis, "reason": reason,
              "headline_tps": working.headline_tps,
              "inflation_ratio": working.inflation_ratio if quotable_tps is not None else None,
              "steady_state": steady, "measurement": measurement, "flags": flags, "citations": citations,
              "ruleset_version": RULESET_VERSION}
    return _stamp(answer, recipe.quotable if recipe is not None else None)


def _recipe(session: Session, recipe_id: str) -> Recipe:
    recipe = session.scalar(select(Recipe).where(Recipe.recipe_id == recipe_id))
    if recipe is None:
        raise NotFound(f"No recipe {recipe_id!r}. Recipe ids look like 'r-0123456789ab'; find one with "
                       "`caveat quote MODEL` or GET /api/quotable?model=...")
    return recipe


def _ensure(session: Session, settings: Settings, recipes: list[Recipe]) -> None:
    missing = [r.recipe_id for r in recipes if r.quotable is None]
    if missing:
        from app.audit.engine import audit_recipes

        audit_recipes(session, settings, missing)
    for r in recipes:
        if r.quotable is None:  # a recipe with no entries at all
            r.quotable = empty_answer(r)


def empty_answer(recipe: Recipe) -> dict:
    key = recipe.key or {}
    described = {name: key.get(name) for name in DESCRIBES}
    described.update(model=recipe.model, hardware=recipe.hardware, gpu_count=recipe.gpu_count, engine=recipe.engine)
    return {"recipe_id": recipe.recipe_id, **described, "key": key, "quotable_tps": None, "basis": "none",
            "reason": "the recipe has no entries", "headline_tps": None, "inflation_ratio": None,
            "steady_state": None, "measurement": None, "flags": [], "citations": [],
            "ruleset_version": RULESET_VERSION, "computed_at": utc_iso(datetime.now(timezone.utc))}


def get_quotable(session: Session, settings: Settings, recipe_id: str) -> dict:
    recipe = _recipe(session, recipe_id)
    _ensure(session, settings, [recipe])
    return recipe.quotable


_RAW = text("SELECT CAST(quotable AS TEXT) FROM recipes WHERE recipe_id = :rid")


def quotable_raw(connection, recipe_id: str) -> str | None:
    """The cached JSON text for ``recipe_id`` as stored (no parse, no re-serialise), or None."""
    row = connection.execute(_RAW, {"rid": recipe_id}).first()
    return row[0] if row and row[0] not in (None, "null") else None


def quotable_raw_many(connection, recipe_ids: list[str]) -> dict[str, str]:
    """The cached JSON texts of several recipes in one query (the fast path reads a batch at a time)."""
    if len(recipe_ids) == 1:
        raw = quotable_raw(connection, recipe_ids[0])
        return {recipe_ids[0]: raw} if raw is not None else {}
    rows = connection.execute(_RAW_MANY, {"rids": list(recipe_ids)})
    return {rid: raw for rid, raw in rows if raw not in (None, "null")}


_RAW_MANY = text("SELECT recipe_id, CAST(quotable AS TEXT) FROM recipes WHERE recipe_id IN :rids").bindparams(
    bindparam("rids", expanding=True))


def list_quotable(session: Session, settings: Settings, *, model: str | None = None, hardware: str | None = None,
                  engine: str | None = None, q: str | None = None, limit: int = MAX_LIST,
                  offset: int = 0) -> tuple[list[dict], int]:
    """One page of answers and the number of matches. ``model``, ``hardware`` and ``engine`` match the
    whole name, any case (as everywhere in the API); ``q`` matches words anywhere in them (as
    `caveat quote` does)."""
    if not (model or hardware or engine or (q and q.strip())):
        raise BadRequest("Give at least one of model=, hardware=, engine= (whole names, any case) or q= "
                         "(words anywhere in them), e.g. /api/quotable?q=llama+8b.")
    if limit < 1 or limit > MAX_LIST:
        raise BadRequest(f"limit must be between 1 and {MAX_LIST}.")
    if offset < 0:
        raise BadRequest("offset must be 0 or more.")
    query = select(Recipe)
    for col, value in ((Recipe.model, model), (Recipe.hardware, hardware), (Recipe.engine, engine)):
        if value:
            query = query.where(func.lower(col) == value.strip().lower())
    for word in (q or "").lower().split():
        query = query.where(_haystack().contains(word, autoescape=True))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    recipes = list(session.scalars(query.order_by(Recipe.model, Recipe.hardware, Recipe.recipe_id)
                                   .limit(limit).offset(offset)))
    _ensure(session, settings, recipes)
    return [r.quotable for r in recipes], total


def _haystack():
    return func.lower(func.coalesce(Recipe.model, "") + " " + func.coalesce(Recipe.hardware, "") + " "
                      + func.coalesce(cast(Recipe.gpu_count, String), "") + " " + func.coalesce(Recipe.engine, ""))


def find(session: Session, settings: Settings, query: str, limit: int = 20) -> list[tuple[Recipe, dict]]:
    """Recipes for a CLI query: a recipe id, or words that all occur in model, hardware, GPU count or engine."""
    query = (query or "").strip()
    if not query:
        raise BadRequest("Give a recipe id (r-...) or words from the model, hardware or engine name.")
    if query.startswith("r-") and " " not in query:
        recipe = _recipe(session, query)
        return [(recipe, get_quotable(session, settings, recipe.recipe_id))]
    hay = _haystack()
    q = select(Recipe)
    for word in query.lower().split():
        q = q.where(or_(hay.contains(word, autoescape=True)))
    recipes = list(session.scalars(q.order_by(Recipe.model, Recipe.recipe_id).limit(limit)))
    if not recipes:
        raise NotFound(f"No recipe matches {query!r}. Try fewer words, e.g. just the model name.")
    _ensure(session, settings, recipes)
    return [(r, r.quotable) for r in recipes]
