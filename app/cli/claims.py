"""`caveat source add|list|remove`, `caveat crawl`, `caveat reparse`."""

from __future__ import annotations

import sys

import click

from app.storage.uploads import Uploader
from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.crawl import workflow as crawl_service
from app.crawl.adopt import adopt_archived
from app.models import Source
import app.watch.schedule as schedule_service
from app.claims.sources import KINDS, add_source, get_source, list_sources, remove_source
from app.watch.schedule import format_every, parse_every, set_schedule
from app.errors import NotFound
from app.claims.sources import source_json
from app.demo.run import demo_sources
from archive.fetcher import parse_allowed_hosts, written_address_problem

SHOWN_WARNINGS = 5


@main.group()
def source() -> None:
    """Manage the leaderboards and posts Caveat follows.

    \b
    Example:
      caveat source add localmaxxing https://localmaxxing.com/api/leaderboard --kind json
    """


@source.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--kind", type=click.Choice(KINDS, case_sensitive=False), default=None,
              help="How to parse the page. Left out: guessed at the first crawl from the content type and "
                   "the content, and the guess is reported.")
@click.option("--every", default=None, metavar="INTERVAL",
              help="Re-crawl on a schedule: 30m, 6h, 1d, 1h30m (workers or `caveat serve` run it; docs/watch.md).")
@click.option("--browser", is_flag=True, help="Crawl it with Chromium (a JavaScript-rendered page): the rendered "
              "DOM is parsed and cited.")
@click.option("--key", "keys", multiple=True, metavar="COLUMN",
              help="A column (its header) that tells one row from another on an unusual board; repeatable. "
                   "Left out: model, hardware, engine and the like, never a rank, # or position column.")
@click.option("--from-archive", "from_archive", is_flag=True,
              help="Also give it the snapshots of URL already in the archive (from `caveat import-warc`, or "
                   "captured before) that no source owns, and read and audit them now; nothing is fetched.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, source} as POST /api/sources does (with "
              "--from-archive also adopted, owned_elsewhere and report).")
@click.pass_obj
def source_add(obj: CliContext, name: str, url: str, kind: str | None, every: str | None = None,
               browser: bool = False, keys: tuple[str, ...] = (), from_archive: bool = False,
               as_json: bool = False) -> None:
    """Follow a new source. Nothing is fetched until `caveat crawl`.

    A URL the crawler would refuse (written as a loopback, private or link-local address, or
    localhost) is refused here, unless CAVEAT_ALLOW_PRIVATE_ADDRESSES or CAVEAT_ALLOW_PRIVATE_HOSTS
    allows it. --from-archive reads captures already archived for URL (`caveat import-warc`).

    \b
    Example:
      caveat source add glm-card https://huggingface.co/org/model/raw/main/README.md --kind markdown
      caveat import-warc board.warc.gz && caveat source add board https://example.org/board --from-archive
    """
    json_mode(as_json)
    seconds = parse_every(every) if every is not None else None  # a bad schedule fails before anything is added
    with obj.session() as s:
        src = add_source(s, name, url, kind, browser=browser, key_columns=keys, settings=obj.settings)
        if seconds is not None:
            set_schedule(s, src, seconds)
        how = f"kind {src.kind}" if src.kind else "kind guessed at first crawl"
        how += ", captured with the browser" if src.browser else ""
        how += f", rows keyed by {', '.join(src.key_columns)}" if src.key_columns else ""
        when = f", every {format_every(seconds)}" if seconds else ""
        source_id = src.id
        if not from_archive:
            if as_json:
                emit({"source": source_json(s, src)})
                return
            click.echo(f"added source {src.name}: {src.url} ({how}{when})")
            return
        line = f"added source {src.name}: {src.url} ({how}{when})"
    adopted = adopt_archived(obj.database(), obj.settings, source_id)
    r = adopted.report
    failed = r is not None and r.failed
    if as_json:
        with obj.session() as s:
            body = source_json(s, s.get(Source, source_id))
        emit({"source": body, "adopted": adopted.citation_ids, "owned_elsewhere": adopted.owned_elsewhere,
              "report": report_json(r) if r else None}, ok=not failed)
        sys.exit(1 if failed else 0)
    click.echo(line)
    if adopted.owned_elsewhere:
        click.echo(f"{len(adopted.owned_elsewhere)} snapshot(s) of this URL belong to another source and were "
                   f"left there: {', '.join(adopted.owned_elsewhere[:5])}")
    if not adopted.citation_ids:
        click.echo(f"no unowned snapshot of {url} in the archive (`caveat import-warc FILE` brings captures in); "
                   "`caveat crawl` fetches it")
        return
    click.echo(f"adopted {len(adopted.citation_ids)} archived snapshot(s): {', '.join(adopted.citation_ids[:10])}"
               + (" ..." if len(adopted.citation_ids) > 10 else ""))
    _summary([r], "reparse")
    if failed:
        sys.exit(1)


@source.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, sources} as GET /api/sources does.")
@click.pass_obj
def source_list(obj: CliContext, as_json: bool) -> None:
    """List the sources with their kind and last crawl. Exit code 1 when there are none (with --json: an empty list, ok, exit 0).

    \b
    Example:
      caveat source list
    """
    json_mode(as_json)
    with obj.session() as s:
        rows = list_sources(s)
        if as_json:
            emit({"count": len(rows), "sources": [source_json(s, src) for src in rows]})
            return
        if not rows:
            raise NotFound("No sources yet: `caveat source add NAME URL` adds one.")
        for src in rows:
            kind = (src.kind or "?") + (" (guessed)" if src.kind_guessed else "")
            last = src.last_crawl_at.strftime("%Y-%m-%d %H:%M") if src.last_crawl_at else "never crawled"
            status = f" {src.last_status}" if src.last_status else ""
            click.echo(f"{src.name}\t{kind}\t{src.url}\t{last}{status}")


@source.command("remove")
@click.argument("name")
@click.pass_obj
def source_remove(obj: CliContext, name: str) -> None:
    """Stop following a source. Its snapshots, entries and history are kept.

    \b
    Example:
      caveat source remove glm-card
    """
    with obj.session() as s:
        remove_source(s, name)
    click.echo(f"removed source {name} (its archive and entries are kept)")


class _Display:
    """A one-line-per-source progress display on a terminal; plain lines otherwise."""

    def __init__(self, total: int, verb: str):
        self.total, self.verb, self.n = total, verb, 0
        self.tty = sys.stderr.isatty()

    def __call__(self, event: str, report) -> None:
        if event == "done":
            self.n += 1
            line = f"[{self.n}/{self.total}] {report.name}: {report.status}"
            if self.tty:
                click.echo("\r\033[K" + line, err=True)
            else:
                click.echo(line, err=True)
            return
        words = {"capture": "capturing", "parse": "parsing"}.get(event, event)
        line = f"[{self.n + 1}/{self.total}] {report.name}: {words} {report.url}"
        if self.tty:
            click.echo("\r\033[K" + line, nl=False, err=True)
        else:
            click.echo(line, err=True)


def _summary(reports, verb: str) -> None:
    if not reports:
        click.echo("no sources to " + verb)
        return
    width = max(len(r.name) for r in reports)
    click.echo(f"{'source':<{width}}  status    new  changed  unchanged  gone  warnings  proposed  snapshot")
    for r in reports:
        s = r.summary
        click.echo(f"{r.name:<{width}}  {r.status:<8} {s.new:>4} {s.changed:>8} {s.unchanged:>10} {s.gone:>5} "
                   f"{len(s.warnings):>9} {s.proposed:>9}  {r.snapshot or '-'}")
    proposed = sum(r.summary.proposed for r in reports)
    if proposed:
        click.echo(f"{proposed} figure(s) proposed by the learned reader, not quoted until a reviewer confirms "
                   "them: /queue?status=proposed, GET /api/entries?status=proposed")
    for r in reports:
        if r.kind_note:
            click.echo(f"{r.name}: {r.kind_note}")
        if r.error:
            click.echo(f"{r.name}: {r.error}")
        for w in r.summary.warnings[:SHOWN_WARNINGS]:
            click.echo(f"{r.name}: warning: {w}")
        if len(r.summary.warnings) > SHOWN_WARNINGS:
            click.echo(f"{r.name}: ... and {len(r.summary.warnings) - SHOWN_WARNINGS} more warnings "
                       f"(GET /api/sources shows them all)")
    failed = [r.name for r in reports if r.failed]
    if failed:
        click.echo(f"{len(failed)} of {len(reports)} sources failed: {', '.join(failed)}")


def report_json(r) -> dict:
    s = r.summary
    return {"source": r.name, "status": r.status, "failed": bool(r.failed), "snapshot": r.snapshot,
            "new": s.new, "changed": s.changed, "unchanged": s.unchanged, "gone": s.gone,
            "proposed": s.proposed, "proposed_new": s.proposed_new,
            "warnings": list(s.warnings), "error": r.error, "kind_note": r.kind_note}


def _unreachable(obj: CliContext, sources) -> tuple[list, list[str]]:
    """Sources the crawler would refuse (addresses on this machine, private addresses off): skipped with
    a reason instead of being marked failed. The demo's sample server lives only while `caveat demo` runs."""
    if obj.settings.allow_private_addresses:
        return list(sources), []

    demo_names = {d["name"] for d in demo_sources()}
    keep, skipped = [], []

    allowed = parse_allowed_hosts(getattr(obj.settings, "allow_private_hosts", ""))
    for src in sources:
        if written_address_problem(src.url, False, allowed) is None:  # the check `source add` makes
            keep.append(src)
        elif src.name in demo_names:
            skipped.append(f"{src.name}: skipped, {src.url} is the demo's sample server, which runs only while "
                           "`caveat demo` does; run `caveat demo` again to re-crawl the samples")
        else:
            skipped.append(f"{src.name}: skipped, {src.url} is an address on this machine or a private network, "
                           "which the crawler refuses; set CAVEAT_ALLOW_PRIVATE_ADDRESSES=1 to crawl it")
    return keep, skipped


@main.command("crawl")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, reports, skipped} (one report per source).")
@click.pass_obj
def crawl_cmd(obj: CliContext, names: tuple[str, ...], as_json: bool) -> None:
    """Capture each source (all of them when no NAME is given), parse and store its claims, audit them.

    One failing source never stops the others; the exit code is 1 if any failed, parsed nothing or
    was skipped (an address on this machine while private addresses are refused).

    \b
    Example:
      caveat crawl localmaxxing glm-card
    """
    json_mode(as_json)
    db = obj.database()
    sources = crawl_service.select_sources(db, list(names))
    if not sources:
        raise NotFound("No sources to crawl: `caveat source add NAME URL` adds one.")
    sources, skipped = _unreachable(obj, sources)
    display = _Display(len(sources), "crawl")
    # With a bucket (docs/storage.md): sealed files upload beside the crawl; ours is sealed at its end.
    uploader = Uploader(db, series=obj.settings.warc_series, say=lambda m: click.echo(m, err=True)).start() \
        if obj.settings.archive_url else None
    try:
        reports = [schedule_service.crawl_now(db, obj.settings, src, display) for src in sources]
    finally:
        if uploader is not None:
            uploader.close()
    if as_json:
        emit({"count": len(reports), "reports": [report_json(r) for r in reports], "skipped": skipped},
             ok=not (any(r.failed for r in reports) or skipped))
    else:
        if reports:
            _summary(reports, "crawl")
        for line in skipped:
            click.echo(line, err=True)
        if skipped:
            click.echo(f"{len(skipped)} of {len(reports) + len(skipped)} sources skipped", err=True)
    if any(r.failed for r in reports) or skipped:
        sys.exit(1)


@main.command("reparse")
@click.option("--source", "name", default=None, help="Only this source (default: every source).")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, reports} (one report per source).")
@click.pass_obj
def reparse_cmd(obj: CliContext, name: str | None, as_json: bool = False) -> None:
    """Run the parsers again over every archived snapshot, in time order, without fetching anything.

    A new entry version is written only where the result differs from what the entry held at that
    snapshot, so an improved parser re-reads history and an unchanged one adds nothing.

    \b
    Example:
      caveat reparse --source localmaxxing
    """
    json_mode(as_json)
    db = obj.database()
    sources = crawl_service.select_sources(db, [name] if name else None)
    display = _Display(len(sources), "reparse")
    reports = [crawl_service.reparse_one(db, obj.settings, src, display) for src in sources]
    if as_json:
        failed = any(r.failed for r in reports)
        emit({"count": len(reports), "reports": [report_json(r) for r in reports]}, ok=not failed)
        sys.exit(1 if failed else 0)
    _summary(reports, "reparse")
    if any(r.failed for r in reports):
        sys.exit(1)


@source.command("set")
@click.argument("name")
@click.option("--every", required=True, metavar="INTERVAL",
              help="Re-crawl interval: 30m, 6h, 1d, 1h30m; `off` stops the schedule.")
@click.pass_obj
def source_set(obj: CliContext, name: str, every: str) -> None:
    """Change a source's schedule.

    The next crawl is due one interval after the last one (at once if that is past, or if the source
    was never crawled), moved by a little jitter. Workers (`caveat worker`, PostgreSQL) or `caveat serve`
    (SQLite) run it.

    \b
    Examples:
      caveat source set localmaxxing --every 6h
      caveat source set localmaxxing --every off
    """
    seconds = parse_every(every)
    with obj.session() as s:
        src = set_schedule(s, get_source(s, name), seconds)
        if seconds is None:
            click.echo(f"{src.name}: no schedule (crawled only when asked)")
        else:
            click.echo(f"{src.name}: every {format_every(seconds)}, next crawl due {src.next_crawl_at:%Y-%m-%d %H:%M:%S} UTC")
