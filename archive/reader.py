"""Read one record back from a ``.warc.gz`` at (file, offset, length) and recompute its digests.

:func:`read_record` never trusts the bytes: it checks that the gzip member is complete and fills
exactly ``length`` bytes, that the WARC block has its declared length, and recomputes the block and
payload digests named in the headers. Structural damage raises :class:`RecordUnreadable` (``kind``
is ``missing``, ``truncated`` or ``corrupt``); digest mismatches are reported in ``problems``.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from archive import digests
from archive.headers import first as first_header


class RecordUnreadable(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class WarcRecord:
    warc_type: str
    warc_headers: list[tuple[str, str]]
    block: bytes
    http_status: int | None = None
    http_reason: str | None = None
    http_headers: list[tuple[str, str]] = field(default_factory=list)
    payload: bytes = b""
    block_digest_ok: bool | None = None
    payload_digest_ok: bool | None = None
    problems: list[str] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        return first_header(self.warc_headers, name)

    def http_header(self, name: str) -> str | None:
        return first_header(self.http_headers, name)

    @property
    def ok(self) -> bool:
        return not self.problems


def _parse_fields(text: bytes) -> list[tuple[str, str]]:
    out = []
    for line in text.split(b"\r\n"):
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            raise ValueError(f"malformed header line {line[:80]!r}")
        out.append((name.decode("latin-1").strip(), value.decode("utf-8", "replace").strip()))
    return out


def split_http(block: bytes) -> tuple[int | None, str | None, list[tuple[str, str]], bytes]:
    """(status, reason, headers, payload) of an ``application/http`` block."""
    end = block.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError("HTTP head has no blank line")
    head, payload = block[:end], block[end + 4:]
    status_line, _, rest = head.partition(b"\r\n")
    parts = status_line.decode("latin-1").split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    reason = parts[2] if len(parts) > 2 else ""
    return status, reason, _parse_fields(rest), payload


MAX_RECORD_BYTES = 1 << 30


def decompress_member(data: bytes, *, where: str, max_bytes: int = MAX_RECORD_BYTES) -> bytes:
    d = zlib.decompressobj(31)
    try:
        out = d.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise RecordUnreadable("corrupt", f"{where}: gzip data is damaged ({exc})") from exc
    if len(out) > max_bytes:
        raise RecordUnreadable("too_large", f"{where}: the record inflates past {max_bytes:,} bytes "
                                            "(CAVEAT_DECODE_MAX_BYTES); not decoded")
    if not d.eof:
        raise RecordUnreadable("truncated", f"{where}: the gzip member ends early (record cut short)")
    if d.unused_data:
        raise RecordUnreadable("corrupt", f"{where}: {len(d.unused_data)} bytes after the record's gzip member")
    return out


def parse_record(raw: bytes, *, where: str = "record") -> WarcRecord:
    end = raw.find(b"\r\n\r\n")
    if not raw.startswith(b"WARC/") or end < 0:
        raise RecordUnreadable("corrupt", f"{where}: not a WARC record header")
    try:
        fields = _parse_fields(raw[raw.find(b"\r\n") + 2:end] if raw.find(b"\r\n") < end else b"")
    except ValueError as exc:
        raise RecordUnreadable("corrupt", f"{where}: {exc}") from exc
    rec = WarcRecord(warc_type="", warc_headers=fields, block=b"")
    rec.warc_type = rec.header("WARC-Type") or ""
    try:
        declared = int(rec.header("Content-Length") or "")
    except ValueError:
        raise RecordUnreadable("corrupt", f"{where}: missing or bad Content-Length") from None
    body = raw[end + 4:]
    if len(body) < declared:
        raise RecordUnreadable("truncated", f"{where}: block has {len(body)} of {declared} bytes")
    rec.block = body[:declared]
    if body[declared:] != b"\r\n\r\n":
        rec.problems.append("record does not end with CRLF CRLF after its block")
    _check_digests(rec)
    return rec


def _digest_verdict(rec: WarcRecord, header: str, what: str, data: bytes) -> bool | None:
    """Whether ``data`` matches the digest in ``header`` (None when there is none); problems are noted."""
    value = rec.header(header)
    try:
        ok = digests.matches(value, lambda algorithm: hashlib.new(algorithm, data))
    except ValueError as exc:
        rec.problems.append(f"unreadable {header}: {exc}")
        return False
    if ok is False and value:
        rec.problems.append(f"{what} digest mismatch: header says {value}")
    return ok


def _check_digests(rec: WarcRecord) -> None:
    rec.block_digest_ok = _digest_verdict(rec, "WARC-Block-Digest", "block", rec.block)
    ctype = (rec.header("Content-Type") or "").lower()
    if ctype.startswith("application/http") and rec.warc_type in ("response", "revisit", "request"):
        try:
            rec.http_status, rec.http_reason, rec.http_headers, rec.payload = split_http(rec.block)
        except ValueError as exc:
            rec.problems.append(f"HTTP message unreadable: {exc}")
            return
    else:
        rec.payload = rec.block
    if rec.warc_type == "revisit":  # payload lives in the record it refers to
        return
    rec.payload_digest_ok = _digest_verdict(rec, "WARC-Payload-Digest", "payload", rec.payload)


def read_record(path: Path | str, offset: int, length: int, *, max_bytes: int = MAX_RECORD_BYTES,
                fetch: Callable[[int, int], bytes] | None = None) -> WarcRecord:
    """Read, decompress and check the record stored at ``offset`` (``length`` bytes) in ``path``.

    ``fetch(offset, length)``, when given, supplies the bytes instead of the local file (an object store's
    range read, for one); it raises ``FileNotFoundError`` when the file or object is gone."""
    path = Path(path)
    where = f"{path.name}@{offset}"
    try:
        if fetch is not None:
            data = fetch(offset, length)
        else:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(length)
    except FileNotFoundError:
        raise RecordUnreadable("missing", f"WARC file {path} is missing") from None
    return record_from_bytes(data, length, where=where, max_bytes=max_bytes)


def record_from_bytes(data: bytes, length: int, *, where: str, max_bytes: int = MAX_RECORD_BYTES) -> WarcRecord:
    """Check and parse ``data``, the ``length`` bytes read for one record (a gzip member or plain)."""
    if len(data) < length:
        raise RecordUnreadable(
            "truncated", f"{where}: file ends {length - len(data)} bytes before the record does (file truncated)")
    if not data.startswith(b"\x1f\x8b"):  # an uncompressed .warc: the record's bytes as they are
        return parse_record(data, where=where)
    return parse_record(decompress_member(data, where=where, max_bytes=max_bytes), where=where)
