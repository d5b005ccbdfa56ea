"""`caveat worker`, `caveat hook add|list|remove|deliveries`, `caveat changes`."""

from __future__ import annotations

import sys

import click

from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.watch.worker import run_worker
from app.watch.hooks import add_hook, hook_json
from app.watch.hooks import list_hooks
from app.watch.hooks import remove_hook
from app.watch.hooks import delivery_json, list_deliveries
from app.watch.changes import list_changes, title


@main.command()
@click.option("--concurrency", default=1, show_default=True, help="Jobs this worker runs at once (threads).")
@click.option("--stalled-after", default=30.0, show_default=True,
              help="Seconds without a heartbeat after which another worker's job is taken as lost and run again.")
@click.option("--once", is_flag=True, help="Stop when the queue is empty (for scripts and benchmarks).")
@click.pass_obj
def worker(obj: CliContext, concurrency: int, stalled_after: float, once: bool) -> None:
    """Run crawl and webhook jobs from the job queue (PostgreSQL), until Ctrl-C or SIGTERM.

    Run as many workers as you like, on one machine or several: they share the work through the
    queue's tables in PostgreSQL, and no source is ever crawled by two of them at once. Every machine
    must use the same CAVEAT_DATABASE_URL and the same CAVEAT_DATA_DIR (a shared file system: the WARC
    files, the CDXJ index and the tamper-evident log live there), and the same CAVEAT_SECRET_KEY.
    Each worker writes its own WARC file series (caveat-w_<host>_<n>-...), so no two writers ever append
    to one file. Workers also queue the due sources, retry failed jobs with backoff, and run again the
    jobs of a worker that died. On SQLite there are no workers: `caveat serve` runs due crawls itself.

    \b
    Examples:
      CAVEAT_DATABASE_URL=postgresql+psycopg2://caveat@db/caveat caveat worker
      caveat worker --concurrency 4
    """
    db = obj.database()
    run_worker(db, concurrency=max(1, concurrency), stalled_after=stalled_after, once=once,
               say=lambda m: click.echo(m, err=True))


@main.group()
def hook() -> None:
    """Webhooks: every change event POSTed to a receiver, HMAC-signed, retried with backoff.

    \b
    Example:
      caveat hook add https://example.org/caveat-hook --secret "$(openssl rand -hex 24)"
    """


@hook.command("add")
@click.argument("url")
@click.option("--secret", required=True, help="Shared secret (16+ characters) the signature is made with.")
@click.option("--cited-only", is_flag=True, help="Only events on entries someone cited.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, hook}.")
@click.pass_obj
def hook_add(obj: CliContext, url: str, secret: str, cited_only: bool, as_json: bool) -> None:
    """Send every change event to URL (a JSON POST signed with X-Caveat-Signature, docs/watch.md).

    \b
    Example:
      caveat hook add https://example.org/caveat-hook --secret "$(openssl rand -hex 24)"
    """
    json_mode(as_json)
    with obj.session() as s:
        h = add_hook(s, url, secret, cited_only=cited_only)
        body = hook_json(h)
    if as_json:
        emit({"hook": body})
    else:
        click.echo(f"added hook {body['id']}: {body['url']}" + (" (cited entries only)" if cited_only else ""))


@hook.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, hooks}.")
@click.pass_obj
def hook_list(obj: CliContext, as_json: bool) -> None:
    """List the hooks (never their secrets). Exit code 1 when there are none (with --json: an empty list, ok, exit 0).

    \b
    Example:
      caveat hook list --json
    """
    json_mode(as_json)
    with obj.session() as s:
        rows = [hook_json(h) for h in list_hooks(s)]
    if as_json:
        emit({"count": len(rows), "hooks": rows})
        return
    else:
        for h in rows:
            click.echo(f"{h['id']}\t{h['url']}" + ("\tcited only" if h["cited_only"] else ""))
        if not rows:
            click.echo("no hooks: `caveat hook add URL --secret ...` adds one", err=True)
    if not rows:
        sys.exit(1)


@hook.command("remove")
@click.argument("hook_id", type=int)
@click.pass_obj
def hook_remove(obj: CliContext, hook_id: int) -> None:
    """Stop sending to a hook (its delivery log is kept).

    \b
    Example:
      caveat hook remove 2
    """
    with obj.session() as s:
        h = remove_hook(s, hook_id)
        click.echo(f"removed hook {h.id}: {h.url}")


@hook.command("deliveries")
@click.option("--hook", "hook_id", type=int, default=None, help="Only this hook's deliveries.")
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, deliveries}.")
@click.pass_obj
def hook_deliveries(obj: CliContext, hook_id: int | None, limit: int, as_json: bool) -> None:
    """The delivery log, newest first: status, attempts, the receiver's last answer.

    \b
    Example:
      caveat hook deliveries --hook 1
    """
    json_mode(as_json)
    with obj.session() as s:
        rows = [delivery_json(d) for d in list_deliveries(s, hook_id, max(1, min(limit, 500)))]
    if as_json:
        emit({"count": len(rows), "deliveries": rows})
        return
    for d in rows:
        last = f"HTTP {d['last_code']}" if d["last_code"] else (d["last_error"] or "")
        click.echo(f"{d['id']}\thook {d['hook_id']}\tevent {d['event_id']}\t{d['status']}\t"
                   f"{d['attempts']} attempt(s)\t{last}")


@main.command("changes")
@click.option("--source", default=None, help="Only this source's events.")
@click.option("--kind", type=click.Choice(["changed", "vanished", "returned"]), default=None)
@click.option("--cited", is_flag=True, help="Only events on entries someone cited.")
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, total, changes} as GET /api/changes.")
@click.pass_obj
def changes_cmd(obj: CliContext, source: str | None, kind: str | None, cited: bool, limit: int, as_json: bool) -> None:
    """What the crawls found changed or vanished, newest first, with both citations.

    \b
    Example:
      caveat changes --cited
    """
    json_mode(as_json)
    with obj.session() as s:
        rows, total = list_changes(s, obj.settings, source=source, kind=kind, cited=True if cited else None,
                                   limit=max(1, min(limit, 500)))
    if as_json:
        emit({"count": len(rows), "total": total, "changes": rows})
        return
    else:
        for ev in rows:
            click.echo(f"{ev['created_at']:%Y-%m-%d %H:%M}  {ev['kind']:<8} {'cited ' if ev['cited'] else ''}{title(ev)}")
            for side in ("old", "new"):
                if ev.get(side) and ev[side].get("citation"):
                    click.echo(f"    {side}: {ev[side]['citation']}")
    if not rows:
        sys.exit(1)
