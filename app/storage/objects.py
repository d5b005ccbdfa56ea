"""Where the archive's WARC files live: the local spool (``<data_dir>/warcs``) and, with
``CAVEAT_ARCHIVE_URL=s3://bucket/prefix``, an S3-compatible bucket (docs/storage.md).

Every read of a record goes through :func:`read_stored` (or :meth:`ArchiveStore.read_range`): the local file
while it is there, else a ``Range`` GET of exactly the record's bytes from the object, through a bounded
on-disk cache of recent ranges. :meth:`ArchiveStore.upload` puts a sealed file as an immutable object (never
over another: HEAD first, then ``If-None-Match: *``; the store checks its SHA-256, a HEAD reads size and digest
back), records it in ``archive_objects``, and only then removes the local copy. Uses config, models and db.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import urllib3
from botocore.exceptions import ClientError

from app.config import Settings
from app.db import Database
from app.models import ArchiveObject, utcnow
from archive.reader import MAX_RECORD_BYTES, RecordUnreadable, WarcRecord, read_record

READ = 1 << 20
PRESIGN_SECONDS = 3600
_MISSING = ("NoSuchKey", "404", "NotFound", "NoSuchBucket")


class ObjectConflict(Exception):
    """The bucket holds an object of that name with other bytes: nothing is overwritten, the local file is kept."""


@dataclass
class ObjectInfo:
    size: int
    sha256_b64: str | None   # the store's own SHA-256 of the object (None: the store keeps none)
    etag: str | None


def parse_archive_url(url: str) -> tuple[str, str]:
    """(bucket, key prefix ending in '/' or '') of ``s3://bucket/prefix``."""
    u = urlparse(url)
    if u.scheme != "s3" or not u.netloc:
        raise ValueError(f"CAVEAT_ARCHIVE_URL={url!r}: use s3://bucket or s3://bucket/prefix (unset: the local "
                         "data folder)")
    prefix = u.path.strip("/")
    return u.netloc, (prefix + "/" if prefix else "")


def file_digests(path: Path) -> tuple[int, str, str]:
    """(size, SHA-256 hex, MD5 hex) of a file, in one pass."""
    sha, md5, size = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
    with open(path, "rb") as f:
        while chunk := f.read(READ):
            sha.update(chunk)
            md5.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest(), md5.hexdigest()


def _safe(name: str) -> str:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise FileNotFoundError(name)   # index rows name a file, never a path
    return name


class Bucket:
    """The S3 calls Caveat makes, on one bucket and key prefix."""

    def __init__(self, settings: Settings):
        import boto3  # noqa: PLC0415 (heavy optional import: boto3 (0.3 s) loads only when CAVEAT_ARCHIVE_URL names a bucket)
        from botocore.config import Config  # noqa: PLC0415 (heavy optional import: with boto3)

        self.name, self.prefix = parse_archive_url(settings.archive_url or "")
        cfg = Config(s3={"addressing_style": "path"} if settings.s3_endpoint else {},
                     retries={"max_attempts": 4, "mode": "standard"}, max_pool_connections=32,
                     connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
                     request_checksum_calculation="when_required", response_checksum_validation="when_required")
        self.client = boto3.client("s3", endpoint_url=settings.s3_endpoint or None, config=cfg)
        self.http = urllib3.PoolManager(
            maxsize=32, timeout=urllib3.Timeout(connect=settings.connect_timeout, read=settings.read_timeout),
            retries=urllib3.Retry(total=3, status=2, status_forcelist=(500, 502, 503, 504), allowed_methods={"GET"},
                                  raise_on_status=False, backoff_factor=0.2))
        self._urls: dict[str, tuple[float, str]] = {}

    def key(self, name: str) -> str:
        return self.prefix + _safe(name)

    def _url(self, name: str) -> str:
        """A presigned GET URL of the object, reused for half its life (a range read is then one plain HTTP
        request on a kept-alive connection, without botocore's per-call pipeline)."""
        now = time.monotonic()
        hit = self._urls.get(name)
        if hit is not None and hit[0] > now:
            return hit[1]
        url = self.client.generate_presigned_url("get_object", Params={"Bucket": self.name, "Key": self.key(name)},
                                                 ExpiresIn=PRESIGN_SECONDS)
        if len(self._urls) > 4096:
            self._urls.clear()
        self._urls[name] = (now + PRESIGN_SECONDS / 2, url)
        return url

    def get_range(self, name: str, offset: int, length: int) -> bytes:
        """Exactly the bytes at [offset, offset+length) (fewer when the object is shorter): one ``Range`` GET.
        Raises FileNotFoundError (no such object) or OSError (the store failed or is unreachable)."""
        if length <= 0:
            return b""
        for attempt in (0, 1):
            try:
                r = self.http.request("GET", self._url(name), preload_content=False,
                                      headers={"Range": f"bytes={offset}-{offset + length - 1}"})
            except urllib3.exceptions.HTTPError as exc:
                raise OSError(f"range GET of {name} from {self.name}: {exc}") from None
            done = False
            try:
                if r.status == 403 and attempt == 0:   # the URL's signature expired (rotated credentials)
                    self._urls.pop(name, None)
                    continue
                if r.status == 404:
                    raise FileNotFoundError(name)
                if r.status == 416:   # the object ends before the record starts
                    return b""
                if r.status == 206:
                    data = r.read(length)
                elif r.status == 200:   # a store that ignored Range: bounded all the same
                    data = r.read(offset + length)[offset:]
                else:
                    raise OSError(f"range GET of {name} from {self.name}: HTTP {r.status} {r.reason}")
                done = r.status == 206
                return data
            except urllib3.exceptions.HTTPError as exc:
                raise OSError(f"range GET of {name} from {self.name}: {exc}") from None
            finally:
                if done:
                    r.release_conn()
                else:
                    r.close()
        raise OSError(f"range GET of {name} from {self.name}: refused (HTTP 403) with a fresh signature")

    def head(self, name: str) -> ObjectInfo | None:
        try:
            h = self.client.head_object(Bucket=self.name, Key=self.key(name), ChecksumMode="ENABLED")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in _MISSING:
                return None
            raise
        return ObjectInfo(size=h["ContentLength"], sha256_b64=h.get("ChecksumSHA256"),
                          etag=(h.get("ETag") or "").strip('"') or None)

    def put_new(self, name: str, path: Path, sha256_b64: str) -> bool:
        """PUT ``path`` as a new object; False when an object of that name already exists (412)."""
        try:
            with open(path, "rb") as f:
                self.client.put_object(Bucket=self.name, Key=self.key(name), Body=f, IfNoneMatch="*",
                                       ChecksumSHA256=sha256_b64, ContentType="application/warc")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in ("PreconditionFailed", "412",
                                                                 "ConditionalRequestConflict"):
                return False
            raise
        return True

    def names(self) -> list[str]:
        out = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=self.prefix):
            for obj in page.get("Contents", []):
                name = obj["Key"][len(self.prefix):]
                if "/" not in name and (name.endswith(".warc.gz") or name.endswith(".warc")):
                    out.append(name)
        return sorted(out)

    def stream(self, name: str, each) -> None:
        """Call ``each(chunk)`` over the whole object, in order. Raises FileNotFoundError."""
        try:
            r = self.client.get_object(Bucket=self.name, Key=self.key(name))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in _MISSING:
                raise FileNotFoundError(name) from None
            raise
        for chunk in r["Body"].iter_chunks(READ):
            each(chunk)

    def download(self, name: str, dest: Path) -> None:
        with open(dest, "wb") as out:
            self.stream(name, out.write)


class RangeCache:
    """Recent record ranges on local disk, at most ``limit`` bytes (the oldest used go first)."""

    def __init__(self, folder: Path, limit: int):
        self.folder, self.limit = folder, limit
        self._added = limit  # prune at the first put: the folder may hold an earlier run's ranges
        self._lock = threading.Lock()

    def _path(self, name: str, offset: int, length: int) -> Path:
        return self.folder / hashlib.sha256(f"{name}\0{offset}\0{length}".encode()).hexdigest()

    def get(self, name: str, offset: int, length: int) -> bytes | None:
        p = self._path(name, offset, length)
        try:
            data = p.read_bytes()
        except OSError:
            return None
        if len(data) != length:
            return None
        try:
            os.utime(p)
        except OSError:
            pass
        return data

    def put(self, name: str, offset: int, length: int, data: bytes) -> None:
        if len(data) != length or length > self.limit // 8:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        p = self._path(name, offset, length)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_bytes(data)
        os.replace(tmp, p)
        with self._lock:
            self._added += length
            if self._added < self.limit // 16:
                return
            self._added = 0
        self.prune()

    def prune(self) -> None:
        entries = []
        for p in self.folder.iterdir():
            try:
                st = p.stat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, p))
        total = sum(e[1] for e in entries)
        for _, size, p in sorted(entries):
            if total <= self.limit * 3 // 4:
                break
            p.unlink(missing_ok=True)
            total -= size


class ArchiveStore:
    """The local spool, and the bucket when ``CAVEAT_ARCHIVE_URL`` names one."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.local = settings.warc_dir
        self.bucket = Bucket(settings) if settings.archive_url else None
        self.cache = (RangeCache(settings.data_dir / "cache" / "ranges", settings.s3_cache_bytes)
                      if self.bucket is not None and settings.s3_cache_bytes > 0 else None)

    @property
    def remote(self) -> bool:
        return self.bucket is not None

    def read_range(self, name: str, offset: int, length: int, *, fresh: bool = False) -> bytes:
        """The bytes at [offset, offset+length) of file ``name``: local while it is there, else the object's
        range (``fresh``: never from the cache, as `caveat verify` reads). Raises FileNotFoundError."""
        try:
            with open(self.local / _safe(name), "rb") as f:
                f.seek(offset)
                return f.read(length)
        except FileNotFoundError:
            if self.bucket is None:
                raise
        if self.cache is not None and not fresh:
            hit = self.cache.get(name, offset, length)
            if hit is not None:
                return hit
        try:
            data = self.bucket.get_range(name, offset, length)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise RecordUnreadable("unavailable", f"{name}@{offset}: the archive's bucket did not answer ({exc}); "
                                   "the record is not lost: try again, or check CAVEAT_S3_ENDPOINT") from None
        if self.cache is not None:
            self.cache.put(name, offset, length, data)
        return data

    def sha256_range(self, name: str, offset: int, length: int) -> str | None:
        """SHA-256 hex of the bytes at (offset, length), read fresh; None when the file is gone or short."""
        try:
            data = self.read_range(name, offset, length, fresh=True)
        except FileNotFoundError:
            return None
        return hashlib.sha256(data).hexdigest() if len(data) == length else None

    def object_sha256(self, name: str) -> str | None:
        """SHA-256 hex of the whole object, streamed (for a store that keeps no checksum); None when gone."""
        h = hashlib.sha256()
        try:
            self.bucket.stream(name, h.update)
        except FileNotFoundError:
            return None
        return h.hexdigest()

    def remote_names(self) -> list[str]:
        return self.bucket.names() if self.bucket is not None else []

    def head(self, name: str) -> ObjectInfo | None:
        return self.bucket.head(name) if self.bucket is not None else None

    def upload(self, db: Database, path: Path) -> str:
        """Make the sealed file ``path`` an object, then remove the local copy: "uploaded", or "already"
        (an object with the same bytes was there: a retry after a crash). Raises ObjectConflict."""
        assert self.bucket is not None
        name = path.name
        size, sha_hex, md5_hex = file_digests(path)
        sha_b64 = base64.b64encode(bytes.fromhex(sha_hex)).decode()
        outcome = "already"
        if self.bucket.head(name) is None and self.bucket.put_new(name, path, sha_b64):
            outcome = "uploaded"
        back = self.bucket.head(name)   # the read-back: size and the store's digest
        if back is None:
            raise ObjectConflict(f"{name}: the bucket does not show the object just written; the local file is "
                                 "kept and the upload is tried again")
        same = back.size == size and (back.sha256_b64 == sha_b64 if back.sha256_b64
                                      else (back.etag or "").lower() == md5_hex)
        if not same:
            raise ObjectConflict(
                f"{name}: the bucket already holds an object of that name with other bytes ({back.size:,} bytes, "
                f"sha256 {back.sha256_b64 or '?'}; the local file has {size:,} bytes, sha256 {sha_b64}). Nothing "
                "was overwritten and the local file is kept: compare the two, then `caveat verify`.")
        with db.Session() as s:
            s.merge(ArchiveObject(name=name, size=size, sha256=sha_hex, uploaded_at=utcnow()))
            s.commit()
        path.unlink()
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return outcome


_STORES: dict[tuple, ArchiveStore] = {}
_STORES_LOCK = threading.Lock()


def archive_store(settings: Settings) -> ArchiveStore:
    """The store for these settings (one per process and configuration: its S3 client is reused)."""
    key = (str(settings.data_dir), settings.archive_url, settings.s3_endpoint, settings.s3_cache_bytes)
    store = _STORES.get(key)
    if store is None:
        with _STORES_LOCK:
            store = _STORES.get(key)
            if store is None:
                store = _STORES[key] = ArchiveStore(settings)
    return store


def read_stored(settings: Settings, name: str, offset: int, length: int, *, max_bytes: int = MAX_RECORD_BYTES,
                fresh: bool = False) -> WarcRecord:
    """Read and check the record at (file ``name``, offset, length), from the spool or the bucket."""
    store = archive_store(settings)
    fetch = None if not store.remote else (lambda off, n: store.read_range(name, off, n, fresh=fresh))
    return read_record(settings.warc_dir / name, offset, length, max_bytes=max_bytes, fetch=fetch)

