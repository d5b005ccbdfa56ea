"""Measurements made by `caveat measure`: the archived evidence and the full result

A measurement may now be made without a recipe (it then feeds no working number). A measurement
Caveat made itself carries its endpoint, model and engine as the endpoint reported it, the citation id
of its evidence (the WARC metadata record written with its exchanges) and its full result as JSON.

Revision ID: 20261201_0010m
Revises: 20261201_0009
Create Date: 2026-12-01 14:30:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0010m"
down_revision = "20261201_0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.alter_column("recipe_id", existing_type=sa.String(40), nullable=True)
        batch.add_column(sa.Column("origin", sa.String(16), nullable=False, server_default="manual"))
        batch.add_column(sa.Column("endpoint", sa.Text(), nullable=True))
        batch.add_column(sa.Column("model", sa.String(255), nullable=True))
        batch.add_column(sa.Column("engine", sa.Text(), nullable=True))
        batch.add_column(sa.Column("citation_id", sa.String(9), nullable=True))
        batch.add_column(sa.Column("warc_file", sa.String(255), nullable=True))
        batch.add_column(sa.Column("record_id", sa.String(80), nullable=True))
        batch.add_column(sa.Column("offset", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("length", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("result", sa.JSON(), nullable=True))
        batch.create_index("ix_measurements_citation", ["citation_id"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_index("ix_measurements_citation")
        for col in ("result", "length", "offset", "record_id", "warc_file", "citation_id", "engine", "model",
                    "endpoint", "origin"):
            batch.drop_column(col)
        batch.alter_column("recipe_id", existing_type=sa.String(40), nullable=False)
