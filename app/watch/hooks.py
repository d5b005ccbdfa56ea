"""Webhooks (issue 17): every change event POSTed to each receiver, signed, retried, logged.

The body is the event as ``GET /api/changes`` gives it, inside ``{"event": ...}``. Headers:
``X-Caveat-Event`` (the event's kind), ``X-Caveat-Delivery`` (the delivery id), ``X-Caveat-Timestamp``
(Unix seconds) and ``X-Caveat-Signature: sha256=<hex>``, the HMAC-SHA256 with the hook's secret of
``<timestamp>.<body>``. A receiver that answers 2xx has it; anything else (another status, a refused
connection, no answer within ``CAVEAT_HOOK_TIMEOUT``) is retried by the job queue after
``CAVEAT_HOOK_RETRY_WAIT`` seconds, doubled each time, ``CAVEAT_HOOK_ATTEMPTS`` attempts in all; each
attempt is logged on the delivery. Receivers go through the crawler's address guard.

An attempt is bounded whatever the receiver does: ``CAVEAT_HOOK_TIMEOUT`` is the total time of the
whole exchange (connect, send, status, a receiver trickling one byte at a time is cut at it), and at
most ``ANSWER_BYTES`` of its answer are read. Each attempt is claimed in the database before it is
made (``attempts`` raised only while below the limit), so a delivery deferred twice never makes more
than ``CAVEAT_HOOK_ATTEMPTS`` attempts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path

import httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.capture.http import limits_for
from app.config import Settings
from app.db import Database
from app.errors import BadRequest, NotFound
from app.models import ChangeEvent, Hook, HookDelivery, utcnow
from app.watch.changes import events_json
from app.watch.jobs import TASK_DELIVER, DeliveryFailed, register_handler, running_queue
from archive import sealing
from archive.fetcher import Fetcher, with_deadline
from archive.surt import InvalidURL
from archive.urls import check_url
from datetime import datetime, timezone

MIN_SECRET = 16
MAX_LOG = 20
ANSWER_BYTES = 4096   # at most this much of a receiver's answer is read


def add_hook(session: Session, url: str, secret: str, *, cited_only: bool = False) -> Hook:
    try:
        url = check_url(url)
    except InvalidURL as exc:
        raise BadRequest(f"{exc}. Give the receiver's full address, e.g. https://example.org/caveat-hook.") from None
    if not secret or len(secret) < MIN_SECRET:
        raise BadRequest(f"a hook needs a secret of at least {MIN_SECRET} characters (the receiver checks the "
                         "signature with it), e.g. `--secret $(openssl rand -hex 24)`")
    hook = Hook(url=url, secret=seal_secret(session.info["settings"], secret), cited_only=cited_only, active=True)
    session.add(hook)
    session.flush()
    return hook


HOOK_KEY_FILE = "hook_secrets.key"
_SEAL_CONTEXT = b"caveat-hook-secret"


def hook_key_path(settings: Settings) -> Path:
    """The key webhook secrets are sealed with: in the data folder (0600), never in the database."""
    return settings.data_dir / HOOK_KEY_FILE


def seal_secret(settings: Settings, secret: str) -> str:
    return sealing.seal(hook_key_path(settings), secret, _SEAL_CONTEXT)


def open_secret(settings: Settings, stored: str) -> str:
    """A hook's secret as stored (sealed, or plaintext from before sealing) -> the secret; SealError when
    the key in the data folder does not open it."""
    return sealing.unseal(hook_key_path(settings), stored, _SEAL_CONTEXT)


def seal_plaintext_secrets(session: Session, settings: Settings) -> int:
    """Seal the secrets of hooks stored before sealing (run at start); returns how many."""
    n = 0
    for hook in session.scalars(select(Hook)):
        if not sealing.is_sealed(hook.secret):
            hook.secret, n = seal_secret(settings, hook.secret), n + 1
    session.flush()
    return n


def list_hooks(session: Session) -> list[Hook]:
    return list(session.scalars(select(Hook).where(Hook.active.is_(True)).order_by(Hook.id)))


def remove_hook(session: Session, hook_id: int) -> Hook:
    hook = session.get(Hook, hook_id)
    if hook is None or not hook.active:
        raise NotFound(f"No hook {hook_id}. `caveat hook list` shows them.")
    hook.active = False
    session.flush()
    return hook


def hook_json(h: Hook) -> dict:
    return {"id": h.id, "url": h.url, "cited_only": h.cited_only, "created_at": h.created_at}


def delivery_json(d: HookDelivery) -> dict:
    return {"id": d.id, "hook_id": d.hook_id, "event_id": d.event_id, "status": d.status, "attempts": d.attempts,
            "last_code": d.last_code, "last_error": d.last_error, "log": d.log or [],
            "created_at": d.created_at, "delivered_at": d.delivered_at}


def list_deliveries(session: Session, hook_id: int | None = None, limit: int = 100) -> list[HookDelivery]:
    q = select(HookDelivery).order_by(HookDelivery.id.desc()).limit(limit)
    if hook_id is not None:
        q = q.where(HookDelivery.hook_id == hook_id)
    return list(session.scalars(q))


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def queue_deliveries(db: Database, event_ids: list[int], queue=None) -> list[int]:
    """A pending delivery per (active hook, event), each deferred on ``queue`` (by default this
    process's running queue, or PostgreSQL's). A process that runs no queue (``caveat crawl`` on
    SQLite) makes the first attempt of each itself and leaves the rest to ``caveat serve``, whose
    housekeeping defers every pending delivery no job holds."""
    made = []
    with db.Session() as s:
        hooks = list_hooks(s)
        if not hooks:
            return []
        events = list(s.scalars(select(ChangeEvent).where(ChangeEvent.id.in_(event_ids))))
        for e in events:
            for h in hooks:
                if h.cited_only and not e.cited:
                    continue
                d = HookDelivery(hook_id=h.id, event_id=e.id, status="pending", attempts=0, log=[])
                s.add(d)
                s.flush()
                made.append(d.id)
        s.commit()
    if queue is None:
        queue = running_queue(db) or InlineAttempts(db)
    for did in made:
        queue.defer_delivery(did)
    return made


class InlineAttempts:
    """Deliveries attempted once, here and now (a process with no job queue: ``caveat crawl``)."""

    def __init__(self, db: Database):
        self.db = db

    def defer_delivery(self, delivery_id: int) -> None:
        try:
            deliver(self.db, delivery_id)
        except DeliveryFailed:
            pass   # pending, attempts counted: `caveat serve` (or a worker) retries it


def _transport(db: Database, deadline: float) -> httpx.HTTPTransport:
    return with_deadline(Fetcher(limits_for(db.settings)).transport, deadline)


def _claim(db: Database, delivery_id: int) -> tuple[str, dict | None]:
    """Take the next attempt of a pending delivery: (status, what to send) or (status, None) when
    there is none to make (delivered, failed, gone, or the attempts used up)."""
    settings = db.settings
    with db.Session() as s:
        d = s.get(HookDelivery, delivery_id)
        if d is None or d.status != "pending":
            return (d.status if d is not None else "gone"), None
        hook = s.get(Hook, d.hook_id)
        event = s.get(ChangeEvent, d.event_id)
        if hook is None or not hook.active or event is None:
            d.status, d.last_error = "failed", "the hook was removed"
            s.commit()
            return d.status, None
        if d.attempts >= settings.hook_attempts:
            d.status = "failed"
            s.commit()
            return d.status, None
        took = s.execute(update(HookDelivery).where(HookDelivery.id == delivery_id, HookDelivery.status == "pending",
                                                    HookDelivery.attempts == d.attempts)
                         .values(attempts=HookDelivery.attempts + 1)).rowcount
        if took != 1:   # another job took this attempt at the same moment
            s.rollback()
            return "pending", None
        try:
            secret = open_secret(settings, hook.secret)
        except sealing.SealError as exc:  # retrying cannot help: say what to do
            s.rollback()
            d = s.get(HookDelivery, delivery_id)
            d.status = "failed"
            d.last_error = (f"the hook's secret cannot be opened: {exc}; add the hook again with its secret "
                            f"(`caveat hook remove {hook.id}`, `caveat hook add URL --secret ...`)")[:500]
            s.commit()
            return d.status, None
        body = json.dumps({"event": _plain(events_json(s, settings, [event])[0])}, sort_keys=True).encode()
        job = {"url": hook.url, "secret": secret, "kind": event.kind, "body": body}
        s.commit()
        return "pending", job


def deliver(db: Database, delivery_id: int, *, final: bool = False) -> str:
    """One attempt. Returns the delivery's status; raises DeliveryFailed to have the queue retry it
    (``final``: the last attempt, logged as failed instead)."""
    settings = db.settings
    status, job = _claim(db, delivery_id)
    if job is None:
        return status
    body, stamp = job["body"], str(int(time.time()))
    headers = {"Content-Type": "application/json", "User-Agent": settings.user_agent,
               "X-Caveat-Event": job["kind"], "X-Caveat-Delivery": str(delivery_id),
               "X-Caveat-Timestamp": stamp, "X-Caveat-Signature": sign(job["secret"], stamp, body)}
    started = time.monotonic()
    code, error = None, None
    try:
        with httpx.Client(transport=_transport(db, started + settings.hook_timeout),
                          timeout=settings.hook_timeout) as client:
            with client.stream("POST", job["url"], content=body, headers=headers) as r:
                code = r.status_code
                read = 0
                for chunk in r.iter_raw():   # a little of the answer, never all of it
                    read += len(chunk)
                    if read >= ANSWER_BYTES:
                        break
            if not 200 <= code < 300:
                error = f"the receiver answered HTTP {code}"
    except httpx.TimeoutException:
        error = f"no answer within {settings.hook_timeout:g} s (CAVEAT_HOOK_TIMEOUT)"
        code = None
    except Exception as exc:  # noqa: BLE001 - refused, reset, DNS, the address guard: all retried
        error = f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"
        code = None
    with db.Session() as s:
        d = s.get(HookDelivery, delivery_id)
        d.last_code, d.last_error = code, error
        d.log = (list(d.log or []) + [{"at": utcnow().isoformat(), "code": code, "error": error,
                                       "seconds": round(time.monotonic() - started, 3)}])[-MAX_LOG:]
        if error is None:
            d.status, d.delivered_at = "delivered", utcnow()
        elif final or d.attempts >= settings.hook_attempts:
            d.status = "failed"
        s.commit()
        status = d.status
    if status == "pending":
        raise DeliveryFailed(error)
    return status


def _plain(obj):
    """The event as JSON text would carry it: times in UTC with their offset (as the API writes them)."""
    def default(v):
        if isinstance(v, datetime):
            return (v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)).isoformat()
        return str(v)

    return json.loads(json.dumps(obj, default=default))


register_handler(TASK_DELIVER, deliver)  # the queue runs a delivery job through this module
