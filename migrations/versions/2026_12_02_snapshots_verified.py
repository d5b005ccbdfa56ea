"""snapshots.verified: False for a record `caveat reindex` found in no entry of the tamper-evident log
(not a capture Caveat made, whatever its file says); NULL when not in question (issue 24)

Revision ID: 20261202_0002f
Revises: 20261202_0001f
Create Date: 2026-12-02 09:30:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261202_0002f"
down_revision = "20261202_0001f"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("snapshots", sa.Column("verified", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_column("verified")
