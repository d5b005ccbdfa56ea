"""`caveat export-wacz` and `caveat import-warc` (registered on `app.cli.main`)."""

from __future__ import annotations

import sys

import click

from pathlib import Path

from app.cli.group import emit, json_mode, main
from app.errors import BadRequest, Conflict, NotFound
from app.cli.context import CliContext
from app.replay.links import known_base
from app.replay.wacz_export import export_wacz
from app.rebuild.importer import import_warcs


def _check_out(out: Path, force: bool) -> None:
    """A WACZ goes to a ``.wacz`` file in an existing folder, and never replaces a file unless ``--force``
    (nor, even then, a folder or a file of another kind)."""
    if out.suffix.lower() != ".wacz":
        raise BadRequest(f"{out} does not end in .wacz: name the package e.g. {out.with_suffix('.wacz').name}.")
    if not out.parent.is_dir():
        raise NotFound(f"No folder {out.parent}: create it first (mkdir -p {out.parent}).")
    if out.is_dir():
        raise Conflict(f"{out} is a folder: give a file name, e.g. {out / 'archive.wacz'}.")
    if out.exists() and not force:
        raise Conflict(f"{out} exists: give another name, or --force to replace it.")


@main.command("export-wacz")
@click.argument("out")
@click.option("--source", default=None, help="Only snapshots captured for this source (by name).")
@click.option("--since", default=None, help="Only snapshots captured on or after this date (YYYY-MM-DD).")
@click.option("--force", is_flag=True, help="Replace OUT if it exists (a .wacz file only).")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, path, snapshots, records, pages, measurements, "
              "skipped, notes}.")
@click.pass_obj
def export_wacz_cmd(obj: CliContext, out: str, source: str | None, since: str | None, force: bool = False,
                    as_json: bool = False) -> None:
    """Write a WACZ package of archived snapshots: WARC, CDXJ index, pages.jsonl with page text, and
    datapackage.json with the sha256 of every file. Every record's digests are checked first.

    \b
    Example:
      caveat export-wacz leaderboards.wacz --source localmaxxing --since 2026-11-01
    """
    json_mode(as_json)
    _check_out(Path(out), force)
    with obj.session() as s:
        report = export_wacz(s, obj.settings, out, source=source, since=since)
    if as_json:
        emit({"path": report.path, "snapshots": report.snapshots, "records": report.records, "pages": report.pages,
              "measurements": report.measurements, "skipped": report.skipped, "notes": report.notes},
             ok=not report.skipped)
        sys.exit(1 if report.skipped else 0)
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
@click.option("--json", "as_json", is_flag=True, help="Print {ok, files: [{path, imported: [{citation_id, url, "
              "citation_url}], skipped, problems, measurements}]}.")
@click.pass_obj
def import_warc_cmd(obj: CliContext, files: tuple[str, ...], as_json: bool = False) -> None:
    """Import WARC files written by other tools (wget, warcio, browsers' archivers): each response
    becomes a snapshot with a citation id. Records are copied into Caveat's store with their digests
    checked, so the original files may be deleted afterwards. Bad records are reported one by one and
    skipped; the good ones are kept. Exit status 1 if any record was bad.

    \b
    Example:
      caveat import-warc crawl.warc.gz old/*.warc
    """
    json_mode(as_json)
    base = known_base(obj.settings)
    bad = 0
    reports = import_warcs(obj.database(), list(files))
    if as_json:
        bad = sum(len(r.problems) for r in reports)
        emit({"files": [{"path": r.path, "imported": [
            {"citation_id": x.citation_id, "url": x.url, "citation_url": f"{base}/c/{x.citation_id}" if base else None}
            for x in r.imported], "skipped": r.skipped, "problems": r.problems, "measurements": r.measurements}
            for r in reports]}, ok=not bad)
        sys.exit(1 if bad else 0)
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
