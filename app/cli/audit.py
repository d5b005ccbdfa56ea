"""CLI commands for audit (registered on `app.cli.main`): accounts and tokens live in accounts.py."""

from __future__ import annotations

import click  # noqa: F401

from app.cli import accounts  # noqa: F401
from app.cli import main  # noqa: F401
from app.cli.context import CliContext  # noqa: F401
