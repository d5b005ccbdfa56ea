"""Issue 29 item 1: a rank, ``#`` or position is never part of a row's identity; sources may name key columns.

Adds ``sources.key_columns`` (``caveat source add --key COL``) and recomputes, from each entry's current
version, its ``entry_key`` and ``recipe_id`` with ``app.claims.identity`` as it is now: a label that is
only a rank number no longer splits entries or recipes. Entries of one source that now share an identity
are numbered again (entries still on the page first, in their former order, then gone ones). Recipes the
new keys name are created; the ones left without entries are kept (a citation may name them) but are
never listed nor counted (``app.audit.quotable``). Stored quotable answers are cleared, so each is
computed again the first time it is read. The downgrade drops the column; keys stay recomputed.

Revision ID: 20261203_0011k
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from app.claims.identity import identity_of, recipe_id_for, recipe_key

revision = "20261203_0011k"
down_revision = "20261203_0011c"
branch_labels = None
depends_on = None

_meta = sa.MetaData()
_entries = sa.Table("entries", _meta, sa.Column("id", sa.Integer), sa.Column("source_id", sa.Integer),
                    sa.Column("entry_key", sa.String), sa.Column("recipe_id", sa.String),
                    sa.Column("current_version_id", sa.Integer), sa.Column("gone", sa.Boolean))
_versions = sa.Table("entry_versions", _meta, sa.Column("id", sa.Integer), sa.Column("fields", sa.JSON),
                     sa.Column("extra", sa.JSON))
_recipes = sa.Table("recipes", _meta, sa.Column("recipe_id", sa.String), sa.Column("key", sa.JSON),
                    sa.Column("model", sa.Text), sa.Column("hardware", sa.Text), sa.Column("gpu_count", sa.Integer),
                    sa.Column("engine", sa.Text), sa.Column("created_at", sa.DateTime(timezone=True)))


def _int(value):
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def upgrade() -> None:
    op.add_column("sources", sa.Column("key_columns", sa.JSON(), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(_entries.c.id, _entries.c.source_id, _entries.c.entry_key, _entries.c.recipe_id,
                  _entries.c.gone, _versions.c.fields, _versions.c.extra)
        .select_from(_entries.outerjoin(_versions, _versions.c.id == _entries.c.current_version_id))
    ).all()
    known = set(bind.execute(sa.select(_recipes.c.recipe_id)).scalars())
    groups: dict[tuple, list] = {}
    new_recipes: dict[str, dict] = {}
    recipe_of: dict[int, str | None] = {}
    for r in rows:
        fields = dict(r.fields or {})
        if not fields:
            continue
        full = {**fields, "_extra": r.extra or {}}
        ident = identity_of(full)[:32]
        old_ordinal = _int(str(r.entry_key).rpartition(":")[2]) or 0
        groups.setdefault((r.source_id, ident), []).append((bool(r.gone), old_ordinal, r.id, r.entry_key))
        key = recipe_key(full)
        rid = recipe_id_for(key) if key else None
        recipe_of[r.id] = rid
        if rid and rid not in known and rid not in new_recipes:
            new_recipes[rid] = {"recipe_id": rid, "key": key, "model": fields.get("model"),
                                "hardware": fields.get("hardware"), "gpu_count": _int(fields.get("gpu_count")),
                                "engine": fields.get("engine"), "created_at": sa.func.now()}
    for row in new_recipes.values():
        bind.execute(sa.insert(_recipes).values(**row))
    moves = []
    for (_source, ident), members in groups.items():
        for n, (_gone, _o, eid, old) in enumerate(sorted(members)):
            new = f"{ident}:{n}"
            if new != old:
                moves.append((eid, new))
    # two steps, so no key is ever held twice within a source (uq_entries_source_key)
    for eid, _new in moves:
        bind.execute(sa.update(_entries).where(_entries.c.id == eid).values(entry_key=f"moving:{eid}"))
    for eid, new in moves:
        bind.execute(sa.update(_entries).where(_entries.c.id == eid).values(entry_key=new))
    for r in rows:
        if r.id in recipe_of and recipe_of[r.id] != r.recipe_id:
            bind.execute(sa.update(_entries).where(_entries.c.id == r.id).values(recipe_id=recipe_of[r.id]))
    op.execute("UPDATE recipes SET quotable = NULL, quotable_tps = NULL, basis = NULL")


def downgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.drop_column("key_columns")
