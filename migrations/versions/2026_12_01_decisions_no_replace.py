"""the audit log cannot be rewritten by REPLACE (SQLite) or emptied by TRUNCATE (PostgreSQL)

SQLite's ``INSERT OR REPLACE`` deletes the row it collides with without firing delete triggers, so a
BEFORE INSERT trigger refuses any insert that names an existing decision. PostgreSQL's ``TRUNCATE``
fires no row trigger, so a statement-level BEFORE TRUNCATE trigger refuses it.

Revision ID: 20261201_0004
Revises: 20261201_0003
Create Date: 2026-12-01 10:00:00
"""
from alembic import op

revision = "20261201_0004"
down_revision = "20261201_0003"
branch_labels = None
depends_on = None

MESSAGE = "decisions are append-only: record a new decision instead of changing or deleting one"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("""CREATE TRIGGER decisions_no_truncate BEFORE TRUNCATE ON decisions
                      FOR EACH STATEMENT EXECUTE FUNCTION caveat_decisions_append_only()""")
    else:
        op.execute(f"""CREATE TRIGGER decisions_no_replace BEFORE INSERT ON decisions
                       WHEN EXISTS (SELECT 1 FROM decisions WHERE id = NEW.id)
                       BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS decisions_no_truncate ON decisions")
    else:
        op.execute("DROP TRIGGER IF EXISTS decisions_no_replace")
