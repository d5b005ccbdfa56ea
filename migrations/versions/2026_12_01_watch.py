"""watch the boards (issue 17): source schedules and conditional-request validators, queued crawls,
per-host politeness, change events, cited marks, webhooks and their delivery log; on PostgreSQL also
procrastinate's own tables (its job queue), applied with procrastinate's schema tooling

Revision ID: 20261201_0010w
Revises: 20261201_0009
Create Date: 2026-12-01 14:20:00
"""
import sqlalchemy as sa
from alembic import op

revision = "20261201_0010w"
down_revision = "20261201_0010m"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("every_seconds", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("next_crawl_at", TZ, nullable=True))
        batch.add_column(sa.Column("etag", sa.Text(), nullable=True))
        batch.add_column(sa.Column("last_modified", sa.Text(), nullable=True))
        batch.add_column(sa.Column("failures", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("vanished_at", TZ, nullable=True))
    op.create_index("ix_sources_due", "sources", ["next_crawl_at"])
    with op.batch_alter_table("crawls") as batch:
        batch.add_column(sa.Column("queued_at", TZ, nullable=True))
        batch.add_column(sa.Column("job_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("trigger", sa.String(16), nullable=True))
        batch.add_column(sa.Column("conditional", sa.String(16), nullable=True))
    op.create_index("ix_crawls_source_status", "crawls", ["source_id", "status"])
    op.create_table(
        "host_slots",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("next_at", TZ, nullable=False),
    )
    op.create_table(
        "change_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id", ondelete="SET NULL"), nullable=True),
        sa.Column("entry_id", sa.Integer(), sa.ForeignKey("entries.id", ondelete="SET NULL"), nullable=True),
        sa.Column("recipe_id", sa.String(40), nullable=True),
        sa.Column("crawl_id", sa.Integer(), nullable=True),
        sa.Column("old_snapshot_id", sa.Integer(), sa.ForeignKey("snapshots.id"), nullable=True),
        sa.Column("new_snapshot_id", sa.Integer(), sa.ForeignKey("snapshots.id"), nullable=True),
        sa.Column("old", sa.JSON(), nullable=True),
        sa.Column("new", sa.JSON(), nullable=True),
        sa.Column("changes", sa.JSON(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("cited", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_change_events_created", "change_events", ["created_at", "id"])
    op.create_index("ix_change_events_source", "change_events", ["source_id", "id"])
    op.create_index("ix_change_events_entry", "change_events", ["entry_id", "id"])
    op.create_index("ix_change_events_recipe", "change_events", ["recipe_id", "id"])
    op.create_table(
        "cited_marks",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("how", sa.String(16), nullable=False),
        sa.Column("entry_id", sa.Integer(), sa.ForeignKey("entries.id", ondelete="CASCADE"), nullable=True),
        sa.Column("recipe_id", sa.String(40), nullable=True),
        sa.Column("snapshot_id", sa.Integer(), sa.ForeignKey("snapshots.id"), nullable=True),
        sa.Column("first_at", TZ, nullable=False),
        sa.Column("last_at", TZ, nullable=False),
        sa.UniqueConstraint("how", "entry_id", "recipe_id", name="uq_cited_marks"),
    )
    op.create_index("ix_cited_marks_recipe", "cited_marks", ["recipe_id"])
    op.create_table(
        "hooks",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("cited_only", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "hook_deliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("hook_id", sa.Integer(), sa.ForeignKey("hooks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("event_id", sa.Integer(), sa.ForeignKey("change_events.id", ondelete="CASCADE"), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("log", sa.JSON(), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("delivered_at", TZ, nullable=True),
        sa.UniqueConstraint("hook_id", "event_id", name="uq_hook_deliveries"),
    )
    op.create_index("ix_hook_deliveries_status", "hook_deliveries", ["status", "id"])
    bind = op.get_bind()
    if bind.dialect.name == "postgresql" and not sa.inspect(bind).has_table("procrastinate_jobs"):
        from app.watch.jobs import procrastinate_schema_sql

        op.execute(procrastinate_schema_sql())


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":  # procrastinate's own objects: its tables, functions and types
        op.execute("DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs, "
                   "procrastinate_workers CASCADE")
        for (signature,) in bind.execute(sa.text(
                "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate%'")).all():
            op.execute(f"DROP FUNCTION IF EXISTS {signature} CASCADE")
        for name in ("procrastinate_job_to_defer_v1", "procrastinate_job_event_type", "procrastinate_job_status"):
            op.execute(f"DROP TYPE IF EXISTS {name} CASCADE")
    op.drop_table("hook_deliveries")
    op.drop_table("hooks")
    op.drop_table("cited_marks")
    op.drop_table("change_events")
    op.drop_table("host_slots")
    op.drop_index("ix_crawls_source_status", "crawls")
    with op.batch_alter_table("crawls") as batch:
        for c in ("conditional", "trigger", "job_id", "queued_at"):
            batch.drop_column(c)
    op.drop_index("ix_sources_due", "sources")
    with op.batch_alter_table("sources") as batch:
        for c in ("vanished_at", "failures", "last_modified", "etag", "next_crawl_at", "every_seconds"):
            batch.drop_column(c)
