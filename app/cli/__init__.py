"""The ``caveat`` command line. Each command parses its arguments and calls one service.

Domain errors (``app.errors.CaveatError``) become a one-line ``error: ...`` message and exit code 1.
The group lives in ``app.cli.group``; it imports a command's module (core, capture, replay, claims,
corrections, corpus, reader, accounts, audit, demo, access, measure, watch) only when that command is invoked, so
``caveat --help`` stays fast.
"""

from app.cli.group import emit, json_mode, main

__all__ = ["main", "emit", "json_mode"]
