"""Issue 29 item 8: every basis (measured, steady_state, headline, unreviewed, none) on every page that
shows one (entry, recipe, queue): only a basis that may be quoted is drawn in the success green;
``none`` is a warning, ``unreviewed`` is shown but never green."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from app.audit.engine import audit_entries
from app.audit.queue import clear_cache
from app.models import Entry, Recipe
from tests.audit_data import glm_entries, store

QUOTABLE = ("measured", "steady_state", "headline")
WORKING = {"measured": 400.0, "steady_state": 373.0, "headline": 1004.9, "unreviewed": 1004.9, "none": None}


@pytest.fixture
def top(app, settings):
    clear_cache()
    with app.state.db.session() as s:
        _, _, summary = store(s, glm_entries())
        audit_entries(s, settings, summary.entry_ids)
        e = s.query(Entry).filter(Entry.headline_tps == 1004.9).one()
        return e.id, e.recipe_id


def _force(db, entry_id: int, recipe_id: str, basis: str) -> None:
    """Store the audit's outcome for ``basis`` as the audit would (entry working number, recipe answer)."""
    tps = WORKING[basis]
    quotable = None if basis in ("none", "unreviewed") else tps
    with db.session() as s:
        e = s.get(Entry, entry_id)
        e.basis, e.working_tps = basis, tps
        r = s.scalar(select(Recipe).where(Recipe.recipe_id == recipe_id))
        answer = dict(r.quotable or {})
        answer.update(basis=basis, quotable_tps=quotable, unreviewed_tps=tps if basis == "unreviewed" else None)
        r.quotable, r.basis, r.quotable_tps = answer, basis, quotable
    clear_cache()


def _figure(html: str):
    page = BeautifulSoup(html, "html.parser")
    return page.select_one(".working-figure"), page


@pytest.mark.parametrize("basis", ["measured", "steady_state", "headline", "unreviewed", "none"])
def test_every_basis_on_entry_recipe_and_queue(client, top, basis):
    entry_id, recipe_id = top
    _force(client.app.state.db, entry_id, recipe_id, basis)
    green = basis in QUOTABLE
    for path in (f"/entries/{entry_id}", f"/recipes/{recipe_id}"):
        fig, page = _figure(client.get(path).text)
        assert fig["data-basis"] == basis, path
        classes = set(fig["class"])
        assert ("working-ok" in classes) is green, (path, classes)
        if basis == "none":
            assert "working-none" in classes and fig.select_one("#working-tps").get_text() == "none", path
        if basis == "unreviewed":
            assert "working-unreviewed" in classes, path
            assert fig.select_one("#working-tps").get_text() == "1,004.9" and "not quotable" in fig.get_text(), path
        badge = page.select_one("#basis")
        assert badge.get_text() == f"basis: {basis}" and f"basis-{basis}" in badge["class"], path
    queue = BeautifulSoup(client.get("/queue").text, "html.parser")
    row = [tr for tr in queue.select("tr") if tr.select_one(f'a[href="/entries/{entry_id}"]')][0]
    mark = row.select_one("td.working .basis")
    assert mark.get_text() == basis and f"basis-{basis}" in mark["class"]
