"""`GET /api/health`: the service is up and its database is migrated."""

from fastapi import APIRouter, Depends
from sqlalchemy import text
from sqlalchemy.orm import Session

from app import __version__
from app.api.schemas import Health
from app.deps import get_session

router = APIRouter(tags=["service"])


@router.get("/api/health", response_model=Health, summary="The service is up")
def health(session: Session = Depends(get_session)) -> dict:
    session.execute(text("SELECT 1"))
    return {"ok": True, "version": __version__}
