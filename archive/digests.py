"""WARC digest strings: ``sha256:<base32>`` as written, parsed back in any RFC 3548 encoding.

Caveat writes sha256 in base32 (what `warcio check` and most tools expect for the label form) and keeps
the hex form of the payload sha256 in its index.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

ALGORITHM = "sha256"


def label(raw_digest: bytes, algorithm: str = ALGORITHM) -> str:
    """``sha256:<BASE32>`` for a raw digest."""
    return f"{algorithm}:{base64.b32encode(raw_digest).decode('ascii')}"


def parse(value: str) -> tuple[str, bytes]:
    """Split a WARC digest header into (algorithm, raw digest bytes); accepts base32, hex or base64."""
    algorithm, sep, text = (value or "").strip().partition(":")
    if not sep or not text:
        raise ValueError(f"not a WARC digest (expected 'algorithm:value'): {value!r}")
    algorithm = algorithm.lower().replace("-", "")
    try:
        size = hashlib.new(algorithm).digest_size
    except ValueError as exc:
        raise ValueError(f"unknown digest algorithm {algorithm!r} in {value!r}") from exc
    for decode in (_b32, _hex, _b64):
        try:
            raw = decode(text)
        except (binascii.Error, ValueError):
            continue
        if len(raw) == size:
            return algorithm, raw
    raise ValueError(f"digest value does not decode to {size} bytes of {algorithm}: {value!r}")


def _b32(text: str) -> bytes:
    padded = text.upper() + "=" * (-len(text) % 8)
    return base64.b32decode(padded)


def _hex(text: str) -> bytes:
    return bytes.fromhex(text)


def _b64(text: str) -> bytes:
    if "-" in text or "_" in text:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def matches(header_value: str | None, data_hasher) -> bool | None:
    """True/False when ``header_value`` names a digest comparable with ``data_hasher`` (a hashlib
    object fed the same bytes, or a callable returning one for an algorithm), None when absent."""
    if not header_value:
        return None
    algorithm, expected = parse(header_value)
    hasher = data_hasher(algorithm) if callable(data_hasher) else data_hasher
    return hasher.digest() == expected
