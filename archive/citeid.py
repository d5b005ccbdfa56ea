"""Citation ids in Perma.cc's shape: ``XXXX-XXXX`` from an alphabet without 0, 1, I and O.

Lookup is forgiving: case is ignored and every character that is not a letter or a digit is
dropped, so ``abcd–efgh`` (en dash), ``ABCD EFGH`` and ``abcdefgh`` all name ``ABCD-EFGH``.
"""

from __future__ import annotations

import re
import secrets

ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
_ALNUM = re.compile(r"[^0-9A-Za-z]")


def new_citation_id() -> str:
    raw = "".join(secrets.choice(ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def normalize_citation_id(text: str) -> str | None:
    """The canonical ``XXXX-XXXX`` form of a typed citation id, or None if it cannot be one."""
    raw = _ALNUM.sub("", text or "").upper()
    if len(raw) != 8 or any(c not in ALPHABET for c in raw):
        return None
    return f"{raw[:4]}-{raw[4:]}"


def citation_id_for_record(record_id: str, attempt: int = 0) -> str:
    """The citation id of a WARC record, derived from its ``WARC-Record-ID``.

    Opaque to a reader, but a function of the archived bytes' own identity: rebuilding the index from
    the WARC files, or moving the archive to another database, gives every record the same id again.
    ``attempt`` > 0 picks the next candidate in the rare case two records' ids collide.
    """
    import hashlib

    digest = hashlib.sha256(f"{record_id.strip()}#{attempt}".encode("utf-8")).digest()
    value = int.from_bytes(digest[:5], "big")  # 40 bits = 8 symbols of 5 bits
    raw = "".join(ALPHABET[(value >> (5 * i)) & 31] for i in range(7, -1, -1))
    return f"{raw[:4]}-{raw[4:]}"
