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
        if self._pos == 0:
            fields = [("software", software), ("format", "WARC File Format 1.1"),
                      ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")]
            self.write_warcinfo(fields + list(info or []))

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

    def write_record(self, warc_type: str, fields: list[tuple[str, str]], *, content_type: str | None,
                     head: bytes = b"", payload: BinaryIO | bytes | None = None, payload_length: int = 0,
                     payload_digest: str | None = None, ts: str, record_id: str | None = None) -> Written:
        """Append one record whose block is ``head`` followed by ``payload``."""
        record_id = record_id or new_record_id()
        block = hashlib.sha256(head)
        for chunk in _payload_chunks(payload):
            block.update(chunk)
        block_digest = digests.label(block.digest())
        all_fields = list(fields) + [("WARC-Block-Digest", block_digest)]
        if payload_digest:
            all_fields.append(("WARC-Payload-Digest", payload_digest))
        header = record_header(warc_type, record_id, ts, all_fields, content_type, len(head) + payload_length)

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
                       record_id: str | None = None) -> Written:
        fields = [("WARC-Target-URI", url), ("WARC-IP-Address", ip)]
        return self.write_record("response", fields, content_type="application/http; msgtype=response",
                                 head=http_head, payload=payload, payload_length=payload_length,
                                 payload_digest=digests.label(payload_sha256), ts=ts, record_id=record_id)

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
