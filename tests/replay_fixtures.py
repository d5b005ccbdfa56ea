"""Test helpers for replay and citations: write records with chosen timestamps straight into a WARC
in the data folder (with archive.warcwriter) and index them as ``snapshots`` rows."""

from __future__ import annotations

import hashlib

from app.models import Snapshot
from archive import digests
from archive.citeid import new_citation_id
from archive.surt import surt
from archive.timestamps import parse_ts17
from archive.warcwriter import WarcWriter


def http_head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Status'}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def add_snapshot(session, settings, url: str, ts: str, body: bytes | str, *, status: int = 200,
                 content_type: str = "text/html; charset=utf-8", headers: list[tuple[str, str]] | None = None,
                 warc_name: str = "test-replay.warc.gz", citation_id: str | None = None) -> Snapshot:
    if isinstance(body, str):
        body = body.encode("utf-8")
    hdrs = [("Content-Type", content_type)] + list(headers or []) + [("Content-Length", str(len(body)))]
    head = http_head(status, hdrs)
    sha = hashlib.sha256(body).digest()
    settings.warc_dir.mkdir(parents=True, exist_ok=True)
    with WarcWriter(settings.warc_dir / warc_name, gzip_level=1) as w:
        rec = w.write_response(url, ts, head, body, len(body), sha)
    snap = Snapshot(
        citation_id=citation_id or new_citation_id(), url=url, surt=surt(url), timestamp=ts,
        captured_at=parse_ts17(ts), status=status, mime=content_type.split(";")[0], record_type="response",
        warc_file=warc_name, offset=rec.offset, length=rec.length, record_id=rec.record_id,
        payload_digest=digests.label(sha), block_digest=rec.block_digest, sha256=sha.hex(),
        payload_length=len(body), origin="capture", fixity="unchecked",
    )
    session.add(snap)
    session.flush()
    return snap
