"""access_events and change_events get the four guards decisions has (issue 24): the database refuses
UPDATE and DELETE (row triggers), SQLite's INSERT OR REPLACE (which deletes the row it collides with
without firing delete triggers: a BEFORE INSERT trigger refuses an insert naming an existing id) and
PostgreSQL's TRUNCATE (which fires no row trigger: a statement-level BEFORE TRUNCATE trigger).

access_events had UPDATE and DELETE guards since 20261201_0009; change_events had none.

Revision ID: 20261202_0003f
Revises: 20261202_0002f
Create Date: 2026-12-02 10:00:00
"""
from alembic import op

revision = "20261202_0003f"
down_revision = "20261202_0002f"
branch_labels = None
depends_on = None

MESSAGES = {
    "access_events": "access_events are append-only: record a new event (reinstate) instead of changing or "
                     "deleting one",
    "change_events": "change_events are append-only: a later crawl records a new event instead",
}


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        op.execute(f"""
            CREATE FUNCTION caveat_change_events_append_only() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION '{MESSAGES["change_events"]}'; END; $$ LANGUAGE plpgsql""")
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER change_events_no_{event.lower()} BEFORE {event} ON change_events
                           FOR EACH ROW EXECUTE FUNCTION caveat_change_events_append_only()""")
        for table in MESSAGES:
            op.execute(f"""CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
                           FOR EACH STATEMENT EXECUTE FUNCTION caveat_{table}_append_only()""")
        return
    for event in ("UPDATE", "DELETE"):
        op.execute(f"""CREATE TRIGGER change_events_no_{event.lower()} BEFORE {event} ON change_events
                       BEGIN SELECT RAISE(ABORT, '{MESSAGES["change_events"]}'); END""")
    for table, message in MESSAGES.items():
        op.execute(f"""CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table}
                       WHEN EXISTS (SELECT 1 FROM {table} WHERE id = NEW.id)
                       BEGIN SELECT RAISE(ABORT, '{message}'); END""")


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for table in MESSAGES:
        for name in ("truncate", "replace"):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_{name}" + (f" ON {table}" if pg else ""))
    for event in ("update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS change_events_no_{event}" + (" ON change_events" if pg else ""))
    if pg:
        op.execute("DROP FUNCTION IF EXISTS caveat_change_events_append_only()")
