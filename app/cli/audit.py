"""CLI commands for audit: `caveat quote`, `caveat audit`, `caveat measurement add|list|remove`.
Accounts and tokens (`caveat user`, `caveat token`) live in accounts.py."""

from __future__ import annotations

import json

import click

from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.replay.citations import absolute
from app.audit.quotable import find
from sqlalchemy import select
from app.errors import BadRequest, NotFound
from app.models import Recipe
from app.audit.engine import audit_all, audit_recipes
from app.accounts import auth
from app.audit import measurements


def _num(x) -> str:
    return "-" if x is None else f"{x:,.2f}".rstrip("0").rstrip(".")


def header(answer: dict) -> str:
    """What the answer describes, in one line: model, hardware, engine, quantization, test or phase,
    concurrency, so two recipes of one model never print the same header."""
    hw = answer.get("hardware")
    if hw and answer.get("gpu_count"):
        hw = f"{answer['gpu_count']}x {hw}"
    engine = answer.get("engine")
    if engine and answer.get("engine_version"):
        engine = f"{engine} {answer['engine_version']}"
    parts = [answer.get("model"), hw, engine, answer.get("quantization")]
    if answer.get("test"):
        parts.append(f"test {answer['test']}")
    if answer.get("phase"):
        parts.append(str(answer["phase"]))
    if answer.get("scope"):
        parts.append(str(answer["scope"]).replace("_", "-"))
    conc = answer.get("concurrency")
    if isinstance(conc, (int, float)) and conc > 1:
        parts.append(f"concurrency {conc:g}")
    key = answer.get("key") or {}
    if key.get("label"):
        parts.append(f"“{key['label']}”")
    return f"{answer['recipe_id']}  " + " · ".join(str(p) for p in parts if p not in (None, ""))


def render(recipe, answer: dict, settings=None) -> str:
    lines = [header(answer)]
    if answer["quotable_tps"] is None:
        lines.append("  quotable:  none (nothing here may be quoted as a decode speed)")
    else:
        lines.append(f"  quotable:  {_num(answer['quotable_tps'])} tok/s  (basis: {answer['basis']})")
    lines.append(f"  why:       {answer['reason']}")
    m = answer.get("measurement")
    if m:
        engine = f" ({m['engine']})" if m.get("engine") else ""  # a `caveat measure` run names the engine
        lines.append(f"  measured:  measurement {m['id']} on {str(m.get('measured_at') or '?')[:10]}{engine}: "
                     f"{absolute(settings, m['citation'])}")
    head = f"  headline:  {_num(answer['headline_tps'])} tok/s"
    if answer.get("phase") in ("prefill", "e2e"):
        head += f"  ({answer['phase']}, not a decode speed)"
    if answer.get("inflation_ratio") and answer["inflation_ratio"] != 1:
        head += f"  ({_num(answer['inflation_ratio'])}x the quotable number)"
    lines.append(head)
    for f in answer.get("flags") or []:
        lines.append(f"  [{f['severity']}] {f['rule']}: {f['explanation']}")
        if f.get("citation"):
            lines.append(f"      {absolute(settings, f['citation'])}")
    if not answer.get("flags"):
        lines.append("  no flags standing on the headline")
    return "\n".join(lines)


@main.command()
@click.argument("query")
@click.option("--json", "as_json", is_flag=True,
              help="Print {ok, count, recipes} as GET /api/quotable does (errors as {ok: false, error, status}).")
@click.pass_obj
def quote(obj: CliContext, query: str, as_json: bool) -> None:
    """Print the number you can quote for a recipe, what it describes, why, and what is wrong with the
    headline.

    QUERY is a recipe id (r-...) or words from the model, hardware or engine names; every matching
    recipe is printed. Exit code 1 when nothing matches.

    \b
    Example:
      caveat quote "GLM-5.3-Flash rtx pro 6000"
      caveat quote r-85fbd1209ff4 --json
    """
    json_mode(as_json)
    with obj.session() as s:
        found = find(s, obj.settings, query)
        if as_json:
            answers = [a for _, a in found]
            emit({"count": len(answers), "recipes": answers})
            return
        click.echo("\n\n".join(render(r, a, obj.settings) for r, a in found))


@main.command()
@click.option("--all", "everything", is_flag=True, help="Audit every recipe and entry.")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, entries, recipes, flags_active}.")
@click.argument("recipe_ids", nargs=-1)
@click.pass_obj
def audit(obj: CliContext, everything: bool, as_json: bool, recipe_ids: tuple[str, ...]) -> None:
    """Re-run the audit rules (crawls and reparses do this by themselves); decisions are kept.

    \b
    Example:
      caveat audit --all
      caveat audit r-85fbd1209ff4
    """

    json_mode(as_json)
    if not everything and not recipe_ids:
        raise BadRequest("Name recipe ids to audit, or pass --all.")
    with obj.session() as s:
        if not everything:
            known = set(s.scalars(select(Recipe.recipe_id).where(Recipe.recipe_id.in_(recipe_ids))))
            unknown = [r for r in recipe_ids if r not in known]
            if unknown:
                raise NotFound(f"No recipe {', '.join(unknown)}; nothing audited. Find ids with "
                               "`caveat quote MODEL`, or audit everything with `caveat audit --all`.")
        counts = audit_all(s, obj.settings) if everything else audit_recipes(s, obj.settings, recipe_ids)
    if as_json:
        emit(dict(counts))
        return
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
@click.option("--json", "as_json", is_flag=True, help="Print {ok, measurement} as POST /api/measurements does.")
@click.pass_obj
def measurement_add(obj: CliContext, recipe_id: str, tps: float, non_repeating: bool, output_checked: bool,
                    n_runs, method, notes, username, measured_at, as_json: bool) -> None:
    """Record a measured throughput for RECIPE_ID and re-audit the recipe.

    \b
    Example:
      caveat measurement add r-85fbd1209ff4 352.4 --non-repeating --output-checked --runs 5
    """
    json_mode(as_json)
    with obj.session() as s:
        user = None
        if username:
            user = auth.get_user(s, username)
            if user is None:
                raise NotFound(f"No user {username!r}; create one with `caveat user add {username}`.")
        m = measurements.record(s, obj.settings, user, recipe_id=recipe_id, tps=tps,
                                non_repeating_prompts=non_repeating, output_checked=output_checked,
                                n_runs=n_runs, method=method, notes=notes, measured_at=measured_at)
    if as_json:
        emit({"measurement": m})
        return
    counted = "counts as the measured basis" if m["counts_as_measured"] else \
        "kept, but does not count (needs --non-repeating and --output-checked)"
    click.echo(f"measurement {m['id']}: {_num(m['tps'])} tok/s for {recipe_id}; {counted}")


@measurement.command("list")
@click.argument("recipe_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, count, total, measurements} as GET /api/measurements.")
@click.pass_obj
def measurement_list(obj: CliContext, recipe_id: str | None, as_json: bool) -> None:
    """List recorded measurements (of RECIPE_ID, or all), oldest first. Exit code 1 when there are none (with --json: an empty list, ok, exit 0).

    \b
    Example:
      caveat measurement list r-85fbd1209ff4
    """
    json_mode(as_json)
    with obj.session() as s:
        rows, total = measurements.list_measurements(s, obj.settings, recipe_id=recipe_id,
                                                     limit=measurements.MAX_LIST)
    if as_json:
        emit({"count": len(rows), "total": total, "measurements": rows})
        return
    if not rows:
        raise NotFound("No measurements recorded" + (f" for {recipe_id}" if recipe_id else "") +
                       "; add one with `caveat measurement add RECIPE_ID TPS --non-repeating --output-checked`.")
    for m in rows:
        counted = "counts" if m["counts_as_measured"] else "does not count"
        click.echo(f"{m['id']:>6}  {m['recipe_id']}  {_num(m['tps']):>10} tok/s  {str(m['measured_at'])[:19]}  "
                   f"{counted}{'  ' + m['method'] if m['method'] else ''}")
    if total > len(rows):
        click.echo(f"... {total - len(rows)} more (GET /api/measurements?offset={len(rows)})", err=True)


@measurement.command("remove")
@click.argument("measurement_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print {ok, removed}.")
@click.pass_obj
def measurement_remove(obj: CliContext, measurement_id: int, as_json: bool) -> None:
    """Delete a measurement recorded by mistake and re-audit its recipe.

    \b
    Example:
      caveat measurement remove 3
    """
    json_mode(as_json)
    with obj.session() as s:
        gone = measurements.remove(s, obj.settings, measurement_id)
    if as_json:
        emit({"removed": gone})
        return
    click.echo(f"removed measurement {measurement_id} ({_num(gone['tps'])} tok/s for {gone['recipe_id']}); "
               "the recipe is re-audited")
