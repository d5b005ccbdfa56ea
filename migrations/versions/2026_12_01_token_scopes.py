"""API tokens get scopes and an expiry

Tokens made before this migration keep working with the scopes a reviewer's token always had (read,
decide, measure; not admin, so they can no longer mint tokens) and expire 90 days after the upgrade.

Revision ID: 20261201_0006
Revises: 20261201_0005
Create Date: 2026-12-01 10:10:00
"""
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from alembic import op

revision = "20261201_0006"
down_revision = "20261201_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("scopes", sa.String(100), nullable=False, server_default="read,decide,measure"))
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    later = datetime.now(timezone.utc) + timedelta(days=90)
    op.get_bind().execute(sa.text("UPDATE api_tokens SET expires_at = :t WHERE expires_at IS NULL"), {"t": later})


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("expires_at")
        batch.drop_column("scopes")
