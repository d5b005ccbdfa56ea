"""The archive on S3-compatible object storage (issue 30): the ``archive_objects`` table.

One row per sealed WARC file uploaded to the bucket (name, size, SHA-256, when), written after the store
verified the upload and before the local copy is removed. Index rows keep naming the file; a record is read
from the local spool while the file is there, else by byte range from the object. Nothing existing changes.

Revision ID: 20261207_0012s
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261207_0012s"
down_revision = "20261206_0011r"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "archive_objects",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("archive_objects")
