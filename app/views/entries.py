"""Entry and recipe pages: ``/entries/{id}`` and ``/recipes/{recipe_id}`` (each with a ``.json`` twin),
and the reviewer's decision form ``POST /entries/{id}/decision`` (signed in, CSRF-checked)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.errors import BadRequest, NotFound
from app.deps import get_session
from app.models import Flag, User
from app.accounts import auth
from app.audit.decisions import decide
from app.pages.view_models import entry_page, recipe_page
from app.review.corrections import readable_rules
from app.views.rendering import redirect, render, split_json

router = APIRouter(include_in_schema=False)


def _entry_id(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise NotFound(f"{raw!r} is not an entry id: entry pages are /entries/<number>, e.g. /entries/1.") from None


@router.get("/entries/{ref}")
def entry_view(ref: str, request: Request, session: Session = Depends(get_session),
               user: User | None = Depends(auth.current_user)):
    raw, as_json = split_json(ref)
    data = entry_page(session, request.app.state.settings, _entry_id(raw))
    return render(request, "entry.html", data, as_json=as_json, user=user,
                  decided=request.query_params.get("decided"), clause_rules=readable_rules() if user else None)


@router.post("/entries/{entry_id}/decision")
async def entry_decision(entry_id: int, request: Request, session: Session = Depends(get_session),
                         user: User = Depends(auth.require_user)):
    form = await request.form()
    auth.check_csrf(request, form.get("csrf_token"))
    try:
        flag_id = int(form.get("flag_id") or "")
    except ValueError:
        raise BadRequest("The form did not say which flag; reload the entry page and use its buttons.") from None
    def record():  # in a worker thread and committed there: a write must never block the event loop
        flag = session.get(Flag, flag_id)
        if flag is None or flag.entry_id != entry_id:
            raise NotFound(f"Entry {entry_id} has no flag {flag_id}; reload the entry page.")
        done = decide(session, user, flag_id, str(form.get("action") or ""), str(form.get("note") or ""),
                      settings=request.app.state.settings)
        session.commit()
        return done

    result = await run_in_threadpool(record)
    return redirect(f"/entries/{entry_id}?decided={result['id']}&flag={flag_id}#decided-{flag_id}")


@router.get("/recipes/{ref}")
def recipe_view(ref: str, request: Request, session: Session = Depends(get_session),
                user: User | None = Depends(auth.current_user)):
    raw, as_json = split_json(ref)
    data = recipe_page(session, request.app.state.settings, raw)
    return render(request, "recipe.html", data, as_json=as_json, user=user)
