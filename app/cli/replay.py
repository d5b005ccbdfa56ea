"""`caveat export-wacz` and `caveat import-warc` (registered on `app.cli.main`)."""

from __future__ import annotations

import sys

import click

from app.cli.group import main
from app.cli.context import CliContext
from app.replay.links import known_base
from app.replay.wacz_export import export_wacz
from app.rebuild.importer import import_warcs


@main.command("export-wacz")
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
@click.option("--source", default=None, help="Only snapshots captured for this source (by name).")
@click.option("--since", default=None, help="Only snapshots captured on or after this date (YYYY-MM-DD).")
@click.pass_obj
def export_wacz_cmd(obj: CliContext, out: str, source: str | None, since: str | None) -> None:
    """Write a WACZ package of archived snapshots: WARC, CDXJ index, pages.jsonl with page text, and
    datapackage.json with the sha256 of every file. Every record's digests are checked first.

    \b
    Example:
      caveat export-wacz leaderboards.wacz --source localmaxxing --since 2026-11-01
    """
    with obj.session() as s:
        report = export_wacz(s, obj.settings, out, source=source, since=since)
    for line in report.skipped:
        click.echo(f"skipped (not exported): {line}", err=True)
    for line in report.notes:
        click.echo(f"note: {line}", err=True)
    n = report.measurements
    measured = f", {n} measurement{'s' if n != 1 else ''}" if n else ""
    click.echo(f"wrote {report.path}: {report.snapshots} snapshots, {report.records} WARC records, "
               f"{report.pages} pages{measured}")
    if report.skipped:
        sys.exit(1)


@main.command("import-warc")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_obj
def import_warc_cmd(obj: CliContext, files: tuple[str, ...]) -> None:
    """Import WARC files written by other tools (wget, warcio, browsers' archivers): each response
    becomes a snapshot with a citation id. Records are copied into Caveat's store with their digests
    checked, so the original files may be deleted afterwards. Bad records are reported one by one and
    skipped; the good ones are kept. Exit status 1 if any record was bad.

    \b
    Example:
      caveat import-warc crawl.warc.gz old/*.warc
    """
    base = known_base(obj.settings)
    bad = 0
    reports = import_warcs(obj.database(), list(files))
    for r in reports:
        for snap in r.imported:
            link = f"  {base}/c/{snap.citation_id}" if base else ""     # no base URL known: the id alone
            click.echo(f"{snap.citation_id}{link}  {snap.url}")
        for line in r.problems:
            click.echo(f"bad record in {r.path}: {line}", err=True)
        bad += len(r.problems)
        n = r.measurements
        measured = f", {n} measurement{'s' if n != 1 else ''} restored" if n else ""
        click.echo(f"{r.path}: {len(r.imported)} imported, {len(r.skipped)} skipped, {len(r.problems)} bad{measured}",
                   err=True)
    if bad:
        sys.exit(1)
