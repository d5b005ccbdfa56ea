"""CLI commands for audit (registered on `app.cli.main`)."""

from __future__ import annotations

import click  # noqa: F401

from app.cli import main  # noqa: F401
from app.cli.context import CliContext  # noqa: F401
