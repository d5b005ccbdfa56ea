"""api_tokens.parent_id: the token that minted this one (issue 24, item 10)

A token minted through `POST /api/tokens` with another token records that token as its parent: it
never outlives or outranks it and is revoked with it. Tokens made on the command line or by a
signed-in reviewer's session have no parent (NULL), as every token made before this migration.

Revision ID: 20261201_0011a
Revises: 20261201_0010b
Create Date: 2026-12-01 22:45:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0011a"
down_revision = "20261201_0010b"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_api_tokens_parent", "api_tokens", ["parent_id"], ["id"], ondelete="CASCADE")
        batch.create_index("ix_api_tokens_parent", ["parent_id"])


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_index("ix_api_tokens_parent")
        batch.drop_constraint("fk_api_tokens_parent", type_="foreignkey")
        batch.drop_column("parent_id")
