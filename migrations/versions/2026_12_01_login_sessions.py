"""server-side login sessions: a cookie names a row that logout and password changes revoke

Revision ID: 20261201_0005
Revises: 20261201_0004
Create Date: 2026-12-01 10:05:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0005"
down_revision = "20261201_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
        sa.Column("client", sa.String(200)),
    )
    op.create_index("ix_login_sessions_user", "login_sessions", ["user_id"])
    # Cookies signed before this migration held no session row: they sign in nobody now (sign in again).


def downgrade() -> None:
    op.drop_index("ix_login_sessions_user", "login_sessions")
    op.drop_table("login_sessions")
