"""`GET /api/recipes/{recipe_id}`: one recipe's configuration and its draft-width ladder."""

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from app.api.convention import ok
from app.api.schemas import ERRORS, RecipeDetail
from app.deps import get_session
from app.pages.entries import get_recipe

router = APIRouter(tags=["recipes"])


@router.get("/api/recipes/{recipe_id}", response_model=RecipeDetail, responses=ERRORS,
            summary="One recipe: configuration, quotable answer and ladder")
def recipe(recipe_id: str, request: Request, session: Session = Depends(get_session)) -> dict:
    return ok(get_recipe(session, request.app.state.settings, recipe_id))
