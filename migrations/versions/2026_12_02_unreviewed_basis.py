"""Ruleset 2026.12.5 (issue 25): notes are read clause by clause and a new basis, ``unreviewed``, exists.

Stored quotable answers were computed by the older ruleset and know neither; they are cleared, so each is
computed again by the new one the first time it is read (``/api/quotable``, ``caveat quote``) or when
its source is next crawled or reparsed. Nothing else changes; the downgrade has nothing to restore (the
answers are a cache of the audit).

Revision ID: 20261202_0010u
"""

from __future__ import annotations

from alembic import op

revision = "20261202_0010u"
down_revision = "20261202_0003f"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE recipes SET quotable = NULL, quotable_tps = NULL, basis = NULL")


def downgrade() -> None:
    pass
