"""`GET /api/recipes/{recipe_id}`: one recipe's configuration and its draft-width ladder."""

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from app.main import get_session
from app.services.entries import get_recipe

router = APIRouter()


@router.get("/api/recipes/{recipe_id}")
def recipe(recipe_id: str, request: Request, session: Session = Depends(get_session)) -> dict:
    return get_recipe(session, request.app.state.settings, recipe_id)
