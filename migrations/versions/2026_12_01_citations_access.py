"""issue 13: stored citations hold no host (flags' citation URLs become /c/ID?q=... references, built
into URLs when served); captures can be withdrawn (410) or restricted (403), reversibly, with an
append-only log of who did it and why (access_events)

Revision ID: 20261201_0009
Revises: 20261201_0008
Create Date: 2026-12-01 12:00:00
"""
import json
import re

import sqlalchemy as sa
from alembic import op

revision = "20261201_0009"
down_revision = "20261201_0008"
branch_labels = None
depends_on = None

MESSAGE = "access_events are append-only: record a new event (reinstate) instead of changing or deleting one"
_HOST = re.compile(r"^https?://[^/?#]+(?=/c/)")
flags = sa.table("flags", sa.column("id", sa.Integer), sa.column("citation", sa.Text), sa.column("evidence", sa.JSON))


def _strip(url):
    return _HOST.sub("", url) if isinstance(url, str) else url


def _host_free_flags() -> None:
    conn = op.get_bind()
    for fid, citation, evidence in conn.execute(sa.select(flags.c.id, flags.c.citation, flags.c.evidence)).fetchall():
        if isinstance(evidence, str):
            evidence = json.loads(evidence)
        new_ev = evidence
        if isinstance(evidence, dict) and isinstance(evidence.get("quotes"), list):
            new_ev = dict(evidence, quotes=[dict(q, citation=_strip(q.get("citation"))) if isinstance(q, dict) else q
                                            for q in evidence["quotes"]])
        new_cit = _strip(citation)
        if new_cit != citation or new_ev != evidence:
            conn.execute(flags.update().where(flags.c.id == fid).values(citation=new_cit, evidence=new_ev))


def upgrade() -> None:
    _host_free_flags()
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("access", sa.String(16), nullable=False, server_default="public"))
        batch.add_column(sa.Column("access_reason", sa.Text()))
        batch.add_column(sa.Column("access_changed_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("access_by", sa.String(255)))
    op.create_index("ix_snapshots_access", "snapshots", ["access"])
    op.create_table(
        "access_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("snapshot_id", sa.Integer(), sa.ForeignKey("snapshots.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("citation_id", sa.String(9), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="RESTRICT")),
        sa.Column("warc_record_id", sa.String(80)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_access_events_snapshot", "access_events", ["snapshot_id", "id"])
    op.create_index("ix_access_events_created", "access_events", ["created_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
            CREATE FUNCTION caveat_access_events_append_only() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION '{MESSAGE}'; END; $$ LANGUAGE plpgsql""")
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER access_events_no_{event.lower()} BEFORE {event} ON access_events
                           FOR EACH ROW EXECUTE FUNCTION caveat_access_events_append_only()""")
    else:
        for event in ("UPDATE", "DELETE"):
            op.execute(f"""CREATE TRIGGER access_events_no_{event.lower()} BEFORE {event} ON access_events
                           BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""")


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for event in ("update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS access_events_no_{event} ON access_events" if pg
                   else f"DROP TRIGGER IF EXISTS access_events_no_{event}")
    if pg:
        op.execute("DROP FUNCTION IF EXISTS caveat_access_events_append_only()")
    op.drop_index("ix_access_events_created", "access_events")
    op.drop_index("ix_access_events_snapshot", "access_events")
    op.drop_table("access_events")
    op.drop_index("ix_snapshots_access", "snapshots")
    with op.batch_alter_table("snapshots") as batch:
        for col in ("access_by", "access_changed_at", "access_reason", "access"):
            batch.drop_column(col)
