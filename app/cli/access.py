"""``caveat withdraw``, ``caveat restrict`` and ``caveat reinstate``: take a capture out of view (410 or
403, with a tombstone) or put it back, recorded with who and why (app/replay/withdrawal.py)."""

from __future__ import annotations

import getpass

import click

from app.cli.group import main
from app.audit.access import change_access
from app.replay.links import known_base
import json
import sys
from sqlalchemy import select

from app.models import Snapshot
from app.storage.indexing import warc_files
from app.storage.tlog import verify_log
from archive.indexer import walk


def _actor(by: str | None) -> str:
    if by:
        return by
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no user name in this environment
        return "cli"


def _run(obj, action: str, citation_id: str, reason: str, by: str | None) -> None:
    event = change_access(obj.database(), citation_id, action, reason, actor=_actor(by))
    base = known_base(obj.settings)
    where = f"{base}/c/{event['citation_id']}" if base else f"/c/{event['citation_id']}"
    click.echo(f"{event['citation_id']}: {event['state']} ({event['action']} by {event['actor']}: {event['reason']})")
    click.echo(f"  {where} now answers "
               + {"withdrawn": "410 Gone with its tombstone", "restricted": "403 (kept, not shown)",
                  "public": "200 again"}[event["state"]])


_REASON = click.option("--reason", required=True, help="Why (kept in the audit log and in the WARC).")
_BY = click.option("--by", default=None, help="Who is doing this (default: cli:<your user name>).")


@main.command()
@click.argument("citation_id")
@_REASON
@_BY
@click.pass_obj
def withdraw(obj, citation_id: str, reason: str, by: str | None) -> None:
    """Withdraw a capture: its citation answers 410 Gone, its metadata and the reason still shown.

    The bytes stay in the WARC (caveat verify still checks them); it leaves TimeMaps, TimeGates, capture
    lists, WACZ exports and quotable evidence. Undo with caveat reinstate.

    \b
    Example:
      caveat withdraw ABCD-EFGH --reason "takedown request from the page's author, 2026-12-01"
    """
    _run(obj, "withdraw", citation_id, reason, by)


@main.command()
@click.argument("citation_id")
@_REASON
@_BY
@click.pass_obj
def restrict(obj, citation_id: str, reason: str, by: str | None) -> None:
    """Restrict a capture: kept but not shown, its citation answers 403. Undo with caveat reinstate.

    \b
    Example:
      caveat restrict ABCD-EFGH --reason "personal data on the page"
    """
    _run(obj, "restrict", citation_id, reason, by)


@main.command()
@click.argument("citation_id")
@_REASON
@_BY
@click.pass_obj
def reinstate(obj, citation_id: str, reason: str, by: str | None) -> None:
    """Make a withdrawn or restricted capture public again.

    \b
    Example:
      caveat reinstate ABCD-EFGH --reason "captured correctly after all"
    """
    _run(obj, "reinstate", citation_id, reason, by)


def _warc_records(settings) -> list[tuple[str, int, str, str]]:
    """(file, offset, record id, type) of every whole record in the WARC folder."""
    return [(path.name, found.offset, found.header("WARC-Record-ID") or "", found.warc_type)
            for path in warc_files(settings.warc_dir)
            for found in walk(path, 0, max_record_bytes=settings.decode_max_bytes) if not found.problem]


def verify_log_command(obj, tree_head_files: list[str], quiet: bool, accept_keys: list[str] = ()) -> None:
    """``caveat verify --log``: the tamper-evident log against the WARC files and saved tree heads."""

    earlier = []
    for path in tree_head_files:
        try:
            earlier.append(json.loads(open(path, encoding="utf-8").read()))
        except ValueError as exc:
            click.echo(f"error: {path} is not a tree head (JSON from /log/sth.json): {exc}", err=True)
            sys.exit(1)
    with obj.session() as s:
        imported = set(s.scalars(select(Snapshot.record_id).where(Snapshot.origin == "import")))
    report = verify_log(obj.settings, earlier, progress=None if quiet else click.echo, accept_keys=list(accept_keys),
                        imported=imported, warc_records=_warc_records(obj.settings))
    for note in report.notes:
        click.echo(f"note: {note}")
    if report.imported:
        click.echo(f"imports: {report.imported} logged record(s) came in with `caveat import-warc` (captured by "
                   "another tool, logged when imported)")
    if report.passed:
        click.echo(f"ok: the log's {report.size} leaves match their records ({report.checked} re-read); every WARC "
                   f"record is logged; {report.tree_heads} signed tree head(s) checked, each a prefix of today's "
                   f"log, signed by {len(report.keys)} key(s) allowed")
        return
    click.echo(f"FAILED: {len(report.problems)} problem(s) in the tamper-evident log of {report.size} leaves")
    sys.exit(1)
