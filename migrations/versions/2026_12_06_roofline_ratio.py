"""Ruleset 2026.12.6 (issue 28): decode figures against the memory-bandwidth bound.

Adds ``entries.roofline_ratio`` (a per-user decode figure over its bound, filled by the audit) with the
queue's index for sorting by it, and clears stored quotable answers so the new ruleset (the rule
``beyond_bandwidth_limit`` and the answer's ``roofline`` field) recomputes them when next read or
audited. The downgrade drops the column and index (the answers are a cache of the audit).

Revision ID: 20261206_0011r
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261206_0011r"
down_revision = "20261203_0011k"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("entries") as batch:
        batch.add_column(sa.Column("roofline_ratio", sa.Float(), nullable=True))
    op.create_index("ix_entries_roofline", "entries", ["roofline_ratio", "id", "flag_count", "gone"])
    op.execute("UPDATE recipes SET quotable = NULL, quotable_tps = NULL, basis = NULL")


def downgrade() -> None:
    op.drop_index("ix_entries_roofline", table_name="entries")
    with op.batch_alter_table("entries") as batch:
        batch.drop_column("roofline_ratio")
