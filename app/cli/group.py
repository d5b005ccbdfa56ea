"""The ``caveat`` command group, its error handling and the --json helpers every command module uses.

Domain errors (``app.errors.CaveatError``) become a one-line ``error: ...`` message and exit code 1.

The group is lazy: ``COMMANDS`` names the module that defines each command, and a command module is
imported (by name, through importlib) only when that command runs or its own ``--help`` is asked for, so
``caveat --help`` and ``caveat --version`` load neither the database layer nor the web framework.
``COMMANDS`` also carries each command's one-line summary for ``caveat --help``;
tests/test_cli_lazy.py checks it against the command's help text.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys

import click

from app import __version__
from app.api.convention import utc_fields
from app.errors import CaveatError

# name -> (module that defines it, its one-line summary as `caveat --help` prints it)
COMMANDS: dict[str, tuple[str, str]] = {
    'audit': ('app.cli.audit', 'Re-run the audit rules (crawls and reparses do this by themselves); decisions are kept.'),
    'capture': ('app.cli.capture', 'Archive each URL as WARC (request, response, every redirect hop) and index it.'),
    'changes': ('app.cli.watch', 'What the crawls found changed or vanished, newest first, with both citations.'),
    'config': ('app.cli.core', 'Settings recorded in the data folder.'),
    'corpus': ('app.cli.corpus', "Labelled pages from reviewers' work, for the reader's training and evaluation."),
    'crawl': ('app.cli.claims', 'Capture each source (all of them when no NAME is given), parse and store its claims, audit them.'),
    'db': ('app.cli.core', 'The database as a whole: copy an installation between SQLite and PostgreSQL.'),
    'demo': ('app.cli.demo', 'Run Caveat offline on bundled sample leaderboards: crawl, audit, and serve the reviewer UI.'),
    'entry': ('app.cli.corrections', "Correct what the reader made of a page: fix an entry's fields, add a figure it missed, reject one."),
    'export-wacz': ('app.cli.replay', 'Write a WACZ package of archived snapshots: WARC, CDXJ index, pages.jsonl with page text, and datapackage.json with the sha256 of every file.'),
    'hook': ('app.cli.watch', 'Webhooks: every change event POSTed to a receiver, HMAC-signed, retried with backoff.'),
    'import-warc': ('app.cli.replay', "Import WARC files written by other tools (wget, warcio, browsers' archivers): each response becomes a snapshot with a citation id."),
    'init': ('app.cli.core', 'Create the data folder and bring the database to the latest migration.'),
    'measure': ('app.cli.measure', 'Measure decode speed at ENDPOINT on non-repeating prompts, check the output, archive every exchange as WARC and record the measurement (its citation id prints at the end).'),
    'measurement': ('app.cli.audit', 'Throughput we measured ourselves; on non-repeating prompts with checked output it becomes the quotable number.'),
    'quote': ('app.cli.audit', 'Print the number you can quote for a recipe, what it describes, why, and what is wrong with the headline.'),
    'reader': ('app.cli.reader', 'The learned reader beside the rules: the model that proposes figures the rules did not read.'),
    'reindex': ('app.cli.core', "Rebuild the archive index from the WARC files alone: snapshots, revisits, request records, citation ids (derived from record ids, so they come back the same), sources (from the metadata records crawls write), access changes, measurements, reviewers' corrections and decisions, and the CDXJ; then re-derive entries, flags and quotable answers by reparsing (corrections applied, decisions re-applied)."),
    'reinstate': ('app.cli.access', 'Make a withdrawn or restricted capture public again.'),
    'reparse': ('app.cli.claims', 'Run the parsers again over every archived snapshot, in time order, without fetching anything.'),
    'restrict': ('app.cli.access', 'Restrict a capture: kept but not shown, its citation answers 403.'),
    'serve': ('app.cli.core', 'Serve the web UI, the JSON API, replay and citations.'),
    'source': ('app.cli.claims', 'Manage the leaderboards and posts Caveat follows.'),
    'token': ('app.cli.accounts', "API tokens for programs (sent as 'Authorization: Bearer <token>')."),
    'upload': ('app.cli.capture', 'Upload the sealed WARC files of the local spool to CAVEAT_ARCHIVE_URL now (docs/storage.md).'),
    'user': ('app.cli.accounts', 'Reviewer accounts (they sign in to confirm or dismiss flags).'),
    'verify': ('app.cli.capture', "Check the database (SQLite's integrity check), re-read every indexed WARC record and recompute its digests, and look for whole WARC records the index lacks."),
    'withdraw': ('app.cli.access', 'Withdraw a capture: its citation answers 410 Gone, its metadata and the reason still shown.'),
    'worker': ('app.cli.watch', 'Run crawl and webhook jobs from the job queue (PostgreSQL), until Ctrl-C or SIGTERM.'),
}
_CONTEXT_MODULE = "app.cli.context"


class CaveatGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(COMMANDS[name][0])  # its decorators add the command to this group
        return self.commands.get(name)

    def load_all(self) -> dict[str, click.Command]:
        """Every command, each module imported (for tests and tools that walk the whole tree)."""
        ctx = click.Context(self)
        return {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``COMMANDS`` alone: a command not yet imported is shown by its summary."""
        rows = [(name, self.commands.get(name) or click.Command(name, help=COMMANDS[name][1]))
                for name in self.list_commands(ctx)]
        rows = [(name, cmd) for name, cmd in rows if not cmd.hidden]
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])

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
        ctx.obj = importlib.import_module(_CONTEXT_MODULE).CliContext()
    if verbose:
        logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
        logging.getLogger("caveat").setLevel(logging.INFO)
