"""Secrets sealed with a key kept outside the database (AES-256-GCM, ``cryptography``).

A sealed value is ``sealed:v1:<urlsafe base64 of 12-byte nonce + ciphertext + tag>``; the key is 32
random bytes in a file of its own (mode 0600, made on first use). A copy of the database alone then
holds no usable secret. Values without the prefix are plaintext from before sealing and read as such.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed:v1:"
KEY_BYTES = 32


class SealError(ValueError):
    """A sealed value that this key cannot open (another key, a missing key file, altered bytes)."""


def is_sealed(value: str) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def _key(path: Path, create: bool) -> bytes:
    path = Path(path)
    if not path.exists():
        if not create:
            raise SealError(f"the key file {path} is missing")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            pass
        os.unlink(tmp)
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise SealError(f"the key file {path} does not hold a {KEY_BYTES}-byte key")
    return key


def seal(key_path: Path, plaintext: str, context: bytes = b"") -> str:
    """``plaintext`` sealed with the key at ``key_path`` (made, 0600, if missing); ``context`` is bound
    in as associated data (a value sealed for one purpose does not open as another)."""
    nonce = os.urandom(12)
    box = AESGCM(_key(key_path, create=True)).encrypt(nonce, plaintext.encode("utf-8"), context)
    return PREFIX + base64.urlsafe_b64encode(nonce + box).decode("ascii")


def unseal(key_path: Path, value: str, context: bytes = b"") -> str:
    """The plaintext of a sealed value (a value without the prefix is returned as it is)."""
    if not is_sealed(value):
        return value
    try:
        raw = base64.urlsafe_b64decode(value[len(PREFIX):].encode("ascii"))
        return AESGCM(_key(key_path, create=False)).decrypt(raw[:12], raw[12:], context).decode("utf-8")
    except (InvalidTag, ValueError) as exc:
        if isinstance(exc, SealError):
            raise
        raise SealError(f"the value does not open with the key in {key_path} (another installation's key, or "
                        "altered)") from None
