"""Domain exceptions. One handler maps them to HTTP status and JSON/HTML; the CLI prints one line.

Messages say what happened and how to fix it.
"""

from __future__ import annotations


class CaveatError(Exception):
    status = 400

    def __init__(self, message: str, **detail):
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFound(CaveatError):
    status = 404


class BadRequest(CaveatError):
    status = 400


class Unauthorized(CaveatError):
    status = 401


class Forbidden(CaveatError):
    status = 403


class Withheld(CaveatError):
    """The capture asked for is withdrawn (410) or restricted (403). Whatever route asked, the answer is its
    tombstone (``tombstone``, the body ``/c/{id}.json`` gives), never its bytes, text or (restricted) its
    URL and digests."""

    def __init__(self, tombstone: dict):
        super().__init__(tombstone.get("error") or "this capture is withheld")
        self.status = int(tombstone.get("status") or 410)
        self.tombstone = tombstone


class Conflict(CaveatError):
    status = 409


class PreconditionFailed(CaveatError):
    """A write made against a version that is no longer current (If-Match / the form's version)."""
    status = 412


class UnsupportedMediaType(CaveatError):
    status = 415


class NotMigrated(CaveatError):
    status = 503


class DatabaseUnavailable(CaveatError):
    """The database does not answer a real query (unreachable, locked out, corrupted)."""

    status = 503


class FetchFailed(CaveatError):
    """A capture could not fetch a URL (timeout, refused address, too large, too many redirects...)."""

    status = 502


class FixityError(CaveatError):
    """Archived bytes no longer match their recorded digests."""

    status = 500


class ParseFailed(CaveatError):
    status = 422
