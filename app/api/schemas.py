"""Response models of the JSON API: what the OpenAPI document at ``/openapi.json`` promises.

Models name and type the fields every client may rely on; they allow extra fields (an answer may carry
more than its model lists). Values read from pages as they stand (a model name, a test name, a
concurrency) are typed loosely where a page may give them in more than one form.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Parsed = str | int | float | bool | None  # a value as a parser read it from a page


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(BaseModel):
    ok: Literal[False]
    error: str = Field(..., description="What went wrong and how to fix it.")
    status: int = Field(..., description="The HTTP status, repeated.")
    detail: dict[str, Any] | None = None


def _err(text: str) -> dict:
    return {"model": ErrorBody, "description": text}


ERRORS = {400: _err("Invalid parameter, path or body; the message says how to fix it."),
          404: _err("No such object (recipe, entry, snapshot, measurement, source...).")}
AUTH_ERRORS = {**ERRORS, 401: _err("Not signed in and no valid bearer token."),
               403: _err("Signed in, but not allowed (token scope, CSRF token)."),
               409: _err("Conflicts with what is stored."),
               415: _err("The body is not application/json (or a form, where forms are accepted).")}


class Page(Open):
    ok: Literal[True]
    count: int = Field(..., description="Items in this page.")
    total: int = Field(..., description="Items matching the filters, over all pages.")
    limit: int
    offset: int
    next: str | None = Field(..., description="Path and query of the next page; null on the last page.")


# -- quotable -------------------------------------------------------------------------------------
class Citation(Open):
    label: str = Field(..., description="What is cited: headline, steady state, measurement, notes, snapshot, "
                                        "or a flag's rule.")
    value: float | None = Field(None, description="The number this citation supports, where it is one.")
    citation: str = Field(..., description="Citation URL: archived text (/c/...) or a measurement.")


class FlagAnswer(Open):
    rule: str
    severity: str
    explanation: str
    evidence: dict[str, Any] | None = None
    citation: str | None = None


class SteadyState(Open):
    low: float
    high: float
    citation: str | None = None


class MeasurementRef(Open):
    id: int
    tps: float
    measured_at: str | None
    citation: str


class QuotableBody(Open):
    recipe_id: str
    model: Parsed = None
    hardware: Parsed = None
    gpu_count: Parsed = None
    engine: Parsed = None
    engine_version: Parsed = None
    quantization: Parsed = None
    phase: str | None = Field(None, description="decode, prefill or e2e; null when the page does not say.")
    scope: str | None = Field(None, description="per_user or aggregate; null when the page does not say.")
    concurrency: Parsed = None
    test: Parsed = None
    key: dict[str, Any] | None = Field(None, description="The recipe's configuration key (what its id hashes).")
    quotable_tps: float | None = Field(..., description="The number a reader may quote; null with basis unreviewed or none.")
    basis: Literal["measured", "steady_state", "headline", "unreviewed", "none"]
    reason: str
    unreviewed_tps: float | None = Field(None, description="With basis unreviewed: the number that would be quoted once "
                                                           "a reviewer has read the clauses Caveat did not understand.")
    headline_tps: float | None = None
    inflation_ratio: float | None = None
    steady_state: SteadyState | None = None
    measurement: MeasurementRef | None = None
    roofline: dict[str, Any] | None = Field(None, description="When quotable_tps is above 0.8 of the memory-bandwidth "
                                                              "bound of the recipe's setup: bound_tps, ratio, inputs "
                                                              "(with sources), assumptions, missing, version.")
    flags: list[FlagAnswer]
    citations: list[Citation]
    ruleset_version: str | None = None
    computed_at: str | None = Field(None, description="When the audit computed this answer (UTC, ISO 8601).")


class QuotableAnswer(QuotableBody):
    ok: Literal[True]


class QuotableList(Page):
    recipes: list[QuotableBody]


# -- entries, recipes -----------------------------------------------------------------------------
class EntryFlag(Open):
    rule: str
    severity: str
    explanation: str | None = None
    status: str | None = None
    citation: str | None = None


class EntryBody(Open):
    id: int
    source: str | None
    model: Parsed = None
    hardware: Parsed = None
    gpu_count: Parsed = None
    engine: Parsed = None
    headline_tps: float | None = None
    recipe_id: str | None = None
    snapshot: str | None = None
    citation: str | None = None
    working_tps: float | None = None
    basis: str | None = None
    measurement: MeasurementRef | None = Field(None, description="With basis measured: the measurement it rests on.")
    flags: list[EntryFlag]
    gone: bool
    status: Literal["read", "proposed"] = Field(
        "read", description="read: the rules read it (or a reviewer added it); proposed: the learned reader "
        "proposes it, never quoted until a reviewer confirms it.")
    confidence: float | None = Field(None, description="A proposal's confidence, 0..1.")
    chosen_by: dict[str, Any] | None = Field(
        None, description="Which part chose the entry: {part: rules | learned | reviewer, ...}; learned names "
        "the model and its version.")
    evidence: str | None = Field(None, description="A proposal's evidence: the words around its figure.")


class EntryList(Page):
    entries: list[EntryBody]


class EntryDetail(EntryBody):
    ok: Literal[True]
    fields: dict[str, Any]
    provenance: dict[str, Any]
    history: list[dict[str, Any]]


class RecipeDetail(Open):
    ok: Literal[True]
    recipe_id: str
    key: dict[str, Any] | None
    quotable_tps: float | None = None
    basis: str | None = None
    quotable: QuotableBody | None = None
    ladder: list[dict[str, Any]]
    entries: list[EntryBody]


# -- snapshots and citations ----------------------------------------------------------------------
class SnapshotBody(Open):
    id: str = Field(..., description="Citation id, e.g. ABCD-EFGH.")
    url: str = Field(..., description="The archived page's address.")
    timestamp: str = Field(..., description="Capture time, yyyyMMddhhmmss (UTC), as in replay URLs.")
    captured_at: str = Field(..., description="Capture time, ISO 8601 UTC.")
    sha256: str
    fixity: str
    citation_url: str
    replay_url: str
    raw_url: str


class Snapshot(SnapshotBody):
    ok: Literal[True]


class SnapshotList(Page):
    snapshots: list[SnapshotBody]


class QuoteCitation(Open):
    ok: Literal[True]
    id: str
    url: str = Field(..., description="The archived page's address.")
    citation: str = Field(..., description="Citation URL of the quote.")
    citation_url: str = Field(..., description="Citation URL of the whole snapshot.")
    quote: dict[str, Any] | None = None
    snapshot: SnapshotBody


# -- decisions, measurements, tokens, sources, health ---------------------------------------------
class DecisionBody(Open):
    id: int
    flag_id: int | None
    entry_id: int | None
    rule: str | None
    user: str | None
    action: str
    note: str | None
    created_at: str | None


class DecisionAnswer(Open):
    ok: Literal[True]
    decision: DecisionBody


class CorrectionAnswer(Open):
    ok: Literal[True]
    correction_id: int = Field(..., description="The correction's id (also a WARC metadata record).")
    entry_id: int | None = None
    entry: dict[str, Any] | None = Field(None, description="The entry after the correction: id, version, fields, gone.")
    event_id: int | None = Field(None, description="The `corrected` change event.")
    warnings: list[str] = []


class DecisionList(Page):
    decisions: list[DecisionBody]


class MeasurementBody(Open):
    id: int
    recipe_id: str | None = Field(None, description="Null for a `caveat measure` run made without --recipe.")
    tps: float
    non_repeating_prompts: bool
    output_checked: bool
    verified: bool = Field(True, description="False for a measurement restored from a WARC whose stated figures "
                           "or checks do not follow from its archived exchanges; it never counts (docs/measure.md).")
    verification: str | None = Field(None, description="Why a restored measurement is or is not verified.")
    counts_as_measured: bool
    n_runs: int | None = None
    method: str | None = None
    notes: str | None = None
    measured_at: str | None = None
    citation: str
    # `caveat measure` runs (origin "measure") also carry these (docs/measure.md)
    measurement_id: int | None = None
    decode_tps: float | None = None
    decode_tps_p10: float | None = None
    decode_tps_p90: float | None = None
    ttft_ms: float | None = None
    requests: list[dict[str, Any]] | None = None
    repeat_test: dict[str, Any] | None = None
    output_check: dict[str, Any] | None = None


class MeasurementAnswer(Open):
    ok: Literal[True]
    measurement: MeasurementBody


class MeasurementList(Page):
    measurements: list[MeasurementBody]


class TokenAnswer(Open):
    ok: Literal[True]
    name: str
    token: str
    scopes: list[str]
    expires_at: str | None = Field(None, description="When the token stops working (UTC, ISO 8601).")
    parent: str | None = None  # the name of the token that minted it (None: made by a signed-in session)


class SourceBody(Open):
    id: int
    name: str
    url: str
    kind: str | None
    last_status: str | None = None
    entries: int
    snapshots: int


class SourceList(Page):
    sources: list[SourceBody]


class Health(Open):
    ok: Literal[True]
    version: str
