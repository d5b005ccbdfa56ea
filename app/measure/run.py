"""A measurement run: check the model is served, send the non-repeating prompts at the asked
concurrency, the repeat test and any expected-answer prompts, check every output, and sum it up.
Nothing here writes anything; :mod:`app.measure.store` archives a finished run."""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from app.measure import checks, prompts
from app.measure.client import (CHAT_PATH, COMPLETIONS_PATH, Endpoint, Exchange, HttpStatusError,
                                         Interrupted, MeasureError, get_json, stream)

REPEAT_LIMIT = 1.10  # the repeated prompt may be at most 10% faster than the non-repeating median
MAX_PROMPTS = 64
MAX_CONCURRENCY = 256
PROBE_TOKENS = 16


@dataclass
class Plan:
    endpoint: Endpoint
    model: str
    prompts: int = 8
    max_tokens: int = 256
    concurrency: int = 1
    repeats: int = 4
    seed: int = 0
    checks: list[tuple[str, str]] = field(default_factory=list)  # (question, expected answer)
    recipe_id: str | None = None

    def validate(self) -> None:
        if not self.model:
            raise MeasureError("--model is required: the model name the server serves (see its /v1/models)")
        if not 1 <= self.prompts <= MAX_PROMPTS:
            raise MeasureError(f"--prompts must be from 1 to {MAX_PROMPTS}")
        if not 2 <= self.max_tokens <= 32768:
            raise MeasureError("--max-tokens must be from 2 to 32768 (decode speed needs at least two tokens)")
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise MeasureError(f"--concurrency must be from 1 to {MAX_CONCURRENCY}")
        if not 0 <= self.repeats <= 32 or self.repeats == 1:
            raise MeasureError("--repeats must be 0 (no repeat test) or from 2 to 32")


@dataclass
class Outcome:
    plan: Plan
    exchanges: list[Exchange]
    prompt_set: list[str]
    prompt_set_sha256: str
    path: str
    engine: dict
    started_at: datetime
    finished_at: datetime
    unique_wall_seconds: float | None
    error: str | None = None  # the run stopped early: only the finished exchanges are kept


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (the common definition; numpy's default)."""
    xs = sorted(values)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _r(x, nd=2):
    return None if x is None else round(x, nd)


def discover(plan: Plan) -> dict:
    """The served models and what the endpoint says about itself; MeasureError when the model is not
    among them."""
    ep = plan.endpoint
    status, doc, headers = get_json(ep, "/v1/models")
    served: list[str] = []
    owned_by = None
    if status == 200 and doc and isinstance(doc.get("data"), list):
        for m in doc["data"]:
            if isinstance(m, dict) and m.get("id"):
                served.append(str(m["id"]))
                if str(m["id"]) == plan.model:
                    owned_by = m.get("owned_by")
        if plan.model not in served:
            listing = ", ".join(served[:20]) or "none"
            raise MeasureError(f"the server does not serve a model named {plan.model!r}; it serves: {listing}")
    elif status in (401, 403):
        raise MeasureError(f"GET /v1/models: {status}: the server wants an API key; name the environment variable "
                           "holding it with --api-key-env")
    engine = {"server": headers.get("server"), "owned_by": owned_by, "models_listed": status == 200,
              "version": None}
    try:  # vLLM answers /version; others 404, which is fine
        vstatus, vdoc, _ = get_json(ep, "/version")
        if vstatus == 200 and vdoc and vdoc.get("version"):
            engine["version"] = str(vdoc["version"])[:80]
    except MeasureError:
        pass
    return engine


def engine_name(engine: dict) -> str:
    parts = [engine.get("server") or None]
    if engine.get("version"):
        parts.append(f"version {engine['version']}")
    if engine.get("owned_by"):
        parts.append(f"owned_by {engine['owned_by']}")
    if engine.get("system_fingerprint"):
        parts.append(f"fingerprint {engine['system_fingerprint']}")
    return ", ".join(p for p in parts if p) or "not reported"


def build_prompts(plan: Plan) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """(kind, prompt, answer) for every request of the run, in order, and the prompts made. The first is
    a short probe (its own prompt): it finds out which API the server speaks and warms it up, so every
    timed request runs at the asked concurrency; it is archived but neither timed nor checked."""
    reserved = [q for q, _ in plan.checks]
    baseline_n = plan.repeats if plan.repeats and plan.concurrency > 1 else 0
    extra = 1 if plan.repeats else 0
    made = prompts.generate(plan.prompts + baseline_n + extra + 1, plan.seed, reserved=reserved)
    probe, made = made[-1], made[:-1]
    unique, rest = made[:plan.prompts], made[plan.prompts:]
    work = [("probe", probe, None)] + [("unique", p, None) for p in unique]
    if plan.repeats:
        work += [("baseline", p, None) for p in rest[:baseline_n]]
        work += [("repeat", rest[-1], None)] * plan.repeats
    work += [("check", q, a) for q, a in plan.checks]
    return work, made


def execute(plan: Plan, *, progress: Callable[[str], None] | None = None,
            stop: threading.Event | None = None) -> Outcome:
    """Run the plan. MeasureError before the first finished exchange (nothing to keep); after it, the
    run stops and the outcome carries the error and only the finished exchanges."""
    plan.validate()
    stop = stop or threading.Event()
    say = progress or (lambda _m: None)
    engine = discover(plan)
    work, made = build_prompts(plan)
    started = datetime.now(timezone.utc)
    path = CHAT_PATH
    exchanges: list[Exchange] = []
    finished: list[Exchange] = []
    error: str | None = None
    total = len(work)

    def tick(ex: Exchange) -> None:  # called on the first read of a stream and every 32nd
        say(f"request {ex.index + 1} of {total} ({ex.kind}): {ex.reads} tokens so far")

    def run_one(ex: Exchange) -> Exchange:
        ex.path = path
        wanted = min(PROBE_TOKENS, plan.max_tokens) if ex.kind == "probe" else plan.max_tokens
        return stream(plan.endpoint, ex, plan.model, wanted, stop=stop, on_token=tick)

    # the first request finds out which API the server speaks (chat, falling back to completions)
    kind, prompt, answer = work[0]
    first = Exchange(index=0, kind=kind, prompt=prompt, answer=answer)
    try:
        run_one(first)
    except HttpStatusError as exc:
        if exc.status not in (404, 405):
            raise
        path = COMPLETIONS_PATH
        say(f"{CHAT_PATH} answered {exc.status}; falling back to {COMPLETIONS_PATH}")
        first = Exchange(index=0, kind=kind, prompt=prompt, answer=answer)
        run_one(first)
    exchanges.append(first)
    finished.append(first)
    say(f"request 1 of {total} ({kind}): done, {first.tokens} tokens")

    unique_t0 = unique_t1 = None
    phases = [("unique", plan.concurrency), ("baseline", 1), ("repeat", 1), ("check", plan.concurrency)]
    index = 1
    for phase, width in phases:
        todo = [(i, w) for i, w in enumerate(work) if w[0] == phase and i >= index]
        if not todo or error:
            continue
        pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="caveat-measure")
        ex_of: dict = {}
        try:
            pending = set()
            queue = list(todo)
            while queue or pending:
                while queue and len(pending) < width and not error:
                    i, (k, p, a) = queue.pop(0)
                    ex = Exchange(index=i, kind=k, prompt=p, answer=a)
                    exchanges.append(ex)
                    fut = pool.submit(run_one, ex)
                    ex_of[fut] = ex
                    pending.add(fut)
                if not pending:
                    break
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        ex = fut.result()
                    except Interrupted:
                        continue
                    except MeasureError as exc:
                        if error is None:
                            error = str(exc)
                            stop.set()  # the others stop; what they streamed is not kept
                            for other in exchanges:
                                if other is not ex_of.get(fut):
                                    other.abort()
                        continue
                    finished.append(ex)
                    if ex.kind == "unique":
                        unique_t0 = ex.t_sent if unique_t0 is None else min(unique_t0, ex.t_sent)
                        last = ex.arrivals[-1] if ex.arrivals else ex.t_sent
                        unique_t1 = last if unique_t1 is None else max(unique_t1, last)
                    say(f"request {ex.index + 1} of {total} ({ex.kind}): done, {ex.tokens} tokens")
        except KeyboardInterrupt:
            stop.set()
            for ex in exchanges:
                ex.abort()  # a stream waiting on a stalled server returns now, not at its timeout
            pool.shutdown(wait=True, cancel_futures=True)
            raise Interrupted("stopped by Ctrl-C; nothing was stored") from None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        index = 0
    if stop.is_set() and error is None:
        raise Interrupted("stopped; nothing was stored")
    fingerprints = {ex.system_fingerprint for ex in finished if ex.system_fingerprint}
    if fingerprints:
        engine["system_fingerprint"] = sorted(fingerprints)[0]
    finished.sort(key=lambda e: e.index)
    uniq = [p for k, p, _ in work if k == "unique"]
    return Outcome(plan=plan, exchanges=finished, prompt_set=uniq, prompt_set_sha256=prompts.prompt_set_sha256(uniq),
                   path=path, engine=engine, started_at=started, finished_at=datetime.now(timezone.utc),
                   unique_wall_seconds=(unique_t1 - unique_t0) if unique_t1 and unique_t0 else None, error=error)


BURST_MIN_CHUNKS = 8          # a stream this long ...
BURST_MAX_READS = 2           # ... that reached the client in this many socket reads or fewer was not decoded
                              # while the client watched (each read stamps the chunks it holds alike)


def decode_not_observed(ex: Exchange) -> str | None:
    """A stream whose tokens did not arrive over time (the whole answer in one or two socket reads): the
    rate measures the network, not the model. Judged over the run by :func:`summarise`."""
    n = len(ex.arrivals)
    if n < BURST_MIN_CHUNKS:
        return None
    reads = len(set(ex.arrivals))
    if reads > BURST_MAX_READS:
        return None
    span = ex.arrivals[-1] - ex.arrivals[0]
    return (f"decode not observed: {n} chunks arrived in {reads} read{'s' if reads != 1 else ''} "
            f"({span * 1000:.2f} ms apart): a burst, not a decode speed")


def request_summary(ex: Exchange, plan: Plan) -> dict:
    if ex.kind == "probe":
        return {"index": ex.index, "kind": "probe", "prompt": ex.prompt, "ttft_ms": _r(ex.ttft_ms),
                "decode_tps": None, "tokens": ex.tokens, "streamed_chunks": len(ex.pieces),
                "token_count_from": "usage" if ex.usage_tokens is not None else "stream",
                "finish_reason": ex.finish_reason, "output": ex.text, "passed": True, "problems": [],
                "note": "probe: finds the API and warms the server up; not timed, not checked"}
    problems = checks.check_output(ex.text, tokens=ex.pieces, streamed=len(ex.pieces), usage_tokens=ex.usage_tokens,
                                   max_tokens=plan.max_tokens, finish_reason=ex.finish_reason, answer=ex.answer)
    if ex.kind != "check" and ex.decode_tps is None:
        problems.append("too short to time: fewer than two tokens streamed")
    burst = decode_not_observed(ex) if ex.kind == "unique" else None
    out = {"index": ex.index, "kind": ex.kind, "prompt": ex.prompt, "ttft_ms": _r(ex.ttft_ms),
           "decode_tps": _r(ex.decode_tps), "tokens": ex.tokens, "streamed_chunks": len(ex.pieces),
           "token_count_from": "usage" if ex.usage_tokens is not None else "stream",
           "finish_reason": ex.finish_reason, "output": ex.text, "passed": not problems, "problems": problems}
    if burst:
        out["burst"] = burst   # judged over the run (summarise): one starved read is not a hostile server
    if ex.answer is not None:
        out["expected"] = ex.answer
    if ex.server_timings:
        st = ex.server_timings
        out["server_timings"] = {k: st.get(k) for k in ("predicted_n", "predicted_ms", "predicted_per_second",
                                                        "prompt_n", "prompt_ms") if k in st}
    return out


def summarise(outcome: Outcome) -> dict:
    """The measurement's figures, checks and repeat test (the `--json` object without ids)."""
    plan = outcome.plan
    reqs = [request_summary(ex, plan) for ex in outcome.exchanges]
    unique = [r for r in reqs if r["kind"] == "unique"]
    tps = [r["decode_tps"] for r in unique if r["decode_tps"]]
    ttft = [r["ttft_ms"] for r in unique if r["ttft_ms"] is not None]
    median = statistics.median(tps) if tps else None
    p10, p90 = percentile(tps, 0.10), percentile(tps, 0.90)
    problems: list[str] = []
    for r in reqs:
        for p in r["problems"]:
            problems.append(f"request {r['index'] + 1} ({r['kind']}): {p}")
    if outcome.error:
        problems.insert(0, f"the run stopped early: {outcome.error}")
    bursts = [r for r in unique if r.get("burst")]
    if unique and 2 * len(bursts) > len(unique):
        # most requests' tokens arrived at once: the server did not decode while the client watched (or the
        # client could not watch): the figures are not a decode speed
        problems.append(f"decode not observed in {len(bursts)} of {len(unique)} non-repeating requests "
                        f"(e.g. request {bursts[0]['index'] + 1}: {bursts[0]['burst']})")
    if len(unique) < plan.prompts:
        problems.append(f"only {len(unique)} of {plan.prompts} non-repeating requests finished")
    shared = prompts.shared_ngrams(outcome.prompt_set)
    if shared:
        problems.append(f"prompts {shared[0][0] + 1} and {shared[0][1] + 1} share the words {shared[0][2]!r}")
    repeat = None
    if plan.repeats:
        rep = [r["decode_tps"] for r in reqs if r["kind"] == "repeat" and r["decode_tps"]]
        base = [r["decode_tps"] for r in reqs if r["kind"] == "baseline" and r["decode_tps"]]
        unique_tps = median if plan.concurrency == 1 else (statistics.median(base) if base else None)
        repeat_tps = statistics.median(rep) if rep else None
        ratio = repeat_tps / unique_tps if repeat_tps and unique_tps else None
        passed = None if ratio is None else ratio <= REPEAT_LIMIT
        repeat = {"repeats": plan.repeats, "unique_tps": _r(unique_tps), "repeat_tps": _r(repeat_tps),
                  "ratio": _r(ratio, 3), "limit": REPEAT_LIMIT, "passed": passed,
                  "baseline": "the non-repeating median" if plan.concurrency == 1 else
                  f"{len(base)} non-repeating requests sent one at a time, like the repeats",
                  "note": None if passed is not False else
                  f"the same prompt ran {ratio:.2f}x as fast as new ones: the endpoint benefits from repetition "
                  "(a cache or a proposer replaying earlier output), so figures from repeated prompts overstate it"}
    aggregate = None
    if outcome.unique_wall_seconds:
        aggregate = sum(r["tokens"] for r in unique) / outcome.unique_wall_seconds
    reported = [r["server_timings"]["predicted_per_second"] for r in unique
                if r.get("server_timings", {}).get("predicted_per_second")]
    result = {
        "decode_tps": _r(median), "decode_tps_p10": _r(p10), "decode_tps_p90": _r(p90),
        "decode_tps_spread": _r(p90 - p10) if p10 is not None and p90 is not None else None,
        "ttft_ms": _r(statistics.median(ttft)) if ttft else None,
        "ttft_ms_p90": _r(percentile(ttft, 0.9)),
        "concurrency": plan.concurrency,
        "per_user": {"decode_tps": _r(median), "decode_tps_p10": _r(p10), "decode_tps_p90": _r(p90),
                     "label": "per user: each request's own decode tokens per second, median across requests"},
        "aggregate": {"tps": _r(aggregate), "label": "aggregate: all non-repeating requests' tokens over the "
                      "wall time from the first request sent to the last token received"},
        "server_reported_tps": _r(statistics.median(reported)) if reported else None,
        "endpoint": outcome.plan.endpoint.base, "api": outcome.path, "model": plan.model,
        "engine": engine_name(outcome.engine), "engine_reported": outcome.engine,
        "prompts": plan.prompts, "max_tokens": plan.max_tokens, "seed": plan.seed,
        "prompt_set_sha256": outcome.prompt_set_sha256,
        "started_at": outcome.started_at.isoformat().replace("+00:00", "Z"),
        "finished_at": outcome.finished_at.isoformat().replace("+00:00", "Z"),
        "repeat_test": repeat,
        "output_check": {"passed": not problems and median is not None, "problems": problems},
        "requests": reqs,
    }
    if median is None and not problems:
        result["output_check"]["problems"].append("no request could be timed")
    return result
