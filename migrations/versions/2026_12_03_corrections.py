"""corrections: reviewers' corrections of entries (fix a field, add a missed figure, reject an entry) and
their decisions on flags, keyed to the archived text (a snapshot's citation id and the figure's
TextQuoteSelector/TextPositionSelector), never to database ids; append-only like ``decisions``

Each row is also a WARC metadata record (``warc_record_id``), so `caveat reindex` restores the table
from the WARC files alone.

Revision ID: 20261203_0011c
Revises: 20261202_0010u
Create Date: 2026-12-03 09:00:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261203_0011c"
down_revision = "20261202_0010u"
branch_labels = None
depends_on = None

MESSAGE = "corrections are append-only: record a new correction instead of changing or deleting one"


def upgrade() -> None:
    op.create_table(
        "corrections",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source_id", sa.Integer, sa.ForeignKey("sources.id", ondelete="SET NULL")),
        sa.Column("citation_id", sa.String(9), nullable=False),
        sa.Column("record_id", sa.String(80), nullable=False),
        sa.Column("selector", sa.JSON, nullable=False),
        sa.Column("fields", sa.JSON),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="RESTRICT")),
        sa.Column("entry_version", sa.Integer),
        sa.Column("warc_record_id", sa.String(80), unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_corrections_citation", "corrections", ["citation_id", "id"])
    op.create_index("ix_corrections_source", "corrections", ["source_id", "id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
            CREATE FUNCTION caveat_corrections_append_only() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION '{MESSAGE}'; END; $$ LANGUAGE plpgsql""")
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER corrections_no_{event.lower()} BEFORE {event} ON corrections
                           FOR EACH ROW EXECUTE FUNCTION caveat_corrections_append_only()""")
        op.execute("""CREATE TRIGGER corrections_no_truncate BEFORE TRUNCATE ON corrections
                      FOR EACH STATEMENT EXECUTE FUNCTION caveat_corrections_append_only()""")
    else:
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER corrections_no_{event.lower()} BEFORE {event} ON corrections
                           BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""")
        op.execute(f"""CREATE TRIGGER corrections_no_replace BEFORE INSERT ON corrections
                       WHEN EXISTS (SELECT 1 FROM corrections WHERE id = NEW.id)
                       BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for event in ("update", "delete", "truncate"):
            op.execute(f"DROP TRIGGER IF EXISTS corrections_no_{event} ON corrections")
        op.execute("DROP FUNCTION IF EXISTS caveat_corrections_append_only()")
    else:
        for event in ("update", "delete", "replace"):
            op.execute(f"DROP TRIGGER IF EXISTS corrections_no_{event}")
    op.drop_table("corrections")
