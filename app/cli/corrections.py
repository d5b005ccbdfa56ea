"""``caveat entry fix|add|reject``: a reviewer's corrections of entries (issue 27), recorded with who and
why in the WARC files and the ``corrections`` table, applied at once and kept through every reparse and
reindex (app/review/corrections.py)."""

from __future__ import annotations

import getpass

import click

from app.cli.group import emit, json_mode, main
from app.review import corrections as review

_WHY = click.option("--why", required=True, help="Why (kept in the audit log and in the WARC).")
_BY = click.option("--by", default=None, help="Who is correcting (default: cli:<your user name>).")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
_VERSION = click.option("--version", "version", type=int, default=None,
                        help="The entry's version you looked at (refused if it changed since: the `version` of GET /api/entries/ID).")


def _field_options(f):
    for name in reversed(("model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase",
                          "scope", "concurrency", "test", "draft_tokens", "spec_method", "steady_low", "steady_high",
                          "prompt")):
        f = click.option(f"--{name.replace('_', '-')}", name, default=None, help=f"The entry's {name}.")(f)
    return f


def _actor(by: str | None) -> str:
    if by:
        return by
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no user name in this environment
        return "cli"


def _show(result: dict, what: str, as_json: bool) -> None:
    if as_json:
        emit(result)
        return
    entry = result.get("entry") or {}
    click.echo(f"correction {result['correction_id']}: {what}"
               + (f"; entry {result['entry_id']} is at version {entry.get('version')}" if result.get("entry_id") else ""))
    fields = entry.get("fields") or {}
    if fields:
        click.echo("  " + ", ".join(f"{k}={v}" for k, v in sorted(fields.items()) if not isinstance(v, (dict, list))))
    for w in result.get("warnings") or []:
        click.echo(f"  warning: {w}")


@main.group()
def entry() -> None:
    """Correct what the reader made of a page: fix an entry's fields, add a figure it missed, reject one.

    \b
    Example:
      caveat entry fix 12 --model Qwen3-32B --why "the row names the model, not the draft head"
    """


@entry.command("fix")
@click.argument("entry_id", type=int)
@_field_options
@_WHY
@_BY
@_VERSION
@_JSON
@click.pass_obj
def fix(obj, entry_id: int, why: str, by: str | None, version: int | None, as_json: bool, **fields) -> None:
    """Correct fields of an entry (only the options given).

    \b
    Example:
      caveat entry fix 12 --model Llama-3.1-8B --phase prefill --why "the page's table header says prefill"
    """
    json_mode(as_json)
    given = {k: v for k, v in fields.items() if v is not None}
    result = review.fix_entry(obj.database(), obj.settings, entry_id, given, why, actor=_actor(by), version=version)
    _show(result, "fixed " + ", ".join(sorted(given)), as_json)


@entry.command("reject")
@click.argument("entry_id", type=int)
@_WHY
@_BY
@_VERSION
@_JSON
@click.pass_obj
def reject(obj, entry_id: int, why: str, by: str | None, version: int | None, as_json: bool) -> None:
    """Reject an entry as not a claim: it is left out of every later parse (marked gone).

    \b
    Example:
      caveat entry reject 12 --why "a price per token, not a speed"
    """
    json_mode(as_json)
    result = review.reject_entry(obj.database(), obj.settings, entry_id, why, actor=_actor(by), version=version)
    _show(result, "rejected (not a claim)", as_json)


@entry.command("add")
@click.argument("snapshot")
@click.option("--quote", required=True, help="The figure's exact text in the archived page (e.g. 140.2).")
@click.option("--prefix", default="", help="Text just before it, enough to name one occurrence.")
@click.option("--suffix", default="", help="Text just after it.")
@_field_options
@_WHY
@_BY
@_JSON
@click.pass_obj
def add(obj, snapshot: str, quote: str, prefix: str, suffix: str, why: str, by: str | None, as_json: bool,
        **fields) -> None:
    """Add a figure the reader missed, from its snapshot (citation id) and a quote selector.

    \b
    Example:
      caveat entry add ABCD-EFGH --quote 140.2 --prefix "scored " --suffix " on" --model Mistral-7B \\
        --why "the footnote's figure"
    """
    json_mode(as_json)
    given = {k: v for k, v in fields.items() if v is not None}
    result = review.add_entry(obj.database(), obj.settings, snapshot, quote, prefix, suffix, given, why,
                              actor=_actor(by))
    _show(result, f"added {quote!r} from {snapshot}", as_json)


@entry.command("clause")
@click.argument("entry_id", type=int)
@click.option("--clause", "clause", required=True,
              help="The clause's text, as `caveat entries show ID` / the entry page's notes reading gives it.")
@click.option("--benign", is_flag=True, help="The clause states nothing that inflates the figure.")
@click.option("--rule", default=None, help="The clause states this rule's condition (e.g. best_of, short_shape).")
@_WHY
@_BY
@_VERSION
@_JSON
@click.pass_obj
def clause(obj, entry_id: int, clause: str, benign: bool, rule: str | None, why: str, by: str | None,
           version: int | None, as_json: bool) -> None:
    """Read one clause of an entry's notes: benign, or the condition of a rule (issue 25).

    A clause Caveat did not understand keeps the headline from being quoted (basis `unreviewed`); the
    reviewer's reading replaces Caveat's for that clause, in every later parse and after a reindex.

    \b
    Examples:
      caveat entry clause 12 --clause "run on the lab's quiet node" --benign --why "a machine name"
      caveat entry clause 12 --clause "fastest of the afternoon" --rule best_of --why "a best-of, in other words"
    """
    json_mode(as_json)
    if benign == bool(rule):
        raise click.UsageError("give exactly one of --benign and --rule RULE")
    result = review.read_clause(obj.database(), obj.settings, entry_id, clause, "benign" if benign else "condition",
                                why, rule=rule, actor=_actor(by), version=version)
    _show(result, f"read {clause!r} as " + ("benign" if benign else f"a {rule} condition"), as_json)
