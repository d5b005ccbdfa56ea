"""An append-only ``.warc.gz`` writer: WARC/1.1, one gzip member per record, sha256 digests.

Each ``write_*`` call appends one complete gzip member and returns where it landed. Nothing is
durable until :meth:`WarcWriter.sync` (flush + fsync); callers index records only after that.
A failed write truncates the file back to where the record started, so the file never holds half a
record written by this process (a killed process can leave one: see ``archive.recovery``).
"""

from __future__ import annotations

import hashlib
import io
import os
import uuid
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Iterable

from archive import digests
from archive.timestamps import ts17, warc_date

try:  # zlib-ng is ~1.4x faster than zlib at the same level and output size
    from zlib_ng import zlib_ng as _deflate
except ImportError:  # pragma: no cover - optional speed-up
    _deflate = zlib

CHUNK = 256 * 1024
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
WARC_VERSION = b"WARC/1.1"


@dataclass(frozen=True)
class PreparedBlock:
    """A response block's payload compressed ahead of time (e.g. in a fetch thread, where the
    compressor runs without holding the GIL): a raw deflate segment ending on a byte boundary and not
    final, so the writer can place it inside a record's gzip member after compressing the header."""

    block_digest: str  # sha256 label of head + payload
    deflated: bytes
    payload_length: int
    payload_crc: int  # crc32 of the payload, combined into the member's crc by the writer


def prepare_block(head: bytes, payload: bytes, level: int = 6) -> PreparedBlock:
    block = hashlib.sha256(head)
    block.update(payload)
    comp = _deflate.compressobj(max(0, min(9, level)), _deflate.DEFLATED, -15)
    deflated = comp.compress(payload) + comp.flush(_deflate.Z_SYNC_FLUSH)
    return PreparedBlock(digests.label(block.digest()), deflated, len(payload), _deflate.crc32(payload))


# gzip member header: magic, deflate, no flags, no mtime, no extra flags, OS unknown
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
# the record's closing CRLF CRLF as a final stored deflate block (BFINAL=1, LEN=4, NLEN=~4)
FINAL_CRLF2 = b"\x01\x04\x00\xfb\xff\r\n\r\n"
_CRLF2_CRC = zlib.crc32(b"\r\n\r\n")


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


def record_header(warc_type: str, record_id: str, ts: str, fields: list[tuple[str, str]],
                  content_type: str | None, content_length: int) -> bytes:
    lines = [WARC_VERSION.decode(), f"WARC-Type: {warc_type}", f"WARC-Record-ID: {record_id}",
             f"WARC-Date: {warc_date(ts)}"]
    lines += [f"{k}: {_clean(v)}" for k, v in fields if v is not None]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    lines.append(f"Content-Length: {content_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _payload_chunks(payload: BinaryIO | bytes | None) -> Iterable[bytes]:
    if payload is None:
        return
    if isinstance(payload, (bytes, bytearray, memoryview)):
        if len(payload):
            yield bytes(payload)
        return
    payload.seek(0)
    while True:
        chunk = payload.read(CHUNK)
        if not chunk:
            return
        yield chunk


class WarcWriter:
    """Appends records to one ``.warc.gz`` file, starting it with a ``warcinfo`` record if empty."""

    def __init__(self, path: Path | str, *, gzip_level: int = 6, software: str = "Caveat",
                 info: list[tuple[str, str]] | None = None):
        self.path = Path(path)
        self.level = max(0, min(9, int(gzip_level)))
        self._f = open(self.path, "ab")
        self._pos = self._f.seek(0, io.SEEK_END)
        self._info_end = 0
        self._dir_synced = self._pos > 0  # a new file's directory entry must be made durable too
        if self._pos == 0:
            fields = [("software", software), ("format", "WARC File Format 1.1"),
                      ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")]
            self.write_warcinfo(fields + list(info or []))
            self._info_end = self._pos

    @property
    def has_records(self) -> bool:
        """Whether the file holds anything besides the warcinfo record this writer started it with."""
        return self._pos > self._info_end

    @property
    def size(self) -> int:
        return self._pos

    # -- low level ----------------------------------------------------------------------------
    def _member(self, parts: Iterable[bytes]) -> tuple[int, int]:
        start = self._pos
        comp = _deflate.compressobj(self.level, _deflate.DEFLATED, 31)
        written = 0
        try:
            for part in parts:
                out = comp.compress(part)
                if out:
                    self._f.write(out)
                    written += len(out)
            out = comp.flush()
            self._f.write(out)
            written += len(out)
        except BaseException:
            self.truncate(start)
            raise
        self._pos = start + written
        return start, written

    def _member_prepared(self, prefix: bytes, prepared: PreparedBlock) -> tuple[int, int]:
        """One gzip member: [header][deflate(prefix), sync-flushed][prepared payload][final CRLFCRLF]."""
        start = self._pos
        head_comp = _deflate.compressobj(self.level, _deflate.DEFLATED, -15)
        n = prepared.payload_length
        crc = _deflate.crc32_combine(_deflate.crc32(prefix), prepared.payload_crc, n)
        crc = _deflate.crc32_combine(crc, _CRLF2_CRC, 4)
        size = (len(prefix) + n + 4) & 0xFFFFFFFF
        parts = [GZIP_HEADER, head_comp.compress(prefix) + head_comp.flush(_deflate.Z_SYNC_FLUSH),
                 prepared.deflated, FINAL_CRLF2, crc.to_bytes(4, "little") + size.to_bytes(4, "little")]
        try:
            for part in parts:
                self._f.write(part)
        except BaseException:
            self.truncate(start)
            raise
        length = sum(len(p) for p in parts)
        self._pos = start + length
        return start, length

    def write_record(self, warc_type: str, fields: list[tuple[str, str]], *, content_type: str | None,
                     head: bytes = b"", payload: BinaryIO | bytes | None = None, payload_length: int = 0,
                     payload_digest: str | None = None, ts: str, record_id: str | None = None,
                     prepared: PreparedBlock | None = None) -> Written:
        """Append one record whose block is ``head`` followed by ``payload``. With ``prepared`` (from
        :func:`prepare_block` over the same head and payload bytes) the payload is not compressed again."""
        record_id = record_id or new_record_id()
        if prepared is not None:
            block_digest = prepared.block_digest
        else:
            block = hashlib.sha256(head)
            for chunk in _payload_chunks(payload):
                block.update(chunk)
            block_digest = digests.label(block.digest())
        all_fields = list(fields) + [("WARC-Block-Digest", block_digest)]
        if payload_digest:
            all_fields.append(("WARC-Payload-Digest", payload_digest))
        header = record_header(warc_type, record_id, ts, all_fields, content_type, len(head) + payload_length)
        if prepared is not None:
            if payload_length != prepared.payload_length:
                raise ValueError("prepared block does not match the payload it is written with")
            offset, length = self._member_prepared(header + head, prepared)
            return Written(record_id, offset, length, block_digest, payload_digest)

        def parts():
            yield header + head
            yield from _payload_chunks(payload)
            yield b"\r\n\r\n"

        offset, length = self._member(parts())
        return Written(record_id, offset, length, block_digest, payload_digest)

    # -- record kinds -------------------------------------------------------------------------
    def write_warcinfo(self, fields: list[tuple[str, str]], ts: str | None = None) -> Written:
        body = "".join(f"{k}: {_clean(v)}\r\n" for k, v in fields).encode("utf-8")
        return self.write_record("warcinfo", [("WARC-Filename", self.path.name)],
                                 content_type="application/warc-fields", head=body,
                                 ts=ts or ts17(datetime.now(timezone.utc)))

    def write_response(self, url: str, ts: str, http_head: bytes, payload: BinaryIO | bytes | None,
                       payload_length: int, payload_sha256: bytes, *, ip: str | None = None,
                       record_id: str | None = None, prepared: PreparedBlock | None = None) -> Written:
        fields = [("WARC-Target-URI", url), ("WARC-IP-Address", ip)]
        return self.write_record("response", fields, content_type="application/http; msgtype=response",
                                 head=http_head, payload=payload, payload_length=payload_length,
                                 payload_digest=digests.label(payload_sha256), ts=ts, record_id=record_id,
                                 prepared=prepared)

    def write_revisit(self, url: str, ts: str, http_head: bytes, payload_sha256: bytes, *,
                      refers_to: str, refers_to_uri: str, refers_to_ts: str, ip: str | None = None,
                      record_id: str | None = None) -> Written:
        fields = [("WARC-Target-URI", url), ("WARC-IP-Address", ip), ("WARC-Profile", REVISIT_PROFILE),
                  ("WARC-Refers-To", refers_to), ("WARC-Refers-To-Target-URI", refers_to_uri),
                  ("WARC-Refers-To-Date", warc_date(refers_to_ts))]
        return self.write_record("revisit", fields, content_type="application/http; msgtype=response",
                                 head=http_head, payload_digest=digests.label(payload_sha256), ts=ts,
                                 record_id=record_id)

    def write_request(self, url: str, ts: str, http_head: bytes, *, concurrent_to: str,
                      ip: str | None = None) -> Written:
        fields = [("WARC-Target-URI", url), ("WARC-IP-Address", ip), ("WARC-Concurrent-To", concurrent_to)]
        return self.write_record("request", fields, content_type="application/http; msgtype=request",
                                 head=http_head, ts=ts)

    # -- durability ---------------------------------------------------------------------------
    def sync(self) -> None:
        """Flush Python's buffer and fsync: every record written so far survives a crash."""
        self._f.flush()
        os.fsync(self._f.fileno())
        if not self._dir_synced:
            fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._dir_synced = True

    def truncate(self, offset: int) -> None:
        self._f.flush()
        os.ftruncate(self._f.fileno(), offset)
        self._f.seek(offset)
        self._pos = offset

    def close(self) -> None:
        if not self._f.closed:
            self.sync()
            self._f.close()

    def __enter__(self) -> "WarcWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
