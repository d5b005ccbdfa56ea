"""Issue 26: the learned reader's proposals are stored; recipes group by a normalised model key.

Adds ``entries.status`` (``read`` for every existing row: the rules read them, or a reviewer added them;
``proposed`` for a figure the learned reader proposes) and ``entries.confidence`` (a proposal's), with the
index the review queue's proposals read in order.

Revision ID: 20261207_0012n
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261207_0012n"
down_revision = "20261206_0011r"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("entries") as batch:
        batch.add_column(sa.Column("status", sa.String(16), nullable=False, server_default="read"))
        batch.add_column(sa.Column("confidence", sa.Float(), nullable=True))
    op.create_index("ix_entries_status", "entries", ["status", "gone", "confidence"])


def downgrade() -> None:
    op.drop_index("ix_entries_status", table_name="entries")
    # an older Caveat has no proposals: they stay, marked gone from their page (their history is kept)
    op.execute(sa.text("UPDATE entries SET gone = :t WHERE status = 'proposed'").bindparams(t=True))
    with op.batch_alter_table("entries") as batch:
        batch.drop_column("confidence")
        batch.drop_column("status")
