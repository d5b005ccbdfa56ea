"""sources.browser: a source crawled with Chromium (issue 16)

Revision ID: 20261201_0010b
Revises: 20261201_0009
Create Date: 2026-12-01 14:30:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0010b"
down_revision = "20261201_0010w"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sources", sa.Column("browser", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.drop_column("browser")
