"""measurements.verified, measurements.verification: a measurement restored from a WARC (reindex,
import-warc) whose stated figures do not follow from its archived exchanges is kept, unverified, and
never counts as a recipe's measured working number (issue 24)

Revision ID: 20261202_0001f
Revises: 20261201_0011a
Create Date: 2026-12-02 09:00:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261202_0001f"
down_revision = "20261201_0011a"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("measurements", sa.Column("verified", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.add_column("measurements", sa.Column("verification", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("verification")
        batch.drop_column("verified")
