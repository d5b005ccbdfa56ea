"""The ``caveat`` command group, its error handling and the --json helpers every command module uses.

Domain errors (``app.errors.CaveatError``) become a one-line ``error: ...`` message and exit code 1.
"""

from __future__ import annotations

import json
import logging
import sys

import click

from app import __version__
from app.api.convention import utc_fields
from app.cli.context import CliContext
from app.errors import CaveatError


class CaveatGroup(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CaveatError as exc:
            if ctx.meta.get("caveat.json"):  # a --json command answers in the API's error shape, on stdout
                click.echo(json.dumps({"ok": False, "error": exc.message, "status": exc.status}))
            click.echo(f"error: {exc.message}", err=True)
            sys.exit(1)


def json_mode(on: bool) -> bool:
    """Called by a command given ``--json``: its errors are then printed as JSON too."""
    if on:
        click.get_current_context().meta["caveat.json"] = True
    return on


def emit(body: dict, ok: bool = True) -> None:
    """Print a --json answer: the API's shape (``ok`` first: false when the command exits non-zero),
    indented, timestamps in UTC."""
    click.echo(json.dumps(utc_fields({"ok": ok, **body}), indent=2, default=str))


@click.group(cls=CaveatGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="caveat")
@click.option("-v", "--verbose", is_flag=True, help="Log what each step does (to stderr).")
@click.pass_context
def main(ctx: click.Context, verbose: bool = False) -> None:
    """Caveat archives LLM speed leaderboards as WARC, parses their claims, audits them and cites them.

    Settings come from CAVEAT_* environment variables (see docs/settings.md).

    \b
    Example:
      caveat init && caveat capture https://example.org/leaderboard
    """
    if ctx.obj is None:
        ctx.obj = CliContext()
    if verbose:
        logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
        logging.getLogger("caveat").setLevel(logging.INFO)
