"""Undo an HTTP ``Content-Encoding`` with bounded memory: ``decode_content(raw, encoding, limits)``.

Archived bodies are kept exactly as the server sent them (still encoded). Whatever shows or parses
one decodes it here, streaming, and stops as soon as the output passes ``max_bytes`` or
``max_ratio`` times the encoded size (a 1 MB gzip of 1 GiB of zeros, or a gzip inside a gzip, is
refused after at most ``max_bytes``). Stopping is not an error for the archive: the caller gets the
raw bytes back with a warning that names the limit, and can still serve them raw.

Codings: gzip / x-gzip (several members too), deflate (zlib or raw), br (``brotli``), zstd
(``zstandard``), identity. A body that does not decode under its label comes back raw with a warning.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass

OUT = 1 << 20  # output produced per step
RATIO_FREE = 1 << 20  # bodies that stay under 1 MiB decoded are never refused for their ratio


@dataclass(frozen=True)
class DecodeLimits:
    max_bytes: int = 200 * 1024 * 1024
    max_ratio: int = 100


class DecodeRefused(Exception):
    """The decoded body would pass a limit; ``str()`` says which and how to raise it."""


def _budget(encoded: int, limits: DecodeLimits) -> tuple[int, str]:
    by_ratio = max(RATIO_FREE, encoded * limits.max_ratio)
    if by_ratio < limits.max_bytes:
        return by_ratio, f"{limits.max_ratio}x its encoded size of {encoded:,} bytes (CAVEAT_DECODE_MAX_RATIO)"
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


def decode_content(raw: bytes, encoding: str | None, limits: DecodeLimits = DecodeLimits()) -> tuple[bytes, str | None]:
    """(body, problem): the decoded body, or ``raw`` unchanged with a problem in words."""
    body = raw
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
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
