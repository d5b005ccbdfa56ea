"""WARC/1.1 records as ``.warc.gz`` gzip members: built anywhere, appended by one writer.

A record is built in two steps so the expensive part can run away from the file: :func:`build_record`
computes the digests and compresses the block (in a fetch thread or a worker process), and
:meth:`WarcWriter.append` writes the finished bytes. A :class:`BuiltRecord` keeps its WARC header
apart from its compressed payload, so the writer can re-date it (:meth:`BuiltRecord.at`) without
compressing the payload again.

Each member is ``[gzip header][deflate(WARC header + block head), sync-flushed][deflate(payload),
sync-flushed][final stored block: CRLF CRLF][crc32, size]``: one ordinary gzip member that every
reader decompresses in one go. Nothing is durable until :meth:`WarcWriter.sync` (flush + fsync);
callers index records only after that. A failed append truncates the file back to where the record
started, so the file never holds half a record written by this process (a killed process can leave
one: see ``archive.recovery``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from archive import digests
from archive.timestamps import ts17, warc_date

from zlib_ng import zlib_ng as _deflate  # ~1.4x faster than zlib at the same level and size; has crc32_combine

CHUNK = 256 * 1024
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
WARC_VERSION = "WARC/1.1"
RESPONSE_TYPE = "application/http; msgtype=response"
REQUEST_TYPE = "application/http; msgtype=request"

# gzip member header: magic, deflate, no flags, no mtime, no extra flags, OS unknown
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
# the record's closing CRLF CRLF as a final stored deflate block (BFINAL=1, LEN=4, NLEN=~4)
FINAL_CRLF2 = b"\x01\x04\x00\xfb\xff\r\n\r\n"
_CRLF2_CRC = _deflate.crc32(b"\r\n\r\n")


@dataclass(frozen=True)
class Written:
    record_id: str
    offset: int
    length: int  # bytes of the gzip member in the file
    block_digest: str
    payload_digest: str | None = None


def new_record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _clean(value: str) -> str:
    return str(value).replace("\r", " ").replace("\n", " ")


def warc_header(warc_type: str, record_id: str, ts: str, fields: tuple[tuple[str, str], ...], block_digest: str,
                payload_digest: str | None, content_type: str | None, content_length: int) -> bytes:
    """A record's WARC header: type, id, date, ``fields``, digests, Content-Type and -Length."""
    lines = [WARC_VERSION, f"WARC-Type: {warc_type}", f"WARC-Record-ID: {record_id}", f"WARC-Date: {warc_date(ts)}"]
    lines += [f"{k}: {_clean(v)}" for k, v in fields]
    lines.append(f"WARC-Block-Digest: {block_digest}")
    if payload_digest:
        lines.append(f"WARC-Payload-Digest: {payload_digest}")
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    lines.append(f"Content-Length: {content_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _segment(data: bytes, level: int) -> bytes:
    """Raw deflate of ``data`` ending on a byte boundary and not final (sync flush)."""
    comp = _deflate.compressobj(level, _deflate.DEFLATED, -15)
    return comp.compress(data) + comp.flush(_deflate.Z_SYNC_FLUSH)


def _prefix(data: bytes, level: int) -> dict:
    """A record's first part (WARC header + block head), compressed, as BuiltRecord fields."""
    return {"prefix": _segment(data, level), "prefix_crc": _deflate.crc32(data), "prefix_length": len(data)}


@dataclass(frozen=True)
class BuiltRecord:
    """One record, compressed and digested, not yet in any file. The payload's deflate segment is
    either in memory (``payload``) or, for large bodies, in the file ``payload_path``, which
    :meth:`WarcWriter.append` copies and then deletes."""

    warc_type: str
    record_id: str
    ts: str
    fields: tuple[tuple[str, str], ...]  # WARC fields besides type, id, date, digests and length
    content_type: str | None
    head: bytes  # the block's first part (HTTP status line and headers, or the whole block)
    block_digest: str
    payload_digest: str | None
    payload_length: int
    payload_crc: int
    payload: bytes  # deflate segment of the payload (b"" when it is in payload_path or empty)
    payload_path: str | None
    payload_deflated_length: int
    level: int
    prefix: bytes = b""  # deflate segment of WARC header + head
    prefix_crc: int = 0
    prefix_length: int = 0

    def at(self, ts: str) -> "BuiltRecord":
        """The same record dated ``ts`` (only its small header part is compressed again)."""
        if ts == self.ts:
            return self
        header = warc_header(self.warc_type, self.record_id, ts, self.fields, self.block_digest, self.payload_digest,
                             self.content_type, len(self.head) + self.payload_length)
        return replace(self, ts=ts, **_prefix(header + self.head, self.level))

    @property
    def member_length(self) -> int:
        return len(GZIP_HEADER) + len(self.prefix) + self.payload_deflated_length + len(FINAL_CRLF2) + 8

    def trailer(self) -> bytes:
        crc = _deflate.crc32_combine(self.prefix_crc, self.payload_crc, self.payload_length)
        crc = _deflate.crc32_combine(crc, _CRLF2_CRC, 4)
        size = (self.prefix_length + self.payload_length + 4) & 0xFFFFFFFF
        return FINAL_CRLF2 + crc.to_bytes(4, "little") + size.to_bytes(4, "little")

    def discard(self) -> None:
        """Remove the spooled payload file, if any (a record that will not be appended)."""
        if self.payload_path:
            try:
                os.unlink(self.payload_path)
            except FileNotFoundError:
                pass


def build_record(warc_type: str, fields: list[tuple[str, str | None]], *, content_type: str | None, ts: str,
                 head: bytes = b"", payload: BinaryIO | bytes | None = None, payload_length: int = 0,
                 payload_digest: str | None = None, record_id: str | None = None, level: int = 6,
                 spool_dir: Path | str | None = None, block_sha256: bytes | None = None) -> BuiltRecord:
    """Digest and compress one record whose block is ``head`` followed by ``payload``.

    ``payload`` may be bytes (compressed in memory) or a binary file of ``payload_length`` bytes; a
    file is compressed in chunks into a temporary file in ``spool_dir`` (memory stays bounded).
    ``block_sha256``: the block's sha256 when the caller already took it (while the bytes streamed in)."""
    level = max(0, min(9, int(level)))
    record_id = record_id or new_record_id()
    block = hashlib.sha256(head) if block_sha256 is None else None  # None: the caller took it already
    crc = 0
    seg = b""
    path = None
    if isinstance(payload, (bytes, bytearray, memoryview)):
        payload = bytes(payload)
        if len(payload) != payload_length:
            raise ValueError(f"payload is {len(payload)} bytes, not the {payload_length} declared")
        if block is not None:
            block.update(payload)
        crc = _deflate.crc32(payload)
        seg = _segment(payload, level) if payload else b""
        seg_length = len(seg)
    elif payload is not None and payload_length:
        fd, path = tempfile.mkstemp(prefix="record-", suffix=".deflate", dir=spool_dir)
        seen = 0
        try:
            with os.fdopen(fd, "wb") as out:
                comp = _deflate.compressobj(level, _deflate.DEFLATED, -15)
                payload.seek(0)
                while chunk := payload.read(CHUNK):
                    seen += len(chunk)
                    if block is not None:
                        block.update(chunk)
                    crc = _deflate.crc32(chunk, crc)
                    out.write(comp.compress(chunk))
                out.write(comp.flush(_deflate.Z_SYNC_FLUSH))
                seg_length = out.tell()
            if seen != payload_length:
                raise ValueError(f"payload is {seen} bytes, not the {payload_length} declared")
        except BaseException:
            os.unlink(path)
            raise
    else:
        if payload_length:
            raise ValueError("payload_length given without a payload")
        seg_length = 0
    kept = tuple((k, v) for k, v in fields if v is not None)
    block_digest = digests.label(block.digest() if block is not None else block_sha256)
    prefix = warc_header(warc_type, record_id, ts, kept, block_digest, payload_digest, content_type,
                          len(head) + payload_length) + head
    return BuiltRecord(warc_type=warc_type, record_id=record_id, ts=ts, fields=kept, content_type=content_type,
                       head=head, block_digest=block_digest, payload_digest=payload_digest,
                       payload_length=payload_length, payload_crc=crc, payload=seg, payload_path=path,
                       payload_deflated_length=seg_length, level=level, **_prefix(prefix, level))


# -- the record kinds Caveat writes -----------------------------------------------------------------
def build_response(url: str, ts: str, http_head: bytes, payload: BinaryIO | bytes | None, payload_length: int,
                   payload_sha256: bytes, *, ip: str | None = None, record_id: str | None = None, level: int = 6,
                   spool_dir: Path | str | None = None, block_sha256: bytes | None = None) -> BuiltRecord:
    return build_record("response", [("WARC-Target-URI", url), ("WARC-IP-Address", ip)],
                        content_type=RESPONSE_TYPE, ts=ts, head=http_head, payload=payload,
                        payload_length=payload_length, payload_digest=digests.label(payload_sha256),
                        record_id=record_id, level=level, spool_dir=spool_dir, block_sha256=block_sha256)


def build_revisit(url: str, ts: str, http_head: bytes, payload_sha256: bytes, *, refers_to: str, refers_to_uri: str,
                  refers_to_ts: str, ip: str | None = None, record_id: str | None = None,
                  level: int = 6) -> BuiltRecord:
    fields = [("WARC-Target-URI", url), ("WARC-IP-Address", ip), ("WARC-Profile", REVISIT_PROFILE),
              ("WARC-Refers-To", refers_to), ("WARC-Refers-To-Target-URI", refers_to_uri),
              ("WARC-Refers-To-Date", warc_date(refers_to_ts))]
    return build_record("revisit", fields, content_type=RESPONSE_TYPE, ts=ts, head=http_head,
                        payload_digest=digests.label(payload_sha256), record_id=record_id, level=level)


def build_request(url: str, ts: str, http_head: bytes, *, concurrent_to: str, ip: str | None = None,
                  record_id: str | None = None, level: int = 6) -> BuiltRecord:
    fields = [("WARC-Target-URI", url), ("WARC-IP-Address", ip), ("WARC-Concurrent-To", concurrent_to)]
    return build_record("request", fields, content_type=REQUEST_TYPE, ts=ts, head=http_head,
                        record_id=record_id, level=level)


def build_warcinfo(filename: str, fields: list[tuple[str, str]], ts: str, level: int = 6) -> BuiltRecord:
    body = "".join(f"{k}: {_clean(v)}\r\n" for k, v in fields).encode("utf-8")
    return build_record("warcinfo", [("WARC-Filename", filename)], content_type="application/warc-fields",
                        ts=ts, head=body, level=level)


class WarcWriter:
    """Appends records to one ``.warc.gz`` file, starting it with a ``warcinfo`` record if empty."""

    def __init__(self, path: Path | str, *, gzip_level: int = 6, software: str = "Caveat",
                 info: list[tuple[str, str]] | None = None):
        self.path = Path(path)
        self.level = max(0, min(9, int(gzip_level)))
        # Unbuffered: a failed write (disk full) leaves no bytes in a buffer that a later flush could
        # append after the truncation, and truncate() needs no flush that could fail the same way.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._pos = os.lseek(self._fd, 0, os.SEEK_END)
        self._info_end = 0
        self.appended: list[Written] = []  # records appended and not yet taken (the tamper-evident log's)
        self._dir_synced = self._pos > 0  # a new file's directory entry must be made durable too
        if self._pos == 0:
            fields = [("software", software), ("format", "WARC File Format 1.1"),
                      ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")]
            self.append(build_warcinfo(self.path.name, fields + list(info or []),
                                       ts17(datetime.now(timezone.utc)), self.level))
            self._info_end = self._pos

    @property
    def has_records(self) -> bool:
        """Whether the file holds anything besides the warcinfo record this writer started it with."""
        return self._pos > self._info_end

    @property
    def size(self) -> int:
        return self._pos

    def append(self, rec: BuiltRecord) -> Written:
        """Write one built record as one gzip member; a spooled payload file is consumed (deleted)."""
        start = self._pos
        try:
            self._write(GZIP_HEADER + rec.prefix)
            if rec.payload_path:
                with open(rec.payload_path, "rb") as src:
                    while chunk := src.read(CHUNK):
                        self._write(chunk)
            elif rec.payload:
                self._write(rec.payload)
            self._write(rec.trailer())
        except BaseException:
            self.truncate(start)
            raise
        finally:
            rec.discard()
        self._pos = start + rec.member_length
        done = Written(rec.record_id, start, rec.member_length, rec.block_digest, rec.payload_digest)
        self.appended.append(done)
        return done

    def take_appended(self) -> list[Written]:
        """The records appended since the last call (those a truncation cut off are not among them)."""
        taken, self.appended = self.appended, []
        return taken

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    # -- convenience: build and append in one call ----------------------------------------------
    def write_response(self, url: str, ts: str, http_head: bytes, payload: BinaryIO | bytes | None,
                       payload_length: int, payload_sha256: bytes, *, ip: str | None = None,
                       record_id: str | None = None) -> Written:
        return self.append(build_response(url, ts, http_head, payload, payload_length, payload_sha256, ip=ip,
                                          record_id=record_id, level=self.level, spool_dir=self.path.parent))

    def write_revisit(self, url: str, ts: str, http_head: bytes, payload_sha256: bytes, *, refers_to: str,
                      refers_to_uri: str, refers_to_ts: str, ip: str | None = None,
                      record_id: str | None = None) -> Written:
        return self.append(build_revisit(url, ts, http_head, payload_sha256, refers_to=refers_to,
                                         refers_to_uri=refers_to_uri, refers_to_ts=refers_to_ts, ip=ip,
                                         record_id=record_id, level=self.level))

    def write_request(self, url: str, ts: str, http_head: bytes, *, concurrent_to: str,
                      ip: str | None = None) -> Written:
        return self.append(build_request(url, ts, http_head, concurrent_to=concurrent_to, ip=ip, level=self.level))

    # -- durability ---------------------------------------------------------------------------
    def sync(self) -> None:
        """fsync: every record written so far survives a crash."""
        os.fsync(self._fd)
        if not self._dir_synced:
            fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._dir_synced = True

    def truncate(self, offset: int) -> None:
        os.ftruncate(self._fd, offset)
        self._pos = offset
        self.appended = [w for w in self.appended if w.offset + w.length <= offset]

    def close(self) -> None:
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> "WarcWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
