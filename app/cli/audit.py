"""CLI commands for audit: `caveat quote`, `caveat audit`, `caveat measurement add`.
Accounts and tokens (`caveat user`, `caveat token`) live in accounts.py."""

from __future__ import annotations

import json

import click

from app.cli import accounts  # noqa: F401  (registers `user` and `token`)
from app.cli import main
from app.cli.context import CliContext


def _num(x) -> str:
    return "-" if x is None else f"{x:,.2f}".rstrip("0").rstrip(".")


def render(recipe, answer: dict) -> str:
    who = " · ".join(str(p) for p in (recipe.model, f"{recipe.gpu_count}x {recipe.hardware}"
                                       if recipe.gpu_count else recipe.hardware, recipe.engine) if p)
    lines = [f"{answer['recipe_id']}  {who}"]
    if answer["quotable_tps"] is None:
        lines.append("  quotable:  none")
    else:
        lines.append(f"  quotable:  {_num(answer['quotable_tps'])} tok/s  (basis: {answer['basis']})")
    lines.append(f"  why:       {answer['reason']}")
    head = f"  headline:  {_num(answer['headline_tps'])} tok/s"
    if answer.get("inflation_ratio") and answer["inflation_ratio"] != 1:
        head += f"  ({_num(answer['inflation_ratio'])}x the quotable number)"
    lines.append(head)
    for f in answer.get("flags") or []:
        lines.append(f"  [{f['severity']}] {f['rule']}: {f['explanation']}")
        if f.get("citation"):
            lines.append(f"      {f['citation']}")
    if not answer.get("flags"):
        lines.append("  no flags standing on the headline")
    return "\n".join(lines)


@main.command()
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON instead of text.")
@click.pass_obj
def quote(obj: CliContext, query: str, as_json: bool) -> None:
    """Print the number you can quote for a recipe, why, and what is wrong with the headline.

    QUERY is a recipe id (r-...) or words from the model, hardware or engine names; every matching
    recipe is printed.

    \b
    Example:
      caveat quote "GLM-5.3-Flash rtx pro 6000"
      caveat quote r-85fbd1209ff4 --json
    """
    from app.services.quotable import find

    with obj.session() as s:
        found = find(s, obj.settings, query)
        if as_json:
            answers = [a for _, a in found]
            click.echo(json.dumps(answers[0] if len(answers) == 1 else answers, indent=2))
            return
        click.echo("\n\n".join(render(r, a) for r, a in found))


@main.command()
@click.option("--all", "everything", is_flag=True, help="Audit every recipe and entry.")
@click.argument("recipe_ids", nargs=-1)
@click.pass_obj
def audit(obj: CliContext, everything: bool, recipe_ids: tuple[str, ...]) -> None:
    """Re-run the audit rules (crawls and reparses do this by themselves); decisions are kept.

    \b
    Example:
      caveat audit --all
      caveat audit r-85fbd1209ff4
    """
    from app.errors import BadRequest
    from app.services.audit import audit_all, audit_recipes

    if not everything and not recipe_ids:
        raise BadRequest("Name recipe ids to audit, or pass --all.")
    with obj.session() as s:
        counts = audit_all(s, obj.settings) if everything else audit_recipes(s, obj.settings, recipe_ids)
    click.echo(f"audited {counts['entries']} entries in {counts['recipes']} recipes; "
               f"{counts['flags_active']} flags raised")


@main.group()
def measurement() -> None:
    """Throughput we measured ourselves; on non-repeating prompts with checked output it becomes the quotable number.

    \b
    Example:
      caveat measurement add r-85fbd1209ff4 352.4 --non-repeating --output-checked
    """


@measurement.command("add")
@click.argument("recipe_id")
@click.argument("tps", type=float)
@click.option("--non-repeating/--repeating", "non_repeating", default=False,
              help="The prompts were unique and non-repeating (required to count as measured).")
@click.option("--output-checked/--output-unchecked", "output_checked", default=False,
              help="The output was read and checked as valid (required to count as measured).")
@click.option("--runs", "n_runs", type=int, default=None, help="How many runs the figure summarises.")
@click.option("--method", default=None, help="Harness and settings, in words.")
@click.option("--notes", default=None, help="Anything else a reader should know.")
@click.option("--user", "username", default=None, help="Reviewer who measured it (an existing user).")
@click.option("--at", "measured_at", default=None, help="When (ISO 8601); default now.")
@click.pass_obj
def measurement_add(obj: CliContext, recipe_id: str, tps: float, non_repeating: bool, output_checked: bool,
                    n_runs, method, notes, username, measured_at) -> None:
    """Record a measured throughput for RECIPE_ID and re-audit the recipe.

    \b
    Example:
      caveat measurement add r-85fbd1209ff4 352.4 --non-repeating --output-checked --runs 5
    """
    from app.errors import NotFound
    from app.services import auth, measurements

    with obj.session() as s:
        user = None
        if username:
            user = auth.get_user(s, username)
            if user is None:
                raise NotFound(f"No user {username!r}; create one with `caveat user add {username}`.")
        m = measurements.record(s, obj.settings, user, recipe_id=recipe_id, tps=tps,
                                non_repeating_prompts=non_repeating, output_checked=output_checked,
                                n_runs=n_runs, method=method, notes=notes, measured_at=measured_at)
    counted = "counts as the measured basis" if m["counts_as_measured"] else \
        "kept, but does not count (needs --non-repeating and --output-checked)"
    click.echo(f"measurement {m['id']}: {_num(m['tps'])} tok/s for {recipe_id}; {counted}")
