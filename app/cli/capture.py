"""`caveat capture`, `caveat verify` and `caveat upload`."""

from __future__ import annotations

import sys
import time

import click

from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.capture.http import capture_urls
from app.capture.verify import verify_all
from app.cli.core import _run_reindex
from app.cli.access import verify_log_command
from app.cli.browser import browser_capture_command
from app.errors import BadRequest
from app.storage.uploads import spool_series, upload_spool


def _shown(url: str) -> str:
    """A URL as one line of output: control characters escaped, very long ones cut."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in url)
    return text if len(text) <= 200 else text[:200] + f"... ({len(url):,} characters)"


def _result_line(r) -> str:
    if r.error:
        return f"error  {_shown(r.url)}: {r.error}"
    redirected = f"  (-> {r.final_url})" if r.final_url and r.final_url != r.url else ""
    kind = "  revisit" if r.snapshot is not None and r.snapshot.record_type == "revisit" else ""
    return f"{r.status}  {r.size:,} B  {r.citation_id}  {r.url}{redirected}{kind}"


def _result_json(r) -> dict:
    return {"url": r.url, "final_url": r.final_url, "status": r.status, "size": r.size,
            "citation_id": r.citation_id if not r.error else None,
            "snapshot": r.citation_id if not r.error else None,     # the older name, kept for scripts
            "revisit": r.snapshot is not None and r.snapshot.record_type == "revisit", "error": r.error}


def read_url_list(stream) -> list[str]:
    """URLs one per line; blank lines and lines starting with ``#`` are skipped."""
    return [line.strip() for line in stream if line.strip() and not line.lstrip().startswith("#")]


@main.command()
@click.argument("urls", nargs=-1)
@click.option("-i", "--from-file", "url_file", type=click.File("r", encoding="utf-8"), default=None,
              help="Also capture the URLs in this file, one per line ('#' starts a comment; '-' reads stdin).")
@click.option("--source-id", type=int, default=None, help="Link the snapshots to this source id.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, captures: [...]} (exit 1 if any URL failed).")
@click.option("--browser", is_flag=True, help="Load each page in Chromium (every request through Caveat's guarded "
              "fetcher) and store every response, the rendered DOM, a screenshot and a page-info record.")
@click.option("--scroll/--no-scroll", default=None, help="With --browser: scroll to the bottom to trigger lazy "
              "loading (default: CAVEAT_BROWSER_SCROLL).")
@click.pass_obj
def capture(obj: CliContext, urls: tuple[str, ...], url_file, source_id: int | None, as_json: bool,
            browser: bool = False, scroll: bool | None = None) -> None:
    """Archive each URL as WARC (request, response, every redirect hop) and index it.

    Prints one line per URL as it is stored: HTTP status, body size, citation id and URL. An
    unchanged page is stored as a revisit record pointing at the earlier copy. Exits 1 if any URL
    failed. Captures of 32 URLs or more fetch and compress in worker processes
    (CAVEAT_CAPTURE_PROCESSES, default 8; 0 keeps them in threads).

    \b
    Examples:
      caveat capture https://example.org/leaderboard https://example.org/notes
      caveat capture --from-file boards.txt
      caveat capture --browser --scroll https://example.org/js-leaderboard
    """
    json_mode(as_json)
    urls = list(urls) + (read_url_list(url_file) if url_file is not None else [])
    if not urls:
        raise click.UsageError("give at least one URL, or --from-file with URLs in it")
    if browser:

        return browser_capture_command(obj, urls, source_id, as_json, scroll)

    db = obj.database()
    failed = 0

    def progress(result) -> None:
        nonlocal failed
        failed += 1 if result.error else 0
        if not as_json:
            click.echo(_result_line(result), err=bool(result.error))

    def notice(message: str) -> None:
        click.echo(f"notice: {message}", err=True)

    started = time.monotonic()
    results = capture_urls(db, urls, source_id=source_id, progress=progress, notice=notice)
    if as_json:
        emit({"count": len(results), "captures": [_result_json(r) for r in results]}, ok=not failed)
        if failed:
            sys.exit(1)
        return
    if len(urls) > 1:
        stored = [r for r in results if r.error is None]
        revisits = sum(1 for r in stored if r.snapshot is not None and r.snapshot.record_type == "revisit")
        click.echo(f"stored {len(stored):,} of {len(urls):,} URL(s) ({revisits:,} unchanged, as revisits) "
                   f"in {time.monotonic() - started:.1f} s", err=True)
    if failed:
        click.echo(f"{failed} of {len(urls)} URL(s) failed; nothing was stored for them", err=True)
        sys.exit(1)


@main.command()
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary line.")
@click.option("--repair", is_flag=True, help="Index the whole WARC records the index lacks (`caveat reindex`), "
              "then check again.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, passed, checked, problems, ...} (exit 1 unless passed).")
@click.option("--log", "check_log", is_flag=True, help="Check the tamper-evident log instead: every logged record's "
              "bytes, the signed tree head, and consistency with each --tree-head.")
@click.option("--tree-head", "tree_heads", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="With --log: a tree head saved earlier (a copy of /log/sth.json); today's log must extend it.")
@click.option("--accept-key", "accept_keys", multiple=True, metavar="KEY",
              help="With --log: accept tree heads signed by this public key (base64, as /log/sth.json gives it) "
              "besides the log's own or pinned ones, after a deliberate change of signing key.")
@click.pass_obj
def verify(obj: CliContext, quiet: bool, repair: bool, as_json: bool, check_log: bool = False, tree_heads: tuple = (),
           accept_keys: tuple = ()) -> None:
    """Check the database (SQLite's integrity check), re-read every indexed WARC record and recompute
    its digests, and look for whole WARC records the index lacks.

    Reports a damaged database, missing WARC files, truncated records, digest or index mismatches and
    unindexed records (whose citations answer 404), one line each with the citation id affected, then
    a summary. Exits 1 when anything is wrong.

    \b
    Example:
      caveat verify
      caveat verify --repair
      caveat verify --log --tree-head sth-2026-12-01.json
    """
    if check_log:

        return verify_log_command(obj, list(tree_heads), quiet, list(accept_keys))

    json_mode(as_json)
    quiet = quiet or as_json

    def progress(problem) -> None:
        if not quiet:
            click.echo(problem.line())

    with obj.session() as s:
        report = verify_all(s, obj.settings, progress=progress)
    if repair and report.unindexed and not report.database:

        click.echo(f"repair: indexing {report.unindexed} record(s) from the WARC files", err=True)
        _run_reindex(obj.database(), reparse=True)
        with obj.session() as s:
            report = verify_all(s, obj.settings, progress=progress)
    if as_json:
        emit({"passed": report.passed, "checked": report.checked, "unindexed": report.unindexed,
              "database": list(report.database), "missing_files": sorted(report.missing_files),
              "changed_objects": sorted(report.changed_objects),
              "counts": report.counts(), "problems": [p.line() for p in report.problems]}, ok=report.passed)
        if not report.passed:
            sys.exit(1)
        return
    for line in report.database[:20]:
        click.echo(f"database  {line}")
    if report.passed:
        click.echo(f"ok: {report.checked} record(s) checked, all digests match; the database passed its "
                   "integrity check and every whole WARC record is indexed")
        return
    if report.database:
        click.echo(f"FAILED: the database {obj.database(migrated=False).safe_url()} is damaged "
                   f"({len(report.database)} problem(s)). Citations may answer 404 or wrong data. Restore it "
                   "from a backup, or move it aside and run `caveat init --reindex`: the archive index, "
                   "entries and flags come back from the WARC files (accounts and review decisions only "
                   "from a backup).")
        sys.exit(1)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items()))
    click.echo(f"FAILED: {len(report.problems)} of {report.checked + report.unindexed} record(s) have problems "
               f"({counts})" + ("; `caveat verify --repair` indexes the unindexed ones"
                                     if report.unindexed and not repair else ""))
    if report.missing_files:
        click.echo("missing files: " + ", ".join(sorted(report.missing_files)))
    if report.changed_objects:
        click.echo("changed objects (their size or SHA-256 is not what was uploaded; restore them from a copy): "
                   + ", ".join(sorted(report.changed_objects)))
    sys.exit(1)


@main.command()
@click.option("--all", "seal_all", is_flag=True, help="Also seal and upload the newest file of every series no "
              "writer holds now (the main series included), not only the rotated ones.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, uploaded, already, failed, waiting}.")
@click.pass_obj
def upload(obj: CliContext, seal_all: bool, as_json: bool) -> None:
    """Upload the sealed WARC files of the local spool to CAVEAT_ARCHIVE_URL now (docs/storage.md).

    `caveat worker` and `caveat crawl` do this themselves, beside capture; this command is for the files
    `caveat serve` or `caveat capture` wrote, or a spool left by a machine that stopped. Each object is
    written once (never over another) and checked by its SHA-256 before the local copy is removed.
    Exits 1 when an upload failed (the local file is kept).

    \b
    Example:
      CAVEAT_ARCHIVE_URL=s3://warcs/caveat caveat upload --all
    """
    json_mode(as_json)
    if not obj.settings.archive_url:
        raise BadRequest("CAVEAT_ARCHIVE_URL is not set: the WARC files stay in the data folder, nothing to upload "
                         "(set it to s3://bucket/prefix, with CAVEAT_S3_ENDPOINT for a store other than Amazon S3)")
    db = obj.database()
    seal = frozenset(spool_series(obj.settings.warc_dir)) if seal_all else frozenset()
    report = upload_spool(db, seal=seal, say=(lambda m: None) if as_json else (lambda m: click.echo(m, err=True)))
    if as_json:
        emit({"uploaded": report.uploaded, "already": report.already, "failed": report.failed,
              "waiting": report.waiting}, ok=not report.failed)
    else:
        click.echo(f"{len(report.uploaded)} file(s) uploaded, {len(report.already)} already there, "
                   f"{len(report.failed)} failed; {report.waiting} open file(s) left to their writers")
    if report.failed:
        sys.exit(1)
