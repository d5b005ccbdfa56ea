"""Issue 26: the learned reader's proposals are stored; recipes group by a normalised model key.

Adds ``entries.status`` (``read`` for every existing row: the rules read them, or a reviewer added them;
``proposed`` for a figure the learned reader proposes) and ``entries.confidence`` (a proposal's), with the
index the review queue's proposals read in order.

Model keys (issue 26 item 4): adds ``recipes.model_key`` (what `caveat quote NAME` and /api/quotable?model=
look up) and ``recipes.merged_into``, then recomputes every entry's ``recipe_id`` from its current version
with ``app.claims.identity`` as it is now (the recipe's model is the model key: case, separators, the
organisation, a quantization tail and a final -Instruct do not split recipes). Recipes the new keys name
are created; a recipe whose entries all moved to another is kept with ``merged_into`` naming it, so its id
(in a citation, a link, a webhook payload) still resolves; measurements and cited marks of a merged recipe
move with it. Entries and their versions, flags and citations are kept as they are. Stored quotable answers
are cleared, so each is computed again the first time it is read. The downgrade drops the columns; recipe
ids stay recomputed.

Revision ID: 20261207_0012n
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from app.claims.identity import model_key, recipe_id_for, recipe_key

_meta = sa.MetaData()
_entries = sa.Table("entries", _meta, sa.Column("id", sa.Integer), sa.Column("source_id", sa.Integer),
                    sa.Column("recipe_id", sa.String), sa.Column("current_version_id", sa.Integer),
                    sa.Column("status", sa.String))
_versions = sa.Table("entry_versions", _meta, sa.Column("id", sa.Integer), sa.Column("fields", sa.JSON),
                     sa.Column("extra", sa.JSON))
_sources = sa.Table("sources", _meta, sa.Column("id", sa.Integer), sa.Column("key_columns", sa.JSON))
_recipes = sa.Table("recipes", _meta, sa.Column("id", sa.Integer), sa.Column("recipe_id", sa.String),
                    sa.Column("key", sa.JSON), sa.Column("model", sa.Text), sa.Column("hardware", sa.Text),
                    sa.Column("gpu_count", sa.Integer), sa.Column("engine", sa.Text),
                    sa.Column("created_at", sa.DateTime(timezone=True)), sa.Column("model_key", sa.Text),
                    sa.Column("merged_into", sa.String))
_measurements = sa.Table("measurements", _meta, sa.Column("id", sa.Integer), sa.Column("recipe_id", sa.String))
_marks = sa.Table("cited_marks", _meta, sa.Column("id", sa.Integer), sa.Column("how", sa.String),
                  sa.Column("entry_id", sa.Integer), sa.Column("recipe_id", sa.String))


def _int(value):
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _rekey_recipes(bind) -> None:
    key_columns = {sid: list(cols or ()) for sid, cols in bind.execute(sa.select(_sources.c.id, _sources.c.key_columns))}
    rows = bind.execute(
        sa.select(_entries.c.id, _entries.c.source_id, _entries.c.recipe_id, _versions.c.fields, _versions.c.extra)
        .select_from(_entries.outerjoin(_versions, _versions.c.id == _entries.c.current_version_id))
        .where(_entries.c.status == "read")
    ).all()
    known = set(bind.execute(sa.select(_recipes.c.recipe_id)).scalars())
    new_recipes: dict[str, dict] = {}
    moved: dict[str, set] = {}          # old recipe id -> the new ids its entries now have
    stay: dict[str, set] = {}
    for r in rows:
        fields = dict(r.fields or {})
        if not fields:
            continue
        key = recipe_key({**fields, "_extra": r.extra or {}}, key_columns.get(r.source_id))
        rid = recipe_id_for(key) if key else None
        if rid and rid not in known and rid not in new_recipes:
            new_recipes[rid] = {"recipe_id": rid, "key": key, "model": fields.get("model"),
                                "hardware": fields.get("hardware"), "gpu_count": _int(fields.get("gpu_count")),
                                "engine": fields.get("engine"), "created_at": sa.func.now(),
                                "model_key": key.get("model")}
        if r.recipe_id:
            (moved if rid != r.recipe_id else stay).setdefault(r.recipe_id, set()).add(rid)
        if rid != r.recipe_id:
            bind.execute(sa.update(_entries).where(_entries.c.id == r.id).values(recipe_id=rid))
    for row in new_recipes.values():
        bind.execute(sa.insert(_recipes).values(**row))
    for old, targets in moved.items():
        targets = {t for t in targets if t}
        if len(targets) == 1 and old not in stay:      # every entry of the old recipe went to one recipe
            new = targets.pop()
            bind.execute(sa.update(_recipes).where(_recipes.c.recipe_id == old).values(merged_into=new))
            bind.execute(sa.update(_measurements).where(_measurements.c.recipe_id == old).values(recipe_id=new))
            taken = set(bind.execute(sa.select(_marks.c.how).where(_marks.c.recipe_id == new,
                                                                 _marks.c.entry_id.is_(None))).scalars())
            for mark_id, how in bind.execute(sa.select(_marks.c.id, _marks.c.how).where(
                    _marks.c.recipe_id == old, _marks.c.entry_id.is_(None))).all():
                if how not in taken:       # one mark per (how, recipe): the merged one keeps the earliest
                    bind.execute(sa.update(_marks).where(_marks.c.id == mark_id).values(recipe_id=new))
    for rid, name in bind.execute(sa.select(_recipes.c.recipe_id, _recipes.c.model).where(
            _recipes.c.model_key.is_(None))).all():
        if name is not None:
            bind.execute(sa.update(_recipes).where(_recipes.c.recipe_id == rid).values(model_key=model_key(name)))

revision = "20261207_0012n"
down_revision = "20261207_0012s"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("entries") as batch:
        batch.add_column(sa.Column("status", sa.String(16), nullable=False, server_default="read"))
        batch.add_column(sa.Column("confidence", sa.Float(), nullable=True))
    op.create_index("ix_entries_status", "entries", ["status", "gone", "confidence"])
    with op.batch_alter_table("recipes") as batch:
        batch.add_column(sa.Column("model_key", sa.Text(), nullable=True))
        batch.add_column(sa.Column("merged_into", sa.String(40), nullable=True))
    op.create_index("ix_recipes_model_key", "recipes", ["model_key"])
    _rekey_recipes(op.get_bind())
    op.execute("UPDATE recipes SET quotable = NULL, quotable_tps = NULL, basis = NULL")


def downgrade() -> None:
    op.drop_index("ix_recipes_model_key", table_name="recipes")
    with op.batch_alter_table("recipes") as batch:
        batch.drop_column("merged_into")
        batch.drop_column("model_key")
    op.drop_index("ix_entries_status", table_name="entries")
    # an older Caveat has no proposals: they stay, marked gone from their page (their history is kept)
    op.execute(sa.text("UPDATE entries SET gone = :t WHERE status = 'proposed'").bindparams(t=True))
    with op.batch_alter_table("entries") as batch:
        batch.drop_column("confidence")
        batch.drop_column("status")
