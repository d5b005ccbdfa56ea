"""`caveat measure`: time a serving endpoint on non-repeating prompts, check its output, archive
every exchange and record the measurement (docs/measure.md)."""

from __future__ import annotations

import os
import signal
import sys
import threading

import click

from app.cli.group import emit, json_mode, main
from app.cli.context import CliContext
from app.errors import BadRequest
from app.errors import FetchFailed, NotFound
from app.accounts import auth
from app.measure.client import Endpoint, Interrupted, MeasureError
from app.measure.prompts import PromptError
from app.measure.run import Plan, execute
from app.measure.store import check_recipe, store


def _num(x) -> str:
    return "-" if x is None else f"{x:,.2f}".rstrip("0").rstrip(".")


def _check_option(values: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for v in values:
        question, sep, answer = v.rpartition("=")
        if not sep or not question.strip() or not answer.strip():
            raise BadRequest(f"--check {v!r}: write it as \"QUESTION=EXPECTED ANSWER\", e.g. "
                             "\"What is the capital of France?=Paris\"")
        out.append((question.strip(), answer.strip()))
    return out


def render(m: dict) -> str:
    lines = []
    ok = m["output_check"]["passed"]
    head = f"measurement {m['id']}: {_num(m.get('decode_tps'))} tok/s decode (median of {m.get('prompts')} " \
           f"non-repeating prompts), p10 {_num(m.get('decode_tps_p10'))}, p90 {_num(m.get('decode_tps_p90'))}"
    lines.append(head)
    lines.append(f"  time to first token: {_num(m.get('ttft_ms'))} ms (median)")
    if (m.get("concurrency") or 1) > 1:
        lines.append(f"  concurrency {m['concurrency']}: per user {_num(m['per_user']['decode_tps'])} tok/s, "
                     f"aggregate {_num(m['aggregate']['tps'])} tok/s")
    rt = m.get("repeat_test")
    if rt:
        verdict = {True: "passed", False: "FAILED", None: "not decided"}[rt["passed"]]
        lines.append(f"  repeat test: {verdict}: the same prompt {rt['repeats']}x ran at {_num(rt['repeat_tps'])} "
                     f"tok/s against {_num(rt['unique_tps'])} (ratio {rt['ratio']}, limit {rt['limit']})")
        if rt.get("note"):
            lines.append(f"      {rt['note']}")
    lines.append(f"  engine: {m.get('engine')}  endpoint: {m.get('endpoint')}  model: {m.get('model')}")
    if ok:
        lines.append("  output check: passed" + (f"; it is the measured basis of {m['recipe_id']}"
                                                 if m.get("recipe_id") else " (no --recipe, so it feeds no working number)"))
    else:
        lines.append("  output check: FAILED; stored with its reasons, never the working number:")
        for p in m["output_check"]["problems"][:12]:
            lines.append(f"    - {p}")
        if len(m["output_check"]["problems"]) > 12:
            lines.append(f"    ... {len(m['output_check']['problems']) - 12} more (see the citation page)")
    lines.append(f"  citation: {m.get('citation')}")
    return "\n".join(lines)


@main.command()
@click.option("--endpoint", required=True, help="The server's base URL, e.g. http://127.0.0.1:8000 (its /v1 API).")
@click.option("--model", required=True, help="The model name the server serves (listed by its /v1/models).")
@click.option("--recipe", "recipe_id", default=None, help="The recipe this measures; a passing run becomes its "
              "measured working number.")
@click.option("--prompts", "n_prompts", type=int, default=8, show_default=True, help="Non-repeating prompts to send.")
@click.option("--max-tokens", type=int, default=256, show_default=True, help="Tokens to ask for per request.")
@click.option("--concurrency", type=int, default=1, show_default=True, help="Requests in flight at once.")
@click.option("--repeats", type=int, default=4, show_default=True, help="Repeat test: times the same prompt is "
              "sent (0: no repeat test).")
@click.option("--check", "check_values", multiple=True, metavar="QUESTION=ANSWER",
              help="An expected-answer prompt, e.g. \"What is the capital of France?=Paris\" (repeatable).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the prompt generator.")
@click.option("--api-key-env", default=None, metavar="VAR", help="Environment variable holding the API key "
              "(sent as a Bearer token, never archived).")
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds to wait for any byte.")
@click.option("--user", "username", default=None, help="Reviewer who ran it (an existing user).")
@click.option("--json", "as_json", is_flag=True, help="Print {ok, measurement} as GET /api/measurements/{id} does.")
@click.pass_obj
def measure(obj: CliContext, endpoint: str, model: str, recipe_id, n_prompts: int, max_tokens: int, concurrency: int,
            repeats: int, check_values, seed: int, api_key_env, timeout: float, username, as_json: bool) -> None:
    """Measure decode speed at ENDPOINT on non-repeating prompts, check the output, archive every
    exchange as WARC and record the measurement (its citation id prints at the end).

    Speaks the OpenAI-compatible API (/v1/chat/completions, falling back to /v1/completions) of vLLM,
    SGLang, llama.cpp's server, TGI and `transformers serve`, streaming. A run whose output fails a
    check is stored with its reasons and never becomes a working number. Exit code 1 when a check
    failed or the run could not be made; Ctrl-C stops and stores nothing.

    \b
    Example:
      caveat measure --endpoint http://127.0.0.1:8000 --model my-model --recipe r-85fbd1209ff4
      caveat measure --endpoint http://gpu-box:8000 --model m --concurrency 32 --prompts 64 --json
    """
    json_mode(as_json)
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise BadRequest(f"--api-key-env {api_key_env}: that environment variable is not set or empty")
    db = obj.database()
    user = None
    if username:
        with db.Session() as s:
            user = auth.get_user(s, username)
            if user is None:
                raise NotFound(f"No user {username!r}; create one with `caveat user add {username}`.")
            s.expunge(user)
    check_recipe(db, recipe_id)
    try:
        plan = Plan(endpoint=Endpoint.parse(endpoint, api_key=api_key, timeout=timeout), model=model,
                    prompts=n_prompts, max_tokens=max_tokens, concurrency=concurrency, repeats=repeats, seed=seed,
                    checks=_check_option(check_values), recipe_id=recipe_id)
        plan.validate()
    except MeasureError as exc:
        raise BadRequest(str(exc)) from None

    tty = sys.stderr.isatty()

    def progress(message: str) -> None:
        if tty:
            click.echo("\r\033[K" + message, err=True, nl=False)
        elif message.endswith("tokens") and "done" in message or "falling back" in message:
            click.echo(message, err=True)

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background (`make test &`, nohup): the shell ignores SIGINT for it; Ctrl-C or
        # `kill -INT` must still stop a run and keep what was measured (issue 29)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        outcome = execute(plan, progress=progress)
    except Interrupted as exc:
        if tty:
            click.echo("", err=True)
        click.echo(f"caveat measure: {exc}", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("\ncaveat measure: stopped by Ctrl-C; nothing was stored", err=True)
        sys.exit(130)
    except PromptError as exc:
        raise BadRequest(str(exc)) from None
    except MeasureError as exc:
        raise FetchFailed(f"{exc}; nothing was stored") from None
    if tty:
        click.echo("", err=True)
    try:
        m = store(db, outcome, user=user, notice=lambda msg: click.echo(msg, err=True))
    except KeyboardInterrupt:
        click.echo("caveat measure: stopped by Ctrl-C while storing; nothing was stored", err=True)
        sys.exit(130)
    passed = m["output_check"]["passed"]
    if as_json:
        emit({"measurement": m}, ok=passed)
    else:
        click.echo(render(m))
        if outcome.error:
            click.echo(f"error: {outcome.error}; the {len(outcome.exchanges)} finished exchange(s) are stored "
                       f"as failed measurement {m['id']}", err=True)
    if not passed:
        sys.exit(1)
