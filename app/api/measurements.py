"""Measurements: `POST /api/measurements` (authenticated), `GET /api/measurements`,
`GET /api/measurements/{id}` and `GET /api/recipes/{recipe_id}/measurements`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.api.convention import ok, page
from app.api.schemas import AUTH_ERRORS, ERRORS, MeasurementAnswer, MeasurementList
from app.deps import get_session
from app.models import User
from app.accounts import auth
from app.audit import measurements

router = APIRouter(tags=["measurements"])


class MeasurementIn(BaseModel):
    recipe_id: str
    tps: float
    non_repeating_prompts: bool
    output_checked: bool
    n_runs: int | None = None
    method: str | None = None
    notes: str | None = None
    measured_at: str | None = None


@router.post("/api/measurements", status_code=201, response_model=MeasurementAnswer, responses=AUTH_ERRORS,
             summary="Record a measured throughput for a recipe (authenticated)")
def add_measurement(body: MeasurementIn, request: Request, user: User = Depends(auth.require_writer),
                    session: Session = Depends(get_session)) -> dict:
    auth.require_scope(request, "measure")
    m = measurements.record(session, request.app.state.settings, user, **body.model_dump())
    return ok({"measurement": m})


@router.get("/api/measurements", response_model=MeasurementList, responses=ERRORS,
            summary="Recorded measurements, oldest first")
def list_measurements(request: Request, recipe_id: str | None = Query(None, description="Only this recipe's."),
                      limit: int = Query(100, ge=1, le=measurements.MAX_LIST), offset: int = Query(0, ge=0),
                      session: Session = Depends(get_session)) -> dict:
    rows, total = measurements.list_measurements(session, request.app.state.settings, recipe_id=recipe_id,
                                                 limit=limit, offset=offset)
    return page(request, "measurements", rows, total=total, limit=limit, offset=offset)


@router.get("/api/measurements/{measurement_id}", response_model=MeasurementAnswer, responses=ERRORS,
            summary="One measurement (what a measured quotable answer cites)")
def get_measurement(measurement_id: int, request: Request, session: Session = Depends(get_session)) -> dict:
    m = measurements.get_measurement(session, measurement_id)
    return ok({"measurement": measurements.measurement_json(m, request.app.state.settings)})


@router.get("/api/recipes/{recipe_id}/measurements", response_model=MeasurementList, responses=ERRORS,
            summary="One recipe's measurements, oldest first")
def recipe_measurements(recipe_id: str, request: Request, limit: int = Query(100, ge=1, le=measurements.MAX_LIST),
                        offset: int = Query(0, ge=0), session: Session = Depends(get_session)) -> dict:
    rows, total = measurements.list_measurements(session, request.app.state.settings, recipe_id=recipe_id,
                                                 limit=limit, offset=offset)
    return page(request, "measurements", rows, total=total, limit=limit, offset=offset)
