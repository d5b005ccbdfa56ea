"""Quotable answers describe themselves: cached answers are rebuilt in the new shape

The answer cached in ``recipes.quotable`` gains what it describes (model, hardware, engine, phase,
scope, test, key...), ``measurement``, ``ruleset_version`` and ``computed_at``, and its ``citations``
items become ``{label, value, citation}`` (``url`` is kept for archived addresses only). Old cached
answers are cleared here; each is rebuilt by the audit on its next read (or by `caveat audit --all`).
``quotable_tps`` and ``basis`` are kept, so listings and sorting are unaffected meanwhile.

Revision ID: 20261201_0008
Revises: 20261201_0007
Create Date: 2026-12-01 11:40:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0008"
down_revision = "20261201_0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().execute(sa.text("UPDATE recipes SET quotable = NULL"))


def downgrade() -> None:
    op.get_bind().execute(sa.text("UPDATE recipes SET quotable = NULL"))  # rebuilt in the old shape on read
