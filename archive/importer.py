"""Read WARC files written by other tools, record by record, checking every digest.

:func:`scan_warc` walks a ``.warc.gz`` (one gzip member per record, or several records per member,
or one member for the whole file) or an uncompressed ``.warc`` and yields a :class:`Scanned` item
per record: the parsed record with its digests recomputed (``archive.reader.parse_record``), or a
problem saying what is wrong there and where. Damage does not stop the walk: after a corrupt gzip
member it resynchronises on the next gzip header, so the good records after a bad one still come
through; a file cut short reports its last, partial record.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from archive.indexer import DEFAULT_MAX_RECORD, _inflate_member
from archive.reader import RecordUnreadable, WarcRecord, parse_record

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 1024 * 1024
_CLEN = re.compile(rb"\r\nContent-Length:[ \t]*(\d+)", re.I)


@dataclass
class Scanned:
    offset: int  # where the record (or its gzip member) starts in the file
    record: WarcRecord | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.record is not None and not self.record.problems and self.problem is None

    def describe(self) -> str:
        rec = self.record
        what = ""
        if rec is not None:
            what = f" {rec.warc_type} {rec.header('WARC-Target-URI') or ''} {rec.header('WARC-Record-ID') or ''}"
        why = self.problem or "; ".join(rec.problems if rec else [])
        return f"offset {self.offset}:{what.rstrip()}: {why}"


def warc_date_to_ts(value: str | None) -> str | None:
    """17-digit timestamp of a WARC-Date (``2026-12-01T00:49:13Z`` or with a fraction)."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z?$", (value or "").strip())
    if not m:
        return None
    frac = (m.group(7) or "").ljust(3, "0")[:3]
    try:
        datetime(*(int(m.group(i)) for i in range(1, 7)), tzinfo=timezone.utc)
    except ValueError:
        return None
    return "".join(m.group(i) for i in range(1, 7)) + frac


def _split(data: bytes, base: int, *, label: str) -> Iterator[Scanned]:
    """Records laid end to end in decompressed ``data`` (``base``: file offset reported for them)."""
    pos, n = 0, len(data)
    while pos < n:
        while pos < n and data[pos:pos + 1] in (b"\r", b"\n"):
            pos += 1
        if pos >= n:
            return
        where = f"{label}@{base if base >= 0 else pos}"
        head_end = data.find(b"\r\n\r\n", pos)
        if data[pos:pos + 5] != b"WARC/" or head_end < 0:
            yield Scanned(base if base >= 0 else pos, problem="not a WARC record header (garbage or cut-off data)")
            return
        m = _CLEN.search(data, pos, head_end + 2)
        if not m:
            yield Scanned(base if base >= 0 else pos, problem="WARC header has no Content-Length")
            return
        end = head_end + 4 + int(m.group(1)) + 4
        try:
            rec = parse_record(bytes(data[pos:end]), where=where)
        except RecordUnreadable as exc:
            yield Scanned(base if base >= 0 else pos, problem=f"{exc.kind}: {exc.message}")
            return
        yield Scanned(base if base >= 0 else pos, record=rec)
        pos = end


def scan_warc(path: Path | str, *, max_record_bytes: int = DEFAULT_MAX_RECORD) -> Iterator[Scanned]:
    """Every record of ``path``; a gzip member that inflates past ``max_record_bytes`` is reported and
    skipped without keeping its bytes (a decompression bomb cannot exhaust memory)."""
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        yield Scanned(0, problem="the file is empty")
        return
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if not data[:3] == GZIP_MAGIC:
            yield from _split(data, -1, label=path.name)
            return
        pos = 0
        while pos < size:
            state, end, out = _inflate_member(data, pos, size, max_record_bytes)
            if state == "bad":
                nxt = data.find(GZIP_MAGIC, pos + 1)
                yield Scanned(pos, problem=f"damaged gzip data ({out.decode(errors='replace')}); skipped to "
                                           f"{'offset ' + str(nxt) if nxt >= 0 else 'the end of the file'}")
                if nxt < 0:
                    return
                pos = nxt
                continue
            if state == "cut":
                if out:
                    yield from (s for s in _split(out, pos, label=path.name) if s.record is not None)
                yield Scanned(pos, problem="truncated: the file ends inside this record's gzip member "
                                           "(the file was cut short); records before it are kept")
                return
            if state == "big":
                yield Scanned(pos, problem=f"the record inflates past {max_record_bytes:,} bytes "
                                           "(CAVEAT_DECODE_MAX_BYTES); skipped without decoding it further")
            else:
                yield from _split(out, pos, label=path.name)
            pos = end
            while pos < size and data[pos:pos + 1] == b"\x00":
                pos += 1
