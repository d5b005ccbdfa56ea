"""``caveat corpus export``: the pages reviewers marked "every figure checked", written as a labelled set
in the format of ``tests/data/real*/`` (app/review/corpus.py)."""

from __future__ import annotations

from pathlib import Path

import click

from app.cli.group import emit, json_mode, main
from app.review import corpus as service


@main.group()
def corpus() -> None:
    """Labelled pages from reviewers' work, for the reader's training and evaluation.

    \b
    Example:
      caveat corpus export --source vllm-bench exported/
    """


@corpus.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--source", "source", default=None, help="Only the pages of this source (its name).")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, dir, pages, skipped} as JSON.")
@click.pass_obj
def export(obj, directory: Path, source: str | None, as_json: bool) -> None:
    """Write each checked page (its archived bytes, as served) to DIRECTORY/pages/ and its entries, with
    every reviewer correction applied, to DIRECTORY/labels/<page>.json (plus a README.md).

    \b
    Example:
      caveat corpus export --source board labelled/
    """
    json_mode(as_json)
    say = None if as_json else (lambda line: click.echo(line, err=True))
    result = service.export(obj.database(), obj.settings, directory, source=source, progress=say)
    if as_json:
        emit(result)
        return
    n = sum(p["entries"] for p in result["pages"])
    click.echo(f"exported {len(result['pages'])} checked page(s), {n} labelled entries, to {result['dir']}")
    for line in result["skipped"]:
        click.echo(f"  skipped {line}")
    if not result["pages"]:
        click.echo("  no page is marked checked yet: mark one on its archived page view (/c/ID/review)")
