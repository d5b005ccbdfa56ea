"""``caveat reader train``: retrain the learned reader (issue 26) from the bundled labelled sets and the
pages reviewers exported (app/claims/reader.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from app.cli.context import CliContext
from app.cli.group import emit, json_mode, main
from app.claims import reader as reader_service


@main.group()
def reader() -> None:
    """The learned reader beside the rules: the model that proposes figures the rules did not read.

    \b
    Example:
      caveat reader train --from ./exported
    """


@reader.command("train")
@click.option("--from", "from_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of labelled pages (labels/<page>.json beside pages/<page>, what `caveat corpus export` "
                   "writes), added to the bundled tests/data/real*/. Repeat for several.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Where to write the model (default: <data_dir>/models/reader-<UTC time>-<version>.json, which "
                   "the next crawl and `caveat reparse` use).")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, path, model_version, threshold, pages, sets, seconds}.")
@click.pass_obj
def train(obj: CliContext, from_dirs: tuple[Path, ...], out: Path | None, as_json: bool) -> None:
    """Retrain the learned reader: fixed seed, one thread, its threshold chosen inside the training folds.

    Reads every bundled labelled page with the rules, adds the --from folders, trains, and writes a
    versioned model file into the data folder; `caveat reparse` then proposes with it (each proposal's
    chosen_by names its version). Progress goes to stderr. A few minutes on two cores.

    \b
    Example:
      caveat reader train --from ./exported
      caveat reparse
    """
    json_mode(as_json)

    def progress(line: str) -> None:
        click.echo(line, err=True)

    t = reader_service.train_model(obj.settings, list(from_dirs), out, progress)
    if as_json:
        emit({"path": str(t.path), "model_version": t.model_version, "threshold": t.threshold, "pages": t.pages,
              "sets": t.sets, "seconds": round(t.seconds, 1)})
        return
    click.echo(f"model {t.model_version}: {t.pages} pages from {len(t.sets)} sets, threshold {t.threshold}, "
               f"{t.seconds:.0f} s -> {t.path}")
    if out is not None and Path(out).resolve().parent != obj.settings.models_dir.resolve():
        click.echo("(written outside the data folder's models/: crawls and reparses keep their current model)",
                   file=sys.stderr)
