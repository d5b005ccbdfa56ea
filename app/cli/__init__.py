"""The ``caveat`` command line. Each command parses its arguments and calls one service.

Domain errors (``app.errors.CaveatError``) become a one-line ``error: ...`` message and exit code 1.
The group lives in ``app.cli.group``; each module below adds its commands to it, and the order of these
imports is the order in ``caveat --help``.
"""

from app.cli import core  # noqa: F401
from app.cli import capture  # noqa: F401
from app.cli import replay  # noqa: F401
from app.cli import claims  # noqa: F401
from app.cli import corrections  # noqa: F401
from app.cli import reader  # noqa: F401
from app.cli import accounts  # noqa: F401
from app.cli import audit  # noqa: F401
from app.cli import demo  # noqa: F401
from app.cli import access  # noqa: F401
from app.cli import measure  # noqa: F401
from app.cli import watch  # noqa: F401
from app.cli.group import emit, json_mode, main  # noqa: F401

__all__ = ["main", "emit", "json_mode"]
