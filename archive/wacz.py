"""WACZ packages (Web Archive Collection Zipped, the layout of the 1.2.0 spec).

``archive/<name>.warc.gz`` (stored, not deflated, so offsets inside stay seekable),
``indexes/index.cdx.gz`` (sorted CDXJ in gzip blocks of :data:`BLOCK_LINES` lines) with its
``indexes/index.idx`` block index, ``pages/pages.jsonl`` (a ``json-pages-1.0`` header line, then one
page per line with ``url``, ``ts``, ``title`` and ``text``), and ``datapackage.json`` listing every
file with its ``sha256:`` hash and size, plus ``datapackage-digest.json`` hashing the package file.

``datapackage.json`` says ``"wacz_version": "1.1.1"``: that is the value the reference validator
(``wacz validate``, py-wacz) accepts; the 1.2.0 layout is otherwise followed as written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

WACZ_VERSION = "1.1.1"
BLOCK_LINES = 3000
PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages", "hasText": True}


@dataclass
class Page:
    url: str
    ts: str  # 17-digit timestamp
    title: str | None
    text: str | None
    id: str | None = None
    status: int | None = None
    mime: str | None = None

    def line(self) -> dict:
        d = {"id": self.id, "url": self.url, "ts": iso_ts(self.ts), "title": self.title or self.url}
        if self.text is not None:
            d["text"] = self.text
        if self.status is not None:
            d["status"] = self.status
        if self.mime:
            d["mime"] = self.mime
        return d


def iso_ts(ts: str) -> str:
    return f"{ts[0:4]}-{ts[4:6]}-{ts[6:8]}T{ts[8:10]}:{ts[10:12]}:{ts[12:14]}.{ts[14:17] or '000'}Z"


def zipnum(lines: list[str], filename: str = "index.cdx.gz") -> tuple[bytes, str]:
    """(gzip-block CDXJ data, matching ``index.idx`` text) for sorted CDXJ ``lines``."""
    data = bytearray()
    idx = [f'!meta 0 {json.dumps({"format": "cdxj-gzip-1.0", "filename": filename})}']
    for i in range(0, len(lines), BLOCK_LINES):
        block = lines[i:i + BLOCK_LINES]
        member = gzip.compress("".join(line + "\n" for line in block).encode("utf-8"), mtime=0)
        key, ts = block[0].split(" ", 2)[:2]
        idx.append(f'{key} {ts} {json.dumps({"offset": len(data), "length": len(member)})}')
        data += member
    return bytes(data), "\n".join(idx) + "\n"


def _hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
            size += len(chunk)
    return size, "sha256:" + h.hexdigest()


def write_wacz(out: Path | str, *, warcs: list[Path], cdxj_lines: list[str], pages: list[Page],
               title: str, description: str | None = None, software: str = "Caveat",
               main_page: Page | None = None, sign=None) -> dict:
    """Write the package atomically (temp file, then rename); returns the datapackage dict. ``sign``:
    a callable from the datapackage hash (``sha256:<hex>``) to the ``signedData`` of
    ``datapackage-digest.json`` (WACZ Signing and Verification), or None for an unsigned package."""
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    resources = []
    index_data, idx_text = zipnum(sorted(cdxj_lines))
    pages_text = json.dumps(PAGES_HEADER) + "\n" + "".join(json.dumps(p.line()) + "\n" for p in pages)
    with zipfile.ZipFile(tmp, "w", allowZip64=True) as z:
        for path in warcs:
            name = f"archive/{path.name}"
            z.write(path, name, compress_type=zipfile.ZIP_STORED)
            size, digest = _hash_file(path)
            resources.append({"name": path.name.lower(), "path": name, "hash": digest, "bytes": size})
        for name, data, how in (("indexes/index.cdx.gz", index_data, zipfile.ZIP_STORED),
                                ("indexes/index.idx", idx_text.encode("utf-8"), zipfile.ZIP_DEFLATED),
                                ("pages/pages.jsonl", pages_text.encode("utf-8"), zipfile.ZIP_DEFLATED)):
            z.writestr(zipfile.ZipInfo(name, _now_tuple()), data, compress_type=how)
            resources.append({"name": os.path.basename(name).lower(), "path": name,
                              "hash": "sha256:" + hashlib.sha256(data).hexdigest(), "bytes": len(data)})
        package = {
            "profile": "data-package", "title": title, "resources": resources,
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "wacz_version": WACZ_VERSION, "software": software,
        }
        if description:
            package["description"] = description
        if main_page is not None:
            package["mainPageURL"] = main_page.url
            package["mainPageDate"] = iso_ts(main_page.ts)
        package_bytes = json.dumps(package, indent=2).encode("utf-8")
        z.writestr(zipfile.ZipInfo("datapackage.json", _now_tuple()), package_bytes,
                   compress_type=zipfile.ZIP_DEFLATED)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(package_bytes).hexdigest()}
        if sign is not None:
            digest["signedData"] = sign(digest["hash"])
        z.writestr(zipfile.ZipInfo("datapackage-digest.json", _now_tuple()), json.dumps(digest, indent=2),
                   compress_type=zipfile.ZIP_DEFLATED)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, out)
    return package


def _now_tuple() -> tuple:
    return tuple(datetime.now(timezone.utc).timetuple()[:6])
