"""The tamper-evident log: every WARC record Caveat writes is a leaf of an append-only Merkle tree
(``archive/merkle.py``, RFC 9162 hashing) whose signed tree head is published at ``/log/sth.json``.

Files, in ``<data_dir>/tlog/`` (kept apart from the database: ``caveat reindex`` never rebuilds them):

- ``entries.jsonl``: one line per leaf, in order: ``{"index", "warc_file", "offset", "length",
  "record_id", "sha256"}``; ``sha256`` is the digest of the record's gzip member, byte for byte;
- ``leaves``: the leaf hashes, 32 bytes each (``SHA-256(0x00 || leaf data)``, the data being
  ``caveat-tlog-v1 <warc_file> <offset> <length> <record_id> <sha256>``);
- ``state.json``: the tree size and the roots of its perfect subtrees, so appending is O(log n);
- ``sth/<size>.json`` and ``sth.json`` (the latest): signed tree heads.

A tree head is ``{"log", "tree_size", "root_hash", "timestamp", "public_key", "signature"}``, the
signature (ECDSA P-384, ``archive/signing.py``) over ``caveat-tlog-v1\\n<size>\\n<root hex>\\n<timestamp>``.
Anyone who saved an earlier tree head can check with ``caveat verify --log --tree-head FILE`` that
today's log extends it (a consistency proof) and that every record still has the bytes it was logged
with: a rewritten record, a deleted one or a rewritten (forked) log is caught.

Appends happen under the WARC store's lock, after the records are fsynced and their rows committed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from app.config import Settings
from archive import merkle, signing
import time
import fcntl
from app.errors import BadRequest
from app.storage.objects import archive_store

LOG_ID = "caveat-tlog-v1"
READ = 1 << 20


def log_dir(settings: Settings) -> Path:
    return settings.data_dir / "tlog"


def key_path(settings: Settings) -> Path:
    return settings.data_dir / "signing_key.pem"


def ensure_signing_key(settings: Settings) -> bool:
    """Make the installation's signing key if it has none (``caveat init``); True when made now."""
    return signing.ensure_key(key_path(settings))


_js = json.encoder.encode_basestring_ascii  # a JSON string literal, in C


def leaf_data(entry: dict) -> bytes:
    return (f"{LOG_ID} {entry['warc_file']} {entry['offset']} {entry['length']} {entry['record_id']} "
            f"{entry['sha256']}").encode("utf-8")


def member_sha256(path: Path, offset: int, length: int) -> str | None:
    """Digest of the bytes at (offset, length) in ``path``; None when the file is missing or short."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            left = length
            while left:
                chunk = f.read(min(READ, left))
                if not chunk:
                    return None
                h.update(chunk)
                left -= len(chunk)
    except (FileNotFoundError, IsADirectoryError):
        return None
    return h.hexdigest()


def sth_message(size: int, root_hex: str, timestamp: str) -> str:
    return f"{LOG_ID}\n{size}\n{root_hex}\n{timestamp}"


# -- appending ---------------------------------------------------------------------------------------

def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def _repair_leaves(d: Path) -> None:
    """After a crash the leaves file (written without fsync) may lag the entries (fsynced): recompute it."""
    entries_path, leaves_path = d / "entries.jsonl", d / "leaves"
    if not entries_path.exists():
        return
    n = sum(1 for line in open(entries_path, encoding="utf-8") if line.strip())
    have = leaves_path.stat().st_size // 32 if leaves_path.exists() else 0
    if have == n and (not leaves_path.exists() or leaves_path.stat().st_size % 32 == 0):
        return
    leaves = [merkle.leaf_hash(leaf_data(e)) for e in read_entries(d)]
    _write_atomic(leaves_path, b"".join(leaves))
    (d / "state.json").unlink(missing_ok=True)


def _state(d: Path) -> merkle.Frontier:
    """The frontier as saved; rebuilt from the leaves file when the saved one does not match it."""
    leaves_path = d / "leaves"
    if not _STATE_OK.get(str(d)):
        _repair_leaves(d)   # once per process: the writer's files agree before it appends
        _STATE_OK[str(d)] = True
    size = leaves_path.stat().st_size // 32 if leaves_path.exists() else 0
    try:
        saved = json.loads((d / "state.json").read_text())
        if saved.get("size") == size:
            return merkle.Frontier(size, [bytes.fromhex(h) for h in saved["frontier"]])
    except (FileNotFoundError, ValueError, KeyError):
        pass
    f = merkle.Frontier()
    for leaf in read_leaves(d):
        f.append(leaf)
    return f


_STATE_OK: dict[str, bool] = {}


def read_leaves(d: Path) -> list[bytes]:
    try:
        data = (d / "leaves").read_bytes()
    except FileNotFoundError:
        return []
    return [data[i:i + 32] for i in range(0, len(data) - len(data) % 32, 32)]


def read_entries(d: Path) -> list[dict]:
    try:
        with open(d / "entries.jsonl", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


SIGN_EVERY = 1.0   # seconds: a busy capture signs a tree head at most this often, and once at its end


class _LogLock:
    """Several WARC series (one per worker, issue 17) append to the one log: one appender at a time."""

    def __init__(self, settings: Settings):
        self.d = log_dir(settings)

    def __enter__(self):
        self.d.mkdir(parents=True, exist_ok=True)
        self.f = open(self.d / ".append.lock", "a+")
        fcntl.flock(self.f.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f.fileno(), fcntl.LOCK_UN)
        self.f.close()


def append_written(settings: Settings, warc_file: str, written, *, sign: bool | None = None) -> dict | None:
    written = list(written)
    if not written:
        return None
    with _LogLock(settings):
        return _append_written(settings, warc_file, written, sign=sign)


def _append_written(settings: Settings, warc_file: str, written, *, sign: bool | None = None) -> dict | None:
    """Log records just written to ``warc_file`` (``archive.warcwriter.Written`` items) and sign a new
    tree head (``sign=None``: unless one was signed less than ``SIGN_EVERY`` seconds ago; the capture
    calls :func:`sign_latest` when it ends). Returns the tree head signed, if any."""
    written = list(written)
    if not written:
        return None
    d = log_dir(settings)
    d.mkdir(parents=True, exist_ok=True)
    frontier = _state(d)
    path = settings.warc_dir / warc_file
    lines, hashes = [], []
    lo = min(w.offset for w in written)
    hi = max(w.offset + w.length for w in written)
    with open(path, "rb") as f:   # the batch's records are contiguous: one read
        f.seek(lo)
        data = f.read(hi - lo)
    view = memoryview(data)
    for w in written:
        a = w.offset - lo
        if a + w.length > len(data):
            raise RuntimeError(f"cannot log {w.record_id}: {path} has no {w.length} bytes at offset {w.offset}")
        digest = hashlib.sha256(view[a:a + w.length]).hexdigest()
        entry = {"index": frontier.size, "warc_file": warc_file, "offset": w.offset, "length": w.length,
                 "record_id": w.record_id, "sha256": digest}
        leaf = merkle.leaf_hash(leaf_data(entry))
        frontier.append(leaf)
        lines.append(f'{{"index": {entry["index"]}, "length": {w.length}, "offset": {w.offset}, '
                     f'"record_id": {_js(w.record_id)}, "sha256": "{digest}", "warc_file": {_js(warc_file)}}}\n')
        hashes.append(leaf)
    new = not (d / "entries.jsonl").exists()
    with open(d / "entries.jsonl", "a", encoding="utf-8") as f:   # the log's record: durable before we go on
        f.write("".join(lines))
        f.flush()
        os.fsync(f.fileno())
    with open(d / "leaves", "ab") as f:   # derived from the entries (rebuilt from them if a crash cut it)
        f.write(b"".join(hashes))
    if new:
        _fsync_dir(d)
    _write_atomic(d / "state.json", json.dumps({"size": frontier.size,   # a cache of the leaves: no fsync
                                                "frontier": [h.hex() for h in frontier.hashes]}).encode(),
                  durable=False)

    if sign is None:
        sign = time.monotonic() - _LAST_SIGNED.get(str(d), -1e9) >= SIGN_EVERY
    if not sign:
        return None
    return sign_tree_head(settings, frontier.size, frontier.root())


_LAST_SIGNED: dict[str, float] = {}
_KEYS: dict[str, tuple] = {}


def _key(settings: Settings):
    path = key_path(settings)
    ensure_signing_key(settings)
    stamp = path.stat().st_mtime_ns
    hit = _KEYS.get(str(path))
    if hit is None or hit[0] != stamp:
        hit = (stamp, signing.load_key(path))
        _KEYS[str(path)] = hit
    return hit[1]


def sign_latest(settings: Settings) -> dict | None:
    """Sign a tree head for the log as it is now, unless the latest one already covers it."""
    d = log_dir(settings)
    if not (d / "leaves").exists():
        return None
    with _LogLock(settings):
        return _sign_latest(settings, d)


def _sign_latest(settings: Settings, d: Path) -> dict | None:
    frontier = _state(d)
    sth = latest_tree_head(settings)
    if sth is not None and sth.get("tree_size") == frontier.size:
        return sth
    return sign_tree_head(settings, frontier.size, frontier.root())


def sign_tree_head(settings: Settings, size: int, root: bytes) -> dict:
    key = _key(settings)
    ts = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    sth = {"log": LOG_ID, "tree_size": size, "root_hash": root.hex(), "timestamp": ts,
           "public_key": signing.public_key_b64(key), "signature": signing.sign(key, sth_message(size, root.hex(), ts))}
    d = log_dir(settings)
    (d / "sth").mkdir(parents=True, exist_ok=True)
    body = json.dumps(sth, indent=2).encode()
    _write_atomic(d / "sth" / f"{size}.json", body)
    _write_atomic(d / "sth.json", body)
    _LAST_SIGNED[str(d)] = time.monotonic()
    return sth


def latest_tree_head(settings: Settings) -> dict | None:
    try:
        return json.loads((log_dir(settings) / "sth.json").read_text())
    except FileNotFoundError:
        return None


def tree_head(settings: Settings, size: int) -> dict | None:
    try:
        return json.loads((log_dir(settings) / "sth" / f"{int(size)}.json").read_text())
    except (FileNotFoundError, ValueError):
        return None


def check_tree_head(sth: dict) -> bool:
    """Is the tree head signed by the key it names?"""
    try:
        return signing.verify(sth["public_key"], sth_message(int(sth["tree_size"]), sth["root_hash"], sth["timestamp"]),
                              sth["signature"])
    except (KeyError, TypeError, ValueError):
        return False


def logged_records(settings: Settings):
    """A predicate ``(record_id, warc_file, offset) -> bool``: is that record, at that place, a leaf of
    the log? (`caveat reindex` marks the records it is not true for as unverified.)"""
    at = {(e.get("record_id"), e.get("warc_file"), e.get("offset")) for e in read_entries(log_dir(settings))}
    return lambda record_id, warc_file, offset: (record_id, warc_file, offset) in at


# -- proofs --------------------------------------------------------------------------------------------

_CACHE: dict = {}


def _loaded(settings: Settings) -> tuple[list[bytes], dict[str, int]]:
    """(leaf hashes, record id -> leaf index), cached while the log files do not change."""
    d = log_dir(settings)
    try:
        stamp = ((d / "leaves").stat().st_size, (d / "entries.jsonl").stat().st_mtime_ns)
    except FileNotFoundError:
        return [], {}
    key = str(d)
    hit = _CACHE.get(key)
    if hit and hit[0] == stamp:
        return hit[1], hit[2]
    leaves = read_leaves(d)
    index = {e["record_id"]: e["index"] for e in read_entries(d)}
    old = _CACHE.get(key)
    memo = old[3] if old and len(old[1]) <= len(leaves) and old[1] == leaves[:len(old[1])] else {}
    _CACHE[key] = (stamp, leaves, index, memo)   # perfect subtrees never change: their roots carry over
    return leaves, index


def _memo(settings: Settings) -> dict:
    hit = _CACHE.get(str(log_dir(settings)))
    return hit[3] if hit else {}


def inclusion(settings: Settings, record_id: str) -> dict | None:
    """The record's leaf and its inclusion proof in the latest signed tree head, or None if unlogged."""
    sth = latest_tree_head(settings)
    leaves, index = _loaded(settings)
    i = index.get(record_id)
    if sth is None or i is None or i >= sth["tree_size"]:
        return None
    size = sth["tree_size"]
    path = merkle.inclusion_proof(leaves[:size], i, _memo(settings))
    return {"leaf_index": i, "tree_size": size, "leaf_hash": leaves[i].hex(),
            "audit_path": [p.hex() for p in path], "root_hash": sth["root_hash"], "tree_head": sth,
            "verified": merkle.verify_inclusion(leaves[i], i, size, path, bytes.fromhex(sth["root_hash"]))}


def consistency(settings: Settings, first: int, second: int | None = None) -> dict:
    leaves, _ = _loaded(settings)
    second = len(leaves) if second is None else second
    if not 0 < first <= second <= len(leaves):

        raise BadRequest(f"no consistency proof from size {first} to {second}: the log has {len(leaves)} leaves; "
                         "give 0 < first <= second <= that")
    return {"first": first, "second": second, "first_root": merkle.root(leaves[:first]).hex(),
            "second_root": merkle.root(leaves[:second]).hex(),
            "proof": [p.hex() for p in merkle.consistency_proof(leaves[:second], first)]}


# -- checking ------------------------------------------------------------------------------------------

@dataclass
class LogReport:
    size: int = 0
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tree_heads: int = 0
    keys: list[str] = field(default_factory=list)
    unlogged: list[str] = field(default_factory=list)
    imported: int = 0

    @property
    def passed(self) -> bool:
        return not self.problems


def _stored_heads(d: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((d / "sth").glob("*.json"))] if (d / "sth").is_dir() else []


def _check_keys(settings: Settings, rep: LogReport, heads: list[dict], accept: list[str], problem) -> None:
    """A change of signing key fails (issue 24): every tree head must be signed by a pinned key
    (``CAVEAT_LOG_PUBLIC_KEYS``), or, with none pinned, all by one key besides those accepted now."""
    pinned = [k.strip() for k in settings.log_public_keys.split(",") if k.strip()]
    keys: dict[str, list[str]] = {}
    oldest: dict[str, tuple] = {}
    for n, h in enumerate(heads):   # a reader's saved head first: on a tie of size it is the older
        key = str(h.get("public_key"))
        keys.setdefault(key, []).append(f"size {h.get('tree_size')}")
        oldest[key] = min(oldest.get(key, (1 << 62, n)), (int(h.get("tree_size", 1 << 62)), n))
    if key_path(settings).exists():
        try:
            keys.setdefault(signing.public_key_b64(signing.load_key(key_path(settings))), []).append("signing key file")
        except (OSError, ValueError) as exc:
            problem(f"log: the signing key {key_path(settings)} cannot be read: {exc}")
    allowed = set(pinned) | set(accept)
    if not pinned and len(keys) > 1:
        # nothing pinned: the key of the oldest tree head is the log's; any other must be accepted
        allowed.add(min(keys, key=lambda k: oldest.get(k, (1 << 62, 1 << 62))))
    strange = {k: v for k, v in keys.items() if k not in allowed} if pinned or len(keys) > 1 else {}
    for key, where in strange.items():
        problem(f"log: signed by another key than {'the pinned ones' if pinned else 'the oldest tree head'}: {key} "
                f"({', '.join(where[:4])}); pin trusted keys in CAVEAT_LOG_PUBLIC_KEYS or accept this one with "
                "`caveat verify --log --accept-key KEY` once you know why it changed")
    rep.keys = sorted(keys)


def verify_log(settings: Settings, earlier: list[dict] | None = None, *, progress=None,
               accept_keys: list[str] | None = None, imported: set[str] | None = None,
               warc_records=None) -> LogReport:
    """Check the log against the WARC files and tree heads: every leaf recomputed from its entry, every
    logged record re-read and its bytes compared (tampered or deleted records), the latest tree head's
    signature and root, and each ``earlier`` tree head a signed prefix of today's log (consistency proof;
    a forked or rewritten log fails), every stored tree head signed by the same (or a pinned or accepted)
    key and no larger than the log, and every record of the WARC files (``warc_records``: (file, offset,
    record id, type) of each) a leaf: an unlogged record is not one Caveat wrote (issue 24).
    ``imported``: record ids that came in with `caveat import-warc`, counted apart."""
    say = progress or (lambda line: None)
    rep = LogReport()
    d = log_dir(settings)
    entries, leaves = read_entries(d), read_leaves(d)
    rep.size = len(leaves)
    store = archive_store(settings)

    def problem(line: str) -> None:
        rep.problems.append(line)
        say(line)

    if len(entries) != len(leaves):
        problem(f"log: {len(entries)} entries but {len(leaves)} leaf hashes in {d}; the log files were edited")
    for i, (e, leaf) in enumerate(zip(entries, leaves)):
        if e.get("index") != i or merkle.leaf_hash(leaf_data(e)) != leaf:
            problem(f"log: entry {i} does not hash to leaf {i}; the log's entries were edited")
            continue
        digest = member_sha256(settings.warc_dir / e["warc_file"], e["offset"], e["length"])
        if digest is None and store.remote:   # sealed and uploaded: the object's range, read fresh
            digest = store.sha256_range(e["warc_file"], e["offset"], e["length"])
        rep.checked += 1
        if digest is None:
            problem(f"deleted record: {e['record_id']} (leaf {i}) is gone from {e['warc_file']} at offset "
                    f"{e['offset']:,}; restore that WARC file from a backup")
        elif digest != e["sha256"]:
            problem(f"tampered record: {e['record_id']} (leaf {i}) in {e['warc_file']} at offset {e['offset']:,} "
                    "no longer has the bytes it was logged with; restore that WARC file from a backup")
    root_now = merkle.root(leaves)
    sth = latest_tree_head(settings)
    if sth is None:
        if leaves:
            problem(f"log: no signed tree head in {d}")
    else:
        rep.tree_heads += 1
        if not check_tree_head(sth):
            problem("log: the latest tree head's signature does not verify")
        size = int(sth["tree_size"])
        if size > len(leaves) or merkle.root(leaves[:size]).hex() != sth["root_hash"]:
            problem(f"log: the latest tree head (size {size}) does not match the log's leaves; the log was rewritten")
    for other in earlier or []:
        rep.tree_heads += 1
        size = int(other.get("tree_size", -1))
        label = f"tree head of size {size} ({other.get('timestamp')})"
        if not check_tree_head(other):
            problem(f"{label}: its signature does not verify")
            continue
        if size > len(leaves):
            problem(f"forked log: {label} is larger than today's log ({len(leaves)} leaves): records were deleted "
                    "from the log")
            continue
        if size == 0:
            continue
        proof = merkle.consistency_proof(leaves, size)
        if not merkle.verify_consistency(size, len(leaves), bytes.fromhex(other["root_hash"]), root_now, proof):
            problem(f"forked log: {label} (root {other['root_hash'][:16]}...) is not a prefix of today's log: the "
                    "log was rewritten since it was signed")
    stored = _stored_heads(d)
    for other in stored:
        if int(other.get("tree_size", -1)) > len(leaves):
            problem(f"forked log: the stored tree head of size {other['tree_size']} ({other.get('timestamp')}) is larger than "
                    f"today's log ({len(leaves)} leaves): leaves were cut from the log")
    _check_keys(settings, rep, list(earlier or []) + stored + ([sth] if sth else []), list(accept_keys or []), problem)
    at = {(e.get("warc_file"), e.get("offset")): e.get("record_id") for e in entries}
    for warc_file, offset, record_id, warc_type in warc_records or ():
        if at.get((warc_file, offset)) == record_id:
            if imported and record_id in imported:
                rep.imported += 1
            continue
        line = (f"unlogged record: {warc_type} {record_id} in {warc_file} at offset {offset:,} is in no entry of "
                "the log: Caveat did not write it (appended by hand or by another tool)")
        rep.unlogged.append(line)
        problem(line)
    return rep
