"""Undo an HTTP ``Content-Encoding`` with bounded memory: ``decode_content(raw, encoding, limits)``.

Archived bodies are kept exactly as the server sent them (still encoded). Whatever shows or parses
one decodes it here, streaming, and stops as soon as the output passes ``max_bytes`` or
``max_ratio`` times the encoded size (a 1 MB gzip of 1 GiB of zeros, or a gzip inside a gzip, is
refused after at most ``max_bytes``). Stopping is not an error for the archive: the caller gets the
raw bytes back with a warning that names the limit, and can still serve them raw.

Codings: gzip / x-gzip (several members too), deflate (zlib or raw), br (``brotli``), zstd
(``zstandard``), identity. A body that does not decode under its label comes back raw with a warning.

The limits above bound one decoding; :data:`GATE` bounds them all in the process (a server decoding
for many requests at once): each decoding first reserves the most it may produce from a process-wide
byte budget (``DecodeLimits.process_bytes``) and waits while others hold it, the same record is
decoded by one request at a time (``key``), and a record refused once is remembered by its key, so it
is never inflated again (:func:`decode_content` with ``key``).
"""

from __future__ import annotations

import io
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass

OUT = 1 << 20  # output produced per step
RATIO_FREE = 1 << 20  # bodies that stay under 1 MiB decoded are never refused for their ratio


@dataclass(frozen=True)
class DecodeLimits:
    max_bytes: int = 200 * 1024 * 1024
    max_ratio: int = 100
    process_bytes: int = 256 * 1024 * 1024   # all decodings in flight in this process together
    wait_s: float = 60.0                     # longest wait for the process budget before giving up


class DecodeRefused(Exception):
    """The decoded body would pass a limit; ``str()`` says which and how to raise it."""


REMEMBERED = 4096  # refusals kept by key


class Gate:
    """The process-wide bound on decoding: a byte budget reserved before each decoding (the most it may
    produce), one decoding at a time per key, and the keys whose decoding was refused."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.held = 0
        self.decodings = 0                     # decodings run (a refusal remembered runs none)
        self._busy: dict = {}                  # key -> [lock, users]
        self._refused: OrderedDict = OrderedDict()

    def refused(self, key) -> str | None:
        with self._cond:
            return self._refused.get(key)

    def remember(self, key, verdict: str) -> None:
        with self._cond:
            self._refused[key] = verdict
            self._refused.move_to_end(key)
            while len(self._refused) > REMEMBERED:
                self._refused.popitem(last=False)

    def reserve(self, n: int, limits: DecodeLimits) -> bool:
        """Hold ``n`` bytes of the process budget; False when they did not free up in ``wait_s``."""
        with self._cond:
            ok = self._cond.wait_for(lambda: self.held + n <= limits.process_bytes or self.held == 0,
                                     timeout=limits.wait_s)
            if ok:
                self.held += n
                self.decodings += 1
            return ok

    def release(self, n: int) -> None:
        with self._cond:
            self.held -= n
            self._cond.notify_all()

    def lock(self, key) -> threading.Lock:
        with self._cond:
            entry = self._busy.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
            return entry[0]

    def unlock(self, key) -> None:
        with self._cond:
            entry = self._busy[key]
            entry[0].release()
            entry[1] -= 1
            if not entry[1]:
                del self._busy[key]


GATE = Gate()


def _budget(encoded: int, limits: DecodeLimits) -> tuple[int, str]:
    by_ratio = max(RATIO_FREE, encoded * limits.max_ratio)
    if by_ratio < min(limits.max_bytes, limits.process_bytes):
        return by_ratio, f"{limits.max_ratio}x its encoded size of {encoded:,} bytes (CAVEAT_DECODE_MAX_RATIO)"
    if limits.process_bytes < limits.max_bytes:
        return limits.process_bytes, f"{limits.process_bytes:,} bytes (CAVEAT_DECODE_PROCESS_BYTES)"
    return limits.max_bytes, f"{limits.max_bytes:,} bytes (CAVEAT_DECODE_MAX_BYTES)"


def _zlib(data: bytes, wbits: int, budget: int, why: str, *, members: bool) -> bytes:
    out: list[bytes] = []
    total = 0
    while True:
        d = zlib.decompressobj(wbits)
        feed = data
        while True:
            piece = d.decompress(feed, OUT)
            total += len(piece)
            if total > budget:
                raise DecodeRefused(f"decoded body passes {why}")
            out.append(piece)
            feed = d.unconsumed_tail
            if d.eof or not feed:
                break
        if not d.eof:
            tail = d.flush()
            total += len(tail)
            if total > budget:
                raise DecodeRefused(f"decoded body passes {why}")
            out.append(tail)
            if wbits != -15:
                raise ValueError("compressed body is cut short")
        rest = d.unused_data.lstrip(b"\x00") if members else b""
        if not rest:
            return b"".join(out)
        data = rest


def _brotli(data: bytes, budget: int, why: str) -> bytes:
    try:
        import brotli  # type: ignore[import-not-found]
    except ImportError:
        raise LookupError("Content-Encoding br cannot be decoded here (install brotli)") from None
    d = brotli.Decompressor()
    out: list[bytes] = []
    total = 0
    piece = d.process(data, output_buffer_limit=OUT)
    while True:
        total += len(piece)
        if total > budget:
            raise DecodeRefused(f"decoded body passes {why}")
        out.append(piece)
        if d.is_finished():
            return b"".join(out)
        if d.can_accept_more_data():
            raise ValueError("brotli body is cut short")
        piece = d.process(b"", output_buffer_limit=OUT)


def _zstd(data: bytes, budget: int, why: str) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise LookupError("Content-Encoding zstd cannot be decoded here (install zstandard)") from None
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    out: list[bytes] = []
    total = 0
    while piece := reader.read(OUT):
        total += len(piece)
        if total > budget:
            raise DecodeRefused(f"decoded body passes {why}")
        out.append(piece)
    return b"".join(out)


def decode_content(raw: bytes, encoding: str | None, limits: DecodeLimits = DecodeLimits(),
                   key=None) -> tuple[bytes, str | None]:
    """(body, problem): the decoded body, or ``raw`` unchanged with a problem in words.

    ``key`` names the bytes (e.g. their digest): one decoding per key at a time, and a refusal is
    remembered for the key (with the limits), so the same bytes are not inflated again."""
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
    if all(c in ("identity", "") for c in codings):
        return raw, None
    if key is None:
        return _gated(raw, codings, limits)
    key = (key, encoding, limits.max_bytes, limits.max_ratio)
    verdict = GATE.refused(key)
    if verdict is not None:
        return raw, verdict
    GATE.lock(key).acquire()
    try:
        verdict = GATE.refused(key)        # decided while this request waited for the one before
        if verdict is not None:
            return raw, verdict
        body, problem = _gated(raw, codings, limits)
        if problem is not None and body is raw and "process budget" not in problem:
            GATE.remember(key, problem)
        return body, problem
    finally:
        GATE.unlock(key)


def _gated(raw: bytes, codings: list[str], limits: DecodeLimits) -> tuple[bytes, str | None]:
    """Decode under the process budget: the most this decoding may produce is reserved first."""
    need = min(limits.max_bytes, max(RATIO_FREE, len(raw) * limits.max_ratio), limits.process_bytes)
    if not GATE.reserve(need, limits):
        return raw, (f"Content-Encoding not undone: the process budget for decoding ({limits.process_bytes:,} bytes, "
                     f"CAVEAT_DECODE_PROCESS_BYTES) stayed in use for {limits.wait_s:g} s; the archived bytes are "
                     "served raw; try again")
    try:
        return _decode(raw, codings, limits)
    finally:
        GATE.release(need)


def _decode(raw: bytes, codings: list[str], limits: DecodeLimits) -> tuple[bytes, str | None]:
    body = raw
    for coding in reversed(codings):
        budget, why = _budget(len(body), limits)
        try:
            if coding in ("gzip", "x-gzip"):
                body = _zlib(body, 47, budget, why, members=True)
            elif coding == "deflate":
                try:
                    body = _zlib(body, 15, budget, why, members=False)
                except (zlib.error, ValueError):
                    body = _zlib(body, -15, budget, why, members=False)
            elif coding in ("identity", ""):
                continue
            elif coding == "br":
                body = _brotli(body, budget, why)
            elif coding == "zstd":
                body = _zstd(body, budget, why)
            else:
                return raw, f"unknown Content-Encoding {coding!r}; body left encoded"
        except DecodeRefused as exc:
            return raw, f"Content-Encoding {coding} not undone: the {exc}; the archived bytes are served raw"
        except LookupError as exc:
            return raw, str(exc)
        except Exception as exc:  # zlib.error, brotli.error, zstd errors, ValueError: a body that lies
            return raw, f"Content-Encoding {coding} does not decode ({exc}); body left encoded"
    return body, None
