"""SQLAlchemy 2 models. The schema changes only through alembic migrations in ``migrations/``."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class Snapshot(Base):
    """One archived HTTP response (or revisit) in a WARC file: the unit a citation points at."""

    __tablename__ = "snapshots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    citation_id: Mapped[str] = mapped_column(String(9), unique=True, nullable=False)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    surt: Mapped[str] = mapped_column(Text, nullable=False)
    timestamp: Mapped[str] = mapped_column(String(17), nullable=False)  # yyyyMMddhhmmssfff UTC
    captured_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    status: Mapped[int | None] = mapped_column(Integer)
    mime: Mapped[str | None] = mapped_column(String(255))
    record_type: Mapped[str] = mapped_column(String(16), nullable=False, default="response")
    warc_file: Mapped[str] = mapped_column(String(255), nullable=False)  # name inside data_dir/warcs
    offset: Mapped[int] = mapped_column(BigInteger, nullable=False)
    length: Mapped[int] = mapped_column(BigInteger, nullable=False)  # compressed length of the member
    record_id: Mapped[str] = mapped_column(String(80), unique=True, nullable=False)  # WARC-Record-ID
    request_offset: Mapped[int | None] = mapped_column(BigInteger)
    request_length: Mapped[int | None] = mapped_column(BigInteger)
    payload_digest: Mapped[str | None] = mapped_column(String(128))  # WARC-Payload-Digest as written
    block_digest: Mapped[str | None] = mapped_column(String(128))  # WARC-Block-Digest as written
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)  # hex sha256 of the payload
    payload_length: Mapped[int | None] = mapped_column(BigInteger)
    refers_to_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    refers_to_record_id: Mapped[str | None] = mapped_column(String(80))
    redirect_to: Mapped[str | None] = mapped_column(Text)
    origin: Mapped[str] = mapped_column(String(16), nullable=False, default="capture")  # capture|import
    source_id: Mapped[int | None] = mapped_column(ForeignKey("sources.id", ondelete="SET NULL"))
    fixity: Mapped[str] = mapped_column(String(16), nullable=False, default="unchecked")  # ok|failed|unchecked
    fixity_checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    fixity_detail: Mapped[str | None] = mapped_column(Text)
    # public|withdrawn (410, tombstone)|restricted (403); bytes stay in the WARC either way (issue 13)
    access: Mapped[str] = mapped_column(String(16), nullable=False, default="public", server_default="public")
    access_reason: Mapped[str | None] = mapped_column(Text)
    access_changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    access_by: Mapped[str | None] = mapped_column(String(255))
    # issue 24: False when reindex found the record in no leaf of the log (not Caveat's capture); None: not in question
    verified: Mapped[bool | None] = mapped_column(Boolean)

    refers_to: Mapped[Snapshot | None] = relationship(remote_side=[id])

    __table_args__ = (
        Index("ix_snapshots_surt_ts", "surt", "timestamp"),
        Index("ix_snapshots_url", "url"),
        Index("ix_snapshots_sha256", "sha256"),
        Index("ix_snapshots_file_offset", "warc_file", "offset"),
        Index("ix_snapshots_access", "access"),
    )


class Source(Base):
    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True, nullable=False)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    kind: Mapped[str | None] = mapped_column(String(16))  # json|html|markdown|text; None = guess
    kind_guessed: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    browser: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false(), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    removed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_crawl_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_status: Mapped[str | None] = mapped_column(String(16))  # ok|warnings|empty|failed
    last_error: Mapped[str | None] = mapped_column(Text)
    last_warnings: Mapped[list | None] = mapped_column(JSON)
    # Watching (issue 17, app/watch/schedule.py): re-crawl every N seconds; validators for conditional requests.
    every_seconds: Mapped[int | None] = mapped_column(Integer)
    next_crawl_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    etag: Mapped[str | None] = mapped_column(Text)
    last_modified: Mapped[str | None] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    vanished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Columns naming a row's identity on an unusual board (`caveat source add --key COL`); None: the usual fields.
    key_columns: Mapped[list | None] = mapped_column(JSON)

    __table_args__ = (Index("ix_sources_due", "next_crawl_at"),)


class Crawl(Base):
    __tablename__ = "crawls"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False, default="crawl")  # crawl|reparse
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="running")
    snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    entries_new: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    entries_changed: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    entries_unchanged: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    warnings: Mapped[list | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    owner: Mapped[str | None] = mapped_column(String(200))  # "host:pid" of the process running it
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # renewed while it runs
    queued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # status "queued" until a worker takes it
    job_id: Mapped[int | None] = mapped_column(BigInteger)  # the procrastinate job running it
    trigger: Mapped[str | None] = mapped_column(String(16))  # schedule|manual|cli
    conditional: Mapped[str | None] = mapped_column(String(16))  # not-modified when the server answered 304

    __table_args__ = (Index("ix_crawls_source_status", "source_id", "status"),)


class Recipe(Base):
    """Entries that share a configuration except for draft width."""

    __tablename__ = "recipes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    recipe_id: Mapped[str] = mapped_column(String(40), unique=True, nullable=False)
    model: Mapped[str | None] = mapped_column(Text)
    hardware: Mapped[str | None] = mapped_column(Text)
    gpu_count: Mapped[int | None] = mapped_column(Integer)
    engine: Mapped[str | None] = mapped_column(Text)
    key: Mapped[dict] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    # Cached result of the last audit: the quotable answer as served by the API.
    quotable: Mapped[dict | None] = mapped_column(JSON)
    quotable_tps: Mapped[float | None] = mapped_column(Float)
    basis: Mapped[str | None] = mapped_column(String(16))
    model_key: Mapped[str | None] = mapped_column(Text)  # issue 26: what `caveat quote NAME` looks up (identity.model_key)
    merged_into: Mapped[str | None] = mapped_column(String(40))  # the recipe it became (migration 20261207_0012n)

    __table_args__ = (Index("ix_recipes_model_key", "model_key"),)


class Entry(Base):
    """A leaderboard entry as it stands now; its history lives in ``entry_versions``."""

    __tablename__ = "entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[int | None] = mapped_column(ForeignKey("sources.id", ondelete="SET NULL"))
    entry_key: Mapped[str] = mapped_column(String(64), nullable=False)  # stable identity within source
    recipe_id: Mapped[str | None] = mapped_column(String(40))
    current_version_id: Mapped[int | None] = mapped_column(Integer)
    first_snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    last_snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    gone: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)  # absent from latest crawl
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    # Denormalised copy of the current version, for filtering and sorting.
    model: Mapped[str | None] = mapped_column(Text)
    hardware: Mapped[str | None] = mapped_column(Text)
    gpu_count: Mapped[int | None] = mapped_column(Integer)
    engine: Mapped[str | None] = mapped_column(Text)
    engine_version: Mapped[str | None] = mapped_column(Text)
    quantization: Mapped[str | None] = mapped_column(Text)
    headline_tps: Mapped[float | None] = mapped_column(Float)
    steady_low: Mapped[float | None] = mapped_column(Float)
    steady_high: Mapped[float | None] = mapped_column(Float)
    draft_tokens: Mapped[int | None] = mapped_column(Integer)
    acceptance_rate: Mapped[float | None] = mapped_column(Float)
    concurrency: Mapped[int | None] = mapped_column(Integer)
    notes: Mapped[str | None] = mapped_column(Text)

    # Audit results.
    working_tps: Mapped[float | None] = mapped_column(Float)
    basis: Mapped[str | None] = mapped_column(String(16))
    basis_reason: Mapped[str | None] = mapped_column(Text)
    inflation_ratio: Mapped[float | None] = mapped_column(Float)
    max_severity: Mapped[str | None] = mapped_column(String(16))
    severity_rank: Mapped[int] = mapped_column(Integer, default=0, nullable=False)  # 4 critical .. 0 none
    flag_count: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    open_flag_count: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    decision_status: Mapped[str] = mapped_column(String(16), default="none", nullable=False)  # none|pending|decided
    roofline_ratio: Mapped[float | None] = mapped_column(Float)  # per-user decode figure / bandwidth bound (issue 28)
    # issue 26: read (rules or reviewer) | proposed (the learned reader: never in a recipe or quoted until confirmed)
    status: Mapped[str] = mapped_column(String(16), default="read", server_default="read", nullable=False)
    confidence: Mapped[float | None] = mapped_column(Float)  # a proposal's, 0..1

    __table_args__ = (
        UniqueConstraint("source_id", "entry_key", name="uq_entries_source_key"),
        Index("ix_entries_recipe", "recipe_id"),
        Index("ix_entries_model", "model"),
        # flag_count and gone trail so the review queue filters and pages inside the index (app/audit/queue.py)
        Index("ix_entries_queue", "severity_rank", "inflation_ratio", "id", "flag_count", "gone"),
        Index("ix_entries_inflation", "inflation_ratio", "id", "flag_count", "gone"),
        Index("ix_entries_roofline", "roofline_ratio", "id", "flag_count", "gone"),
        Index("ix_entries_decision", "decision_status", "severity_rank"),
        Index("ix_entries_status", "status", "gone", "confidence"),
    )


class EntryVersion(Base):
    """One parsed state of an entry, from one snapshot. Never updated after it is written."""

    __tablename__ = "entry_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("entries.id", ondelete="CASCADE"), nullable=False)
    snapshot_id: Mapped[int] = mapped_column(ForeignKey("snapshots.id"), nullable=False)
    version_no: Mapped[int] = mapped_column(Integer, nullable=False)
    fields: Mapped[dict] = mapped_column(JSON, nullable=False)
    provenance: Mapped[dict] = mapped_column(JSON, nullable=False)  # field -> exact quoted text
    extra: Mapped[dict | None] = mapped_column(JSON)  # unknown fields kept verbatim
    warnings: Mapped[list | None] = mapped_column(JSON)
    changed_fields: Mapped[dict | None] = mapped_column(JSON)  # field -> [old, new] vs previous version
    parser: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (Index("ix_entry_versions_entry", "entry_id", "version_no"),)


class Flag(Base):
    __tablename__ = "flags"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("entries.id", ondelete="CASCADE"), nullable=False)
    rule: Mapped[str] = mapped_column(String(64), nullable=False)
    severity: Mapped[str] = mapped_column(String(16), nullable=False)
    explanation: Mapped[str] = mapped_column(Text, nullable=False)
    evidence: Mapped[dict] = mapped_column(JSON, nullable=False)
    citation: Mapped[str | None] = mapped_column(Text)
    ruleset_version: Mapped[str] = mapped_column(String(32), nullable=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)  # raised by the latest audit
    status: Mapped[str] = mapped_column(String(16), default="open", nullable=False)  # open|confirmed|dismissed
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (
        UniqueConstraint("entry_id", "rule", name="uq_flags_entry_rule"),
        Index("ix_flags_rule", "rule", "active"),
        Index("ix_flags_updated", "updated_at"),  # the review queue's change marker (app/audit/queue.py)
    )


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)


class LoginSession(Base):
    """A signed-in browser: the cookie holds a random token, this row its sha256. Logout, a password
    change and `caveat user sessions NAME --revoke` set ``revoked_at``; the cookie then signs in nobody."""

    __tablename__ = "login_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    client: Mapped[str | None] = mapped_column(String(200))  # address and user agent at sign-in, for listing


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)  # sha256 hex
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    scopes: Mapped[str] = mapped_column(String(100), nullable=False, default="read,decide,measure")
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # the token that minted it through the API (never outlives, outranks or survives it); None: CLI or session
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))

    __table_args__ = (Index("ix_api_tokens_parent", "parent_id"),)


class Decision(Base):
    """Append-only audit log of reviewer decisions on flags."""

    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flag_id: Mapped[int] = mapped_column(ForeignKey("flags.id", ondelete="RESTRICT"), nullable=False)
    entry_id: Mapped[int] = mapped_column(ForeignKey("entries.id", ondelete="RESTRICT"), nullable=False)
    rule: Mapped[str] = mapped_column(String(64), nullable=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"), nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)  # confirm|dismiss
    note: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (Index("ix_decisions_created", "created_at"),)


class Correction(Base):
    """Append-only log of reviewers' corrections (fix, add, reject) and decisions, keyed to the archived
    text: the snapshot's citation id and record id and the figure's selector, never entry ids
    (app/claims/corrections.py). Each is also a WARC metadata record, restored by `caveat reindex`."""

    __tablename__ = "corrections"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # fix|add|reject|decision
    source_id: Mapped[int | None] = mapped_column(ForeignKey("sources.id", ondelete="SET NULL"))
    citation_id: Mapped[str] = mapped_column(String(9), nullable=False)
    record_id: Mapped[str] = mapped_column(String(80), nullable=False)  # the snapshot's WARC-Record-ID
    selector: Mapped[dict] = mapped_column(JSON, nullable=False)  # {exact, prefix, suffix, start, end}
    fields: Mapped[dict | None] = mapped_column(JSON)  # field -> value (fix, add); rule/action (decision)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    actor: Mapped[str] = mapped_column(String(255), nullable=False)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    entry_version: Mapped[int | None] = mapped_column(Integer)  # the entry's version it was made against
    warc_record_id: Mapped[str | None] = mapped_column(String(80), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (Index("ix_corrections_citation", "citation_id", "id"),
                      Index("ix_corrections_source", "source_id", "id"))


class AccessEvent(Base):
    """Append-only log of withdrawals, restrictions and reinstatements of captures (who and why)."""

    __tablename__ = "access_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    snapshot_id: Mapped[int] = mapped_column(ForeignKey("snapshots.id", ondelete="RESTRICT"), nullable=False)
    citation_id: Mapped[str] = mapped_column(String(9), nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)  # withdraw|restrict|reinstate
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    actor: Mapped[str] = mapped_column(String(255), nullable=False)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    warc_record_id: Mapped[str | None] = mapped_column(String(80))  # the metadata record that keeps it in the WARC
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (Index("ix_access_events_snapshot", "snapshot_id", "id"),
                      Index("ix_access_events_created", "created_at"))


class Measurement(Base):
    """A throughput measured by us (or a trusted harness) on non-repeating prompts with checked output."""

    __tablename__ = "measurements"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    recipe_id: Mapped[str | None] = mapped_column(String(40))  # None: measured without a recipe (feeds nothing)
    tps: Mapped[float] = mapped_column(Float, nullable=False)
    non_repeating_prompts: Mapped[bool] = mapped_column(Boolean, nullable=False)
    output_checked: Mapped[bool] = mapped_column(Boolean, nullable=False)
    n_runs: Mapped[int | None] = mapped_column(Integer)
    method: Mapped[str | None] = mapped_column(Text)
    notes: Mapped[str | None] = mapped_column(Text)
    measured_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    # `caveat measure` (issue 15, docs/measure.md): what was measured, its evidence's record, the result object
    origin: Mapped[str] = mapped_column(String(16), nullable=False, default="manual", server_default="manual")
    endpoint: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(String(255))
    engine: Mapped[str | None] = mapped_column(Text)
    citation_id: Mapped[str | None] = mapped_column(String(9))
    warc_file: Mapped[str | None] = mapped_column(String(255))
    record_id: Mapped[str | None] = mapped_column(String(80))
    offset: Mapped[int | None] = mapped_column(BigInteger)
    length: Mapped[int | None] = mapped_column(BigInteger)
    result: Mapped[dict | None] = mapped_column(JSON)
    # issue 24: one restored from a WARC counts only when its figures follow from the exchange records it names
    verified: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True, server_default=true())
    verification: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("ix_measurements_recipe", "recipe_id"),
                      Index("ix_measurements_citation", "citation_id", unique=True))


class HostSlot(Base):
    """Per-host politeness shared by every worker: the earliest time the next request to ``host`` may start."""

    __tablename__ = "host_slots"

    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    next_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ArchiveObject(Base):
    """A sealed WARC file uploaded to the bucket (docs/storage.md): written after the store verified its
    SHA-256 and a HEAD read it back, before the local copy is removed. Objects are never overwritten."""

    __tablename__ = "archive_objects"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    uploaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=utcnow)


class ChangeEvent(Base):
    """What a crawl found different (app/watch/changes.py): an entry's figures, flags or quotable answer
    changed, or an entry or the whole page vanished (or came back). Append-only."""

    __tablename__ = "change_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # changed|vanished|returned
    scope: Mapped[str] = mapped_column(String(8), nullable=False)  # entry|page
    source_id: Mapped[int | None] = mapped_column(ForeignKey("sources.id", ondelete="SET NULL"))
    entry_id: Mapped[int | None] = mapped_column(ForeignKey("entries.id", ondelete="SET NULL"))
    recipe_id: Mapped[str | None] = mapped_column(String(40))
    crawl_id: Mapped[int | None] = mapped_column(Integer)
    old_snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    new_snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    old: Mapped[dict | None] = mapped_column(JSON)
    new: Mapped[dict | None] = mapped_column(JSON)
    changes: Mapped[dict | None] = mapped_column(JSON)  # name -> [old, new]
    detail: Mapped[str | None] = mapped_column(Text)
    cited: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0", nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (
        Index("ix_change_events_created", "created_at", "id"),
        Index("ix_change_events_source", "source_id", "id"),
        Index("ix_change_events_entry", "entry_id", "id"),
        Index("ix_change_events_recipe", "recipe_id", "id"),
    )


class CitedMark(Base):
    """Someone relied on this: a citation made through POST /api/citations (per entry), or a quotable
    answer served for a recipe. Change events on them are marked ``cited``."""

    __tablename__ = "cited_marks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    how: Mapped[str] = mapped_column(String(16), nullable=False)  # citation|quotable
    entry_id: Mapped[int | None] = mapped_column(ForeignKey("entries.id", ondelete="CASCADE"))
    recipe_id: Mapped[str | None] = mapped_column(String(40))
    snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id"))
    first_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    last_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    __table_args__ = (UniqueConstraint("how", "entry_id", "recipe_id", name="uq_cited_marks"),
                      Index("ix_cited_marks_recipe", "recipe_id"))


class Hook(Base):
    """A webhook: every change event is POSTed to ``url``, signed with HMAC-SHA256 of ``secret``."""

    __tablename__ = "hooks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    secret: Mapped[str] = mapped_column(Text, nullable=False)
    cited_only: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0", nullable=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1", nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


class HookDelivery(Base):
    """The delivery log: one row per (hook, event), its attempts and their outcomes."""

    __tablename__ = "hook_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hook_id: Mapped[int] = mapped_column(ForeignKey("hooks.id", ondelete="CASCADE"), nullable=False)
    event_id: Mapped[int] = mapped_column(ForeignKey("change_events.id", ondelete="CASCADE"), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)  # pending|delivered|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    last_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    log: Mapped[list | None] = mapped_column(JSON)  # [{at, code, error, seconds}]
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (UniqueConstraint("hook_id", "event_id", name="uq_hook_deliveries"),
                      Index("ix_hook_deliveries_status", "status", "id"))
