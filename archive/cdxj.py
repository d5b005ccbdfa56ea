"""CDXJ index lines as pywb and ``cdxj-indexer`` read and write them.

``<surt> <14-digit timestamp> {"url": ..., "mime": ..., "status": ..., "digest": ..., "length": ...,
"offset": ..., "filename": ...}``, sorted by (surt, timestamp) so pywb can binary-search the file.
"""

from __future__ import annotations

import heapq
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable


@dataclass(frozen=True)
class CdxjRow:
    urlkey: str
    timestamp: str  # 14 digits
    url: str
    mime: str
    status: int | None
    digest: str | None
    length: int
    offset: int
    filename: str

    def line(self) -> str:
        data = {"url": self.url, "mime": self.mime}
        if self.status is not None:
            data["status"] = str(self.status)
        if self.digest:
            data["digest"] = self.digest
        data.update(length=str(self.length), offset=str(self.offset), filename=self.filename)
        return f"{self.urlkey} {self.timestamp} {json.dumps(data)}"


def parse_line(line: str) -> tuple[str, str, dict]:
    urlkey, ts, rest = line.rstrip("\n").split(" ", 2)
    return urlkey, ts, json.loads(rest)


def write_index(path: Path | str, rows: Iterable[CdxjRow]) -> int:
    """Write ``rows`` sorted to ``path`` atomically (temp file, fsync, rename); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = sorted(r.line() for r in rows)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return len(lines)


def merge_index(path: Path | str, rows: Iterable[CdxjRow]) -> int:
    """Merge ``rows`` into the sorted index at ``path`` (streaming, atomic); returns the line count."""
    path = Path(path)
    new = sorted(r.line() + "\n" for r in rows)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with open(path, encoding="utf-8") as old, open(tmp, "w", encoding="utf-8") as out:
        for line in heapq.merge((line for line in old if line.strip()), new):
            out.write(line)
            count += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return count


def read_index(path: Path | str) -> list[tuple[str, str, dict]]:
    with open(path, encoding="utf-8") as f:
        return [parse_line(line) for line in f if line.strip() and not line.startswith("!")]
