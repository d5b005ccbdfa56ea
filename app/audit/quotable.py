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

from datetime import datetime, timezone

from sqlalchemy import String, and_, bindparam, cast, exists, func, or_, select, text
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Entry, Recipe
from app.audit.answer import (  # noqa: F401  (re-exported: quotable.<name> is the public face)
    phase_of, utc_iso, measurement_url, _absolute, _absolute_evidence, _describes, _measurement_used, _recipe_loaded, _stamp, recipe_answer, DESCRIBES, FIELDS, MAX_LIST, NOT_DECODE, _TEST_PHASE,
)
from app.audit.engine import audit_recipes
from app.audit.rules import RULESET_VERSION
from app.claims.identity import model_key, norm_token
from scrapers.fields import PHASES, SCOPES

def _recipe(session: Session, recipe_id: str) -> Recipe:
    recipe = resolve(session, recipe_id)
    if recipe is None:
        raise NotFound(f"No recipe {recipe_id!r}. Recipe ids look like 'r-0123456789ab'; find one with "
                       "`caveat quote MODEL` or GET /api/quotable?model=...")
    return recipe


def resolve(session: Session, recipe_id: str) -> Recipe | None:
    """The recipe ``recipe_id`` names: itself, or the one it was merged into when model keys came
    (``recipes.merged_into``, followed a few steps at most), so an old id in a citation still answers."""
    recipe = session.scalar(select(Recipe).where(Recipe.recipe_id == recipe_id))
    for _ in range(4):
        if recipe is None or not recipe.merged_into:
            break
        recipe = session.scalar(select(Recipe).where(Recipe.recipe_id == recipe.merged_into)) or recipe
    return recipe


def _ensure(session: Session, settings: Settings, recipes: list[Recipe]) -> None:
    missing = [r.recipe_id for r in recipes if r.quotable is None]
    if missing:
        audit_recipes(session, settings, missing)
    for r in recipes:
        if r.quotable is None:  # a recipe with no entries at all
            r.quotable = empty_answer(r)


# A recipe key holds normalised tokens ("40bpw", "peruser"), made to compare, never to show. A stale
# recipe (no entries left, e.g. after a rebuild) is described by its stored names, the fixed
# vocabularies a token maps back to, and numbers; any other field is left unsaid rather than misprinted.
_VOCAB = {"phase": {norm_token(v): v for v in PHASES}, "scope": {norm_token(v): v for v in SCOPES}}
_NUMBERS = ("concurrency",)


def _shown(name: str, value):
    if value is None:
        return None
    if name in _VOCAB:
        return _VOCAB[name].get(str(value))
    if name in _NUMBERS:
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return None


def empty_answer(recipe: Recipe) -> dict:
    key = recipe.key or {}
    described = {name: _shown(name, key.get(name)) for name in DESCRIBES}
    described.update(model=recipe.model, hardware=recipe.hardware, gpu_count=recipe.gpu_count, engine=recipe.engine)
    return {"recipe_id": recipe.recipe_id, **described, "key": key, "quotable_tps": None, "basis": "none",
            "reason": "the recipe has no entries", "headline_tps": None, "inflation_ratio": None,
            "steady_state": None, "measurement": None, "roofline": None, "flags": [], "citations": [],
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
    """One page of answers and the number of matches. ``model`` matches the model key (``model_key``: case,
    separators, the organisation, a quantization tail and a final -Instruct do not matter); ``hardware`` and
    ``engine`` match the whole name, any case (as everywhere in the API); ``q`` matches words anywhere in
    them, or the model key of all its words together (as `caveat quote` does)."""
    if not (model or hardware or engine or (q and q.strip())):
        raise BadRequest("Give at least one of model=, hardware=, engine= (whole names, any case) or q= "
                         "(words anywhere in them), e.g. /api/quotable?q=llama+8b.")
    if limit < 1 or limit > MAX_LIST:
        raise BadRequest(f"limit must be between 1 and {MAX_LIST}.")
    if offset < 0:
        raise BadRequest("offset must be 0 or more.")
    query = select(Recipe).where(_has_entries())
    if model:
        query = query.where(or_(Recipe.model_key == model_key(model), func.lower(Recipe.model) == model.strip().lower()))
    for col, value in ((Recipe.hardware, hardware), (Recipe.engine, engine)):
        if value:
            query = query.where(func.lower(col) == value.strip().lower())
    if q and q.strip():
        query = query.where(_words_or_key(q))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    recipes = list(session.scalars(query.order_by(Recipe.model, Recipe.hardware, Recipe.recipe_id)
                                   .limit(limit).offset(offset)))
    _ensure(session, settings, recipes)
    return [r.quotable for r in recipes], total


def _has_entries():
    """A recipe some entry still belongs to: one left behind when its rows were re-keyed (a rank label
    dropped) is never listed nor counted."""
    return exists().where(Entry.recipe_id == Recipe.recipe_id)


def _haystack():
    return func.lower(func.coalesce(Recipe.model, "") + " " + func.coalesce(Recipe.hardware, "") + " "
                      + func.coalesce(cast(Recipe.gpu_count, String), "") + " " + func.coalesce(Recipe.engine, "")
                      + " " + func.coalesce(Recipe.model_key, ""))


def _words_or_key(query: str):
    """Every word in the model, hardware, GPU count, engine or model key; or the whole query's model key is
    the recipe's (``qwen3 30B.A3B`` finds ``Qwen3-30B-A3B``)."""
    words = [_haystack().contains(w, autoescape=True) for w in query.lower().split()]
    key = model_key(query)
    return or_(and_(*words), Recipe.model_key == key) if key else and_(*words)


def find(session: Session, settings: Settings, query: str, limit: int = 20) -> list[tuple[Recipe, dict]]:
    """Recipes for a CLI query: a recipe id, or words that all occur in model, hardware, GPU count or engine."""
    query = (query or "").strip()
    if not query:
        raise BadRequest("Give a recipe id (r-...) or words from the model, hardware or engine name.")
    if query.startswith("r-") and " " not in query:
        recipe = _recipe(session, query)
        return [(recipe, get_quotable(session, settings, recipe.recipe_id))]
    q = select(Recipe).where(_has_entries(), _words_or_key(query))
    recipes = list(session.scalars(q.order_by(Recipe.model, Recipe.recipe_id).limit(limit)))
    if not recipes:
        raise NotFound(f"No recipe matches {query!r}. Try fewer words, e.g. just the model name.")
    _ensure(session, settings, recipes)
    return [(r, r.quotable) for r in recipes]
