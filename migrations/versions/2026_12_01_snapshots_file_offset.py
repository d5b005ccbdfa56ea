"""an index on snapshots (warc_file, offset): opening the store finds each file's last indexed byte
with one index lookup instead of scanning the table

Revision ID: 20261201_0007
Revises: 20261201_0006
Create Date: 2026-12-01 11:00:00
"""
from alembic import op

revision = "20261201_0007"
down_revision = "20261201_0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_snapshots_file_offset", "snapshots", ["warc_file", "offset"])


def downgrade() -> None:
    op.drop_index("ix_snapshots_file_offset", "snapshots")
