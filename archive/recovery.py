"""Torn-tail detection for ``.warc.gz`` files written one gzip member per record.

A process killed mid-write can leave a partial gzip member at the end of the file it was appending
to. :func:`scan_members` walks the members from a known-good offset; :func:`truncate_tail` cuts the
file back to a chosen offset and fsyncs, returning what it removed so the caller can say so.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

READ = 1024 * 1024


@dataclass
class TailScan:
    start: int
    members: list[tuple[int, int]] = field(default_factory=list)  # complete (offset, length)
    good_end: int = 0  # end of the last complete member
    file_size: int = 0

    @property
    def torn_bytes(self) -> int:
        return self.file_size - self.good_end


def scan_members(path: Path | str, start: int = 0) -> TailScan:
    """Find every complete gzip member from ``start`` on; stop at the first damaged or partial one."""
    path = Path(path)
    size = path.stat().st_size
    scan = TailScan(start=start, good_end=min(start, size), file_size=size)
    if start >= size:
        return scan
    with open(path, "rb") as f:
        f.seek(start)
        offset = start
        pending = b""
        d = zlib.decompressobj(31)
        consumed = 0  # compressed bytes fed to the current member
        while True:
            chunk = pending or f.read(READ)
            pending = b""
            if not chunk:
                break  # EOF inside (or exactly at the start of) a member
            try:
                d.decompress(chunk)
                while d.unconsumed_tail:  # pragma: no cover - no max_length, kept for safety
                    d.decompress(d.unconsumed_tail)
            except zlib.error:
                break
            if d.eof:
                used = len(chunk) - len(d.unused_data)
                length = consumed + used
                scan.members.append((offset, length))
                offset += length
                scan.good_end = offset
                pending = d.unused_data
                d = zlib.decompressobj(31)
                consumed = 0
            else:
                consumed += len(chunk)
    return scan


def truncate_tail(path: Path | str, keep_until: int) -> int:
    """Cut ``path`` to ``keep_until`` bytes and fsync it; returns how many bytes were removed."""
    path = Path(path)
    size = path.stat().st_size
    if size <= keep_until:
        return 0
    fd = os.open(path, os.O_RDWR)
    try:
        os.ftruncate(fd, keep_until)
        os.fsync(fd)
    finally:
        os.close(fd)
    return size - keep_until


def keep_aside(path: Path | str, offset: int) -> Path:
    """Copy the bytes of ``path`` from ``offset`` on into a new ``<name>.<n>.torn`` file beside it,
    fsynced, so cutting them loses nothing; returns the new file."""
    path = Path(path)
    n = 0
    while (target := path.with_name(f"{path.name}.{n}.torn")).exists():
        n += 1
    with open(path, "rb") as src, open(target, "xb") as out:
        src.seek(offset)
        while chunk := src.read(READ):
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return target
