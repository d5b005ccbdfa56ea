"""``caveat verify``: re-read every indexed record, recompute its digests, report what is wrong.

Each snapshot gets ``fixity`` (ok|failed), ``fixity_checked_at`` and ``fixity_detail`` updated
(the service flushes; the command commits). Problems are grouped as ``missing`` (the WARC file is
gone), ``truncated`` (the file ends inside the record), ``corrupt`` (gzip or WARC structure broken)
and ``mismatch`` (bytes read fine but a digest or the index disagrees).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.models import Snapshot
from archive import digests
from archive.reader import RecordUnreadable, WarcRecord, read_record


@dataclass
class Problem:
    snapshot_id: int
    citation_id: str
    warc_file: str
    offset: int
    kind: str  # missing | truncated | corrupt | mismatch
    detail: str

    def line(self) -> str:
        return f"{self.kind:9} {self.citation_id}  {self.warc_file}@{self.offset}  {self.detail}"


@dataclass
class VerifyReport:
    checked: int = 0
    ok: int = 0
    problems: list[Problem] = field(default_factory=list)
    missing_files: set[str] = field(default_factory=set)

    @property
    def passed(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.problems:
            out[p.kind] = out.get(p.kind, 0) + 1
        return out


def _check_against_index(rec: WarcRecord, snap: Snapshot, referred_sha: dict[str, str]) -> list[str]:
    problems = list(rec.problems)
    if rec.header("WARC-Record-ID") != snap.record_id:
        problems.append(f"WARC-Record-ID is {rec.header('WARC-Record-ID')}, the index says {snap.record_id}")
    if snap.block_digest and rec.header("WARC-Block-Digest") != snap.block_digest:
        problems.append("WARC-Block-Digest header differs from the index")
    payload_value = rec.header("WARC-Payload-Digest")
    if payload_value:
        try:
            _, raw = digests.parse(payload_value)
            if raw.hex() != snap.sha256:
                problems.append("WARC-Payload-Digest differs from the sha256 in the index")
        except ValueError as exc:
            problems.append(str(exc))
    if snap.record_type == "revisit":
        target = snap.refers_to_record_id
        if target not in referred_sha:
            problems.append(f"revisit refers to {target}, which is not in the index")
        elif referred_sha[target] != snap.sha256:
            problems.append("revisit and the record it refers to have different payload sha256")
    return problems


def verify_all(session: Session, settings: Settings, *,
               progress: Callable[[Problem], None] | None = None) -> VerifyReport:
    """Check every snapshot (in file order); updates their fixity columns and flushes."""
    report = VerifyReport()
    now = datetime.now(timezone.utc)
    snaps = session.scalars(select(Snapshot).order_by(Snapshot.warc_file, Snapshot.offset)).all()
    referred_sha = {s.record_id: s.sha256 for s in snaps}
    for snap in snaps:
        report.checked += 1
        path = settings.warc_dir / snap.warc_file
        kind, detail = None, None
        if not path.exists():
            report.missing_files.add(snap.warc_file)
            kind, detail = "missing", f"WARC file {snap.warc_file} is missing from {settings.warc_dir}"
        else:
            try:
                rec = read_record(path, snap.offset, snap.length)
                found = _check_against_index(rec, snap, referred_sha)
                if found:
                    kind, detail = "mismatch", "; ".join(found)
                if snap.request_offset is not None and not found:
                    req = read_record(path, snap.request_offset, snap.request_length or 0)
                    if req.problems:
                        kind, detail = "mismatch", "request record: " + "; ".join(req.problems)
            except RecordUnreadable as exc:
                kind, detail = exc.kind, exc.message
        snap.fixity_checked_at = now
        if kind is None:
            report.ok += 1
            snap.fixity, snap.fixity_detail = "ok", None
        else:
            snap.fixity, snap.fixity_detail = "failed", f"{kind}: {detail}"
            problem = Problem(snap.id, snap.citation_id, snap.warc_file, snap.offset, kind, detail)
            report.problems.append(problem)
            if progress is not None:
                progress(problem)
    session.flush()
    return report
