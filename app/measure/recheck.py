"""Recompute a measurement from its archived exchanges (issue 24): a ``metadata`` evidence record
restored by `caveat reindex` or `caveat import-warc` is a claim, not a fact. Each exchange it names is
read back from its WARC ``response`` record (and ``request`` record where the archive has one), the
stream parsed again as `caveat measure` parsed it, the output checks run again and the result summed up
again with :func:`app.measure.run.summarise`. The stated figures must follow from that, or the
measurement is stored unverified and never counts.

What only the metadata record holds (each chunk's arrival time, an expected answer) is taken from it;
the transparency log (`caveat verify --log`) is what vouches for those bytes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.measure.client import CHAT_PATH, Endpoint, Exchange, MeasureError, _parse_reads
from app.measure.prompts import prompt_set_sha256
from app.measure.run import Outcome, Plan, summarise
from app.models import Snapshot
from app.storage.objects import read_stored
from archive.reader import RecordUnreadable

REL_TOLERANCE = 0.01  # a stated rate may differ from the recomputed one by 1% (the archive keeps times in µs)
ABS_TOLERANCE = 0.05
FIGURES = ("decode_tps", "decode_tps_p10", "decode_tps_p90", "ttft_ms")


@dataclass
class Verdict:
    verified: bool
    message: str
    recomputed: dict | None = None


def _when(value) -> datetime:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(timezone.utc)


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return math.isclose(float(a), float(b), rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)
    except (TypeError, ValueError):
        return False


def _request(settings, snap: Snapshot, max_bytes: int) -> tuple[str | None, dict | None]:
    """(path, JSON body) of the archived request record, or (None, None) when the archive has none."""
    if snap.request_offset is None or not snap.request_length:
        return None, None
    rec = read_stored(settings, snap.warc_file, snap.request_offset, snap.request_length, max_bytes=max_bytes)
    if rec.problems:
        raise RecordUnreadable("damaged", "; ".join(rec.problems))
    head, _, body = rec.block.partition(b"\r\n\r\n")
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    try:
        doc = json.loads(body)
    except ValueError:
        raise RecordUnreadable("not-json", "the request record's body is not JSON") from None
    return (line[1] if len(line) > 1 else None), (doc if isinstance(doc, dict) else None)


def _prompt(doc: dict) -> str | None:
    msgs = doc.get("messages")
    if isinstance(msgs, list) and msgs and isinstance(msgs[-1], dict):
        return str(msgs[-1].get("content") or "")
    return str(doc["prompt"]) if "prompt" in doc else None


def _exchange(session: Session, settings, ref: dict, stated: dict, result: dict) -> Exchange:
    """One exchange rebuilt from its archived records; MeasureError says what does not hold."""
    n = ref.get("index")
    rid = ref.get("response_record_id")
    snap = session.scalar(select(Snapshot).where(Snapshot.record_id == rid)) if rid else None
    if snap is None:
        raise MeasureError(f"exchange {n}: its response record {rid} is not in the archive")
    try:
        rec = read_stored(settings, snap.warc_file, snap.offset, snap.length, max_bytes=settings.decode_max_bytes)
        if rec.problems:
            raise RecordUnreadable("damaged", "; ".join(rec.problems))
        path, req = _request(settings, snap, settings.decode_max_bytes)
    except (RecordUnreadable, OSError) as exc:
        raise MeasureError(f"exchange {n}: its records cannot be read: {exc}") from None
    prompt = stated.get("prompt") or ""
    if req is not None:
        prompt = _prompt(req)
        if prompt is None or prompt != stated.get("prompt"):
            raise MeasureError(f"exchange {n}: the prompt stated differs from the archived request")
        if req.get("model") != result.get("model"):
            raise MeasureError(f"exchange {n}: the archived request asked for model {req.get('model')!r}, "
                               f"the measurement says {result.get('model')!r}")
        if stated.get("kind") != "probe" and req.get("max_tokens") not in (None, result.get("max_tokens")):
            raise MeasureError(f"exchange {n}: the archived request asked for max_tokens {req.get('max_tokens')}, "
                               f"the measurement says {result.get('max_tokens')}")
    ex = Exchange(index=n, kind=str(ref.get("kind") or stated.get("kind")), prompt=prompt,
                  answer=stated.get("expected"), path=path or result.get("api") or CHAT_PATH)
    ex.status = rec.http_status
    if rec.http_status != 200:
        raise MeasureError(f"exchange {n}: the archived response has status {rec.http_status}")
    _parse_reads(ex, [(rec.payload, 0.0)])
    arrivals = ref.get("chunk_arrivals_ms") or []
    if len(arrivals) != len(ex.pieces):
        raise MeasureError(f"exchange {n}: {len(ex.pieces)} content chunks in the archived response, "
                           f"{len(arrivals)} arrival times in the evidence")
    ex.t_sent = 0.0
    ex.arrivals = [float(t) / 1000.0 for t in arrivals]
    return ex


def recheck(session: Session, settings, doc: dict) -> Verdict:
    """Whether the evidence record ``doc``'s result follows from the exchange records it names."""
    result = doc.get("result") or {}
    refs = doc.get("exchanges") or []
    stated_reqs = {r.get("index"): r for r in result.get("requests") or [] if isinstance(r, dict)}
    if not refs or len(refs) != len(stated_reqs):
        return Verdict(False, f"the evidence names {len(refs)} exchange(s) for {len(stated_reqs)} stated request(s)")
    try:
        exchanges = [_exchange(session, settings, ref, stated_reqs.get(ref.get("index")) or {}, result)
                     for ref in refs]
        repeat = result.get("repeat_test") or {}
        plan = Plan(endpoint=Endpoint.parse(str(result.get("endpoint") or "http://invalid")),
                    model=str(result.get("model") or ""), prompts=int(result.get("prompts") or 0),
                    max_tokens=int(result.get("max_tokens") or 0), concurrency=int(result.get("concurrency") or 1),
                    repeats=int(repeat.get("repeats") or 0), seed=int(result.get("seed") or 0))
    except MeasureError as exc:
        return Verdict(False, str(exc))
    except (TypeError, ValueError) as exc:
        return Verdict(False, f"the evidence record is malformed: {exc}")
    problems = (result.get("output_check") or {}).get("problems") or []
    stopped = next((p for p in problems if str(p).startswith("the run stopped early: ")), None)
    uniq = [ex.prompt for ex in exchanges if ex.kind == "unique"]
    outcome = Outcome(plan=plan, exchanges=exchanges, prompt_set=uniq, prompt_set_sha256=prompt_set_sha256(uniq),
                      path=exchanges[0].path, engine=result.get("engine_reported") or {},
                      started_at=_when(result.get("started_at")), finished_at=_when(result.get("finished_at")),
                      unique_wall_seconds=None,
                      error=stopped[len("the run stopped early: "):] if stopped else None)
    again = summarise(outcome)
    wrong = [k for k in FIGURES if not _close(result.get(k), again.get(k))]
    if bool((result.get("output_check") or {}).get("passed")) != bool(again["output_check"]["passed"]):
        wrong.append("output_check")
    if (repeat.get("passed") if repeat else None) != ((again.get("repeat_test") or {}).get("passed")):
        wrong.append("repeat_test")
    if result.get("prompt_set_sha256") != again["prompt_set_sha256"]:
        wrong.append("prompt_set_sha256")
    for got in again["requests"]:
        st = stated_reqs.get(got["index"]) or {}
        if st.get("tokens") != got["tokens"] or st.get("output") != got["output"] or \
                bool(st.get("passed")) != got["passed"] or not _close(st.get("decode_tps"), got["decode_tps"]):
            wrong.append(f"request {got['index'] + 1}")
    if wrong:
        recomputed = {k: again.get(k) for k in FIGURES}
        checks = again["output_check"]
        why = "; ".join(checks["problems"][:3]) if not checks["passed"] else "they pass"
        return Verdict(False, f"the stated {', '.join(wrong[:6])} do not follow from the archived exchanges "
                              f"(recomputed: decode {recomputed['decode_tps']} tok/s, output checks: {why})",
                       again)
    return Verdict(True, f"recomputed from its {len(exchanges)} archived exchange(s): the figures and checks agree",
                   again)
