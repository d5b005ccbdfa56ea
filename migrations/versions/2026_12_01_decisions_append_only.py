"""decisions are append-only: the database refuses UPDATE and DELETE on the audit log

Revision ID: 20261201_0002
Revises: 20261201_0001
Create Date: 2026-12-01 02:25:00
"""
from alembic import op

revision = "20261201_0002"
down_revision = "20261201_0001"
branch_labels = None
depends_on = None

MESSAGE = "decisions are append-only: record a new decision instead of changing or deleting one"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
            CREATE FUNCTION caveat_decisions_append_only() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION '{MESSAGE}'; END; $$ LANGUAGE plpgsql""")
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER decisions_no_{event.lower()} BEFORE {event} ON decisions
                           FOR EACH ROW EXECUTE FUNCTION caveat_decisions_append_only()""")
    else:
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER decisions_no_{event.lower()} BEFORE {event} ON decisions
                           BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""")


def downgrade() -> None:
    for event in ("update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS decisions_no_{event} ON decisions"
                   if op.get_bind().dialect.name == "postgresql" else f"DROP TRIGGER IF EXISTS decisions_no_{event}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS caveat_decisions_append_only()")
