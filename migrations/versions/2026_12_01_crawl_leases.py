"""crawl rows carry their owner and a lease, so a crawl whose process died is marked failed

Revision ID: 20261201_0003
Revises: 20261201_0002
Create Date: 2026-12-01 09:15:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0003"
down_revision = "20261201_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("crawls") as batch:
        batch.add_column(sa.Column("owner", sa.String(200), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
    # Crawls left running by a version without leases can only be stale: nothing can still run them.
    op.execute("UPDATE crawls SET status = 'failed', error = 'interrupted: the process running this crawl ended "
               "before it finished (found by the upgrade that added crawl leases)', finished_at = started_at "
               "WHERE status = 'running'")


def downgrade() -> None:
    with op.batch_alter_table("crawls") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("owner")
