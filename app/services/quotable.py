"""The quotable answer for a recipe: the number a reader may quote, why, and what is wrong with the
headline, each caveat cited to the archived text.

The answer is built by the audit (``recipe_answer``) and cached in ``recipes.quotable``; reads serve
that cache (``quotable_raw`` returns the stored JSON text as it is, for the fast API route).

Fields (a public contract): ``recipe_id``, ``quotable_tps``, ``basis``, ``reason``, ``headline_tps``,
``inflation_ratio``, ``steady_state``, ``flags`` (``rule``, ``severity``, ``explanation``, ``evidence``,
``citation``) and ``citations``.
"""

from __future__ import annotations

from sqlalchemy import String, cast, func, or_, select, text
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Recipe
from app.services.rules import SEVERITY_RANK

FIELDS = ("recipe_id", "quotable_tps", "basis", "reason", "headline_tps", "inflation_ratio", "steady_state",
          "flags", "citations")
MAX_LIST = 200


def recipe_answer(settings: Settings, recipe_id: str, group, flags_by_entry: dict, working) -> dict:
    """Build the cached JSON from an audit's loaded entries (``audit.Loaded``) and their flags."""
    from app.services.audit import cite, standing

    def tps(item):
        v = item.fields.get("headline_tps")
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else float("-inf")

    top = max(group, key=tps) if group else None
    flags = []
    if top is not None:
        for f in sorted(standing(flags_by_entry.get(top.entry.id, [])),
                        key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.rule)):
            flags.append({"rule": f.rule, "severity": f.severity, "explanation": f.explanation,
                          "evidence": f.evidence, "citation": f.citation})
    citations: list[dict] = []

    def add(label: str, url: str | None) -> None:
        if url and all(c["url"] != url for c in citations):
            citations.append({"label": label, "url": url})

    steady = None
    if working.steady_state is not None:
        src = next((i for i in group if i.entry.id == working.steady_state["entry_id"]), None)
        quote = (src.quotes.get("steady_low") or src.quotes.get("steady_high")) if src else None
        url = cite(settings, src.citation_id, quote) if src else None
        steady = {"low": working.steady_state["low"], "high": working.steady_state["high"], "citation": url}
        add("steady state", url)
    if top is not None:
        add("headline", cite(settings, top.citation_id, top.quotes.get("headline_tps")))
        add("notes", cite(settings, top.citation_id, top.quotes.get("notes")))
        add("snapshot", cite(settings, top.citation_id, None))
    for f in flags:
        add(f["rule"], f["citation"])
    return {"recipe_id": recipe_id, "quotable_tps": working.tps, "basis": working.basis, "reason": working.reason,
            "headline_tps": working.headline_tps, "inflation_ratio": working.inflation_ratio,
            "steady_state": steady, "flags": flags, "citations": citations}


def _recipe(session: Session, recipe_id: str) -> Recipe:
    recipe = session.scalar(select(Recipe).where(Recipe.recipe_id == recipe_id))
    if recipe is None:
        raise NotFound(f"No recipe {recipe_id!r}. Recipe ids look like 'r-0123456789ab'; find one with "
                       "`caveat quote MODEL` or GET /api/quotable?model=...")
    return recipe


def _ensure(session: Session, settings: Settings, recipes: list[Recipe]) -> None:
    missing = [r.recipe_id for r in recipes if r.quotable is None]
    if missing:
        from app.services.audit import audit_recipes

        audit_recipes(session, settings, missing)
    for r in recipes:
        if r.quotable is None:  # a recipe with no entries at all
            r.quotable = {"recipe_id": r.recipe_id, "quotable_tps": None, "basis": "none",
                          "reason": "the recipe has no entries", "headline_tps": None, "inflation_ratio": None,
                          "steady_state": None, "flags": [], "citations": []}


def get_quotable(session: Session, settings: Settings, recipe_id: str) -> dict:
    recipe = _recipe(session, recipe_id)
    _ensure(session, settings, [recipe])
    return recipe.quotable


_RAW = text("SELECT CAST(quotable AS TEXT) FROM recipes WHERE recipe_id = :rid")


def quotable_raw(connection, recipe_id: str) -> str | None:
    """The cached JSON text for ``recipe_id`` as stored (no parse, no re-serialise), or None."""
    row = connection.execute(_RAW, {"rid": recipe_id}).first()
    return row[0] if row and row[0] not in (None, "null") else None


def list_quotable(session: Session, settings: Settings, *, model: str | None = None, hardware: str | None = None,
                  engine: str | None = None, limit: int = MAX_LIST) -> list[dict]:
    if not (model or hardware or engine):
        raise BadRequest("Give at least one of model=, hardware= or engine= (parts of names match, any case).")
    if limit < 1 or limit > MAX_LIST:
        raise BadRequest(f"limit must be between 1 and {MAX_LIST}.")
    q = select(Recipe)
    for col, value in ((Recipe.model, model), (Recipe.hardware, hardware), (Recipe.engine, engine)):
        if value:
            q = q.where(func.lower(col).contains(value.strip().lower(), autoescape=True))
    recipes = list(session.scalars(q.order_by(Recipe.model, Recipe.hardware, Recipe.recipe_id).limit(limit)))
    _ensure(session, settings, recipes)
    return [r.quotable for r in recipes]


def find(session: Session, settings: Settings, query: str, limit: int = 20) -> list[tuple[Recipe, dict]]:
    """Recipes for a CLI query: a recipe id, or words that all occur in model, hardware, GPU count or engine."""
    query = (query or "").strip()
    if not query:
        raise BadRequest("Give a recipe id (r-...) or words from the model, hardware or engine name.")
    if query.startswith("r-") and " " not in query:
        recipe = _recipe(session, query)
        return [(recipe, get_quotable(session, settings, recipe.recipe_id))]
    hay = func.lower(func.coalesce(Recipe.model, "") + " " + func.coalesce(Recipe.hardware, "") + " "
                     + func.coalesce(cast(Recipe.gpu_count, String), "") + " " + func.coalesce(Recipe.engine, ""))
    q = select(Recipe)
    for word in query.lower().split():
        q = q.where(or_(hay.contains(word, autoescape=True)))
    recipes = list(session.scalars(q.order_by(Recipe.model, Recipe.recipe_id).limit(limit)))
    if not recipes:
        raise NotFound(f"No recipe matches {query!r}. Try fewer words, e.g. just the model name.")
    _ensure(session, settings, recipes)
    return [(r, r.quotable) for r in recipes]
