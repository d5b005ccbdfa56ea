"""Streaming OpenAI-compatible requests, timed token by token.

One :class:`Exchange` per request: what was sent, the status and headers received, the streamed body
as received (de-chunked), and the arrival time of every content chunk on ``time.perf_counter``. Plain
``http.client`` keeps the harness's own cost per token small (bench/measure.py measures it).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import urlsplit

import orjson

from app.measure.watchdog import Watchdog

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
USER_AGENT = "Caveat-measure/1"
READ_SIZE = 8192  # per socket read: an event is a few hundred bytes, and a larger buffer costs per read
MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # most bytes one streamed answer may have
MAX_LINE_BYTES = 1024 * 1024           # longest line (one `data:` event) of a streamed answer


class MeasureError(Exception):
    """A measurement that cannot go on, in words a user can act on."""


class Interrupted(MeasureError):
    pass


@dataclass
class Endpoint:
    base: str          # scheme://host[:port][/prefix], without a trailing /v1
    scheme: str
    host: str
    port: int
    prefix: str
    api_key: str | None = None
    timeout: float = 120.0

    @classmethod
    def parse(cls, url: str, *, api_key: str | None = None, timeout: float = 120.0) -> "Endpoint":
        raw = (url or "").strip()
        if "://" not in raw:
            raise MeasureError(f"--endpoint {url!r} is not a URL; give the server's address, e.g. http://127.0.0.1:8000")
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MeasureError(f"--endpoint {url!r} must be an http:// or https:// URL with a host")
        if parts.query or parts.fragment:
            raise MeasureError(f"--endpoint {url!r}: leave out the query and fragment")
        prefix = parts.path.rstrip("/")
        for tail in (CHAT_PATH, COMPLETIONS_PATH, "/v1"):
            if prefix.endswith(tail):
                prefix = prefix[: -len(tail)]
                break
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise MeasureError(f"--endpoint {url!r} has a port that is not a number from 1 to 65535") from None
        host = parts.hostname
        netloc = f"[{host}]" if ":" in host else host
        base = f"{parts.scheme}://{netloc}" + (f":{parts.port}" if parts.port else "") + prefix
        return cls(base=base, scheme=parts.scheme, host=host, port=port, prefix=prefix, api_key=api_key,
                   timeout=timeout)

    def url(self, path: str) -> str:
        return self.base + path

    def connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def headers(self, body_length: int | None = None) -> dict:
        h = {"Host": self.host if self.port in (80, 443) else f"{self.host}:{self.port}",
             "User-Agent": USER_AGENT, "Accept": "text/event-stream, application/json"}
        if body_length is not None:
            h["Content-Type"] = "application/json"
            h["Content-Length"] = str(body_length)
        return h


def _reason(exc: BaseException, endpoint: Endpoint, what: str) -> str:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"{what}: timed out after {endpoint.timeout:g} s with nothing from {endpoint.base} (raise --timeout?)"
    if isinstance(exc, ConnectionRefusedError):
        return f"cannot reach {endpoint.base}: connection refused (is the server running on that port?)"
    if isinstance(exc, socket.gaierror):
        return f"cannot reach {endpoint.base}: the host name does not resolve ({exc.strerror or exc})"
    if isinstance(exc, ssl.SSLError):
        return f"cannot reach {endpoint.base}: TLS failed ({exc})"
    if isinstance(exc, (http.client.IncompleteRead, ConnectionResetError, BrokenPipeError,
                        http.client.RemoteDisconnected)):
        return f"{what}: the server closed the connection mid-stream ({type(exc).__name__})"
    return f"{what}: {type(exc).__name__}: {exc}"


def get_json(endpoint: Endpoint, path: str) -> tuple[int, dict | None, dict]:
    """GET a small JSON document: (status, parsed body or None, headers)."""
    conn = endpoint.connect()
    try:
        h = endpoint.headers()
        if endpoint.api_key:
            h["Authorization"] = f"Bearer {endpoint.api_key}"
        conn.request("GET", endpoint.prefix + path, headers=h)
        resp = conn.getresponse()
        raw = resp.read(4 * 1024 * 1024)
        headers = {k.lower(): v for k, v in resp.getheaders()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return resp.status, body if isinstance(body, dict) else None, headers
    except (OSError, http.client.HTTPException) as exc:
        raise MeasureError(_reason(exc, endpoint, f"GET {path}")) from None
    finally:
        conn.close()


@dataclass
class Exchange:
    """One timed request and its streamed response."""

    index: int
    kind: str                      # unique | repeat | baseline | check
    prompt: str
    answer: str | None = None      # expected answer (check prompts)
    path: str = CHAT_PATH
    request_body: bytes = b""
    request_head: bytes = b""
    started_at: datetime | None = None
    status: int | None = None
    reason: str = ""
    http_version: str = "HTTP/1.1"
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    t_sent: float | None = None
    t_head: float | None = None
    arrivals: list[float] = field(default_factory=list)  # perf_counter of each content chunk
    pieces: list[str] = field(default_factory=list)
    usage_tokens: int | None = None
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    server_timings: dict | None = None  # llama.cpp-style "timings" when the server reports them
    model_reported: str | None = None
    system_fingerprint: str | None = None
    done: bool = False
    error: str | None = None
    stalled: bool = False  # the watchdog cut the stream: nothing arrived for the timeout
    overtime: bool = False  # the watchdog cut the stream: it was still going at the timeout (a total deadline)
    sock: socket.socket | None = None  # the connection's socket while it streams (conn.sock is gone after Connection: close)
    reads: int = 0  # socket reads so far (progress while streaming)
    conn: object = field(default=None, repr=False, compare=False)  # the open connection while it streams

    def abort(self) -> None:
        """Cut the connection from another thread (Ctrl-C): a read blocked on it returns at once."""
        sock = getattr(self.conn, "sock", None) or self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def tokens(self) -> int:
        return self.usage_tokens if self.usage_tokens is not None else len(self.pieces)

    @property
    def ttft_ms(self) -> float | None:
        if self.t_sent is None or not self.arrivals:
            return None
        return (self.arrivals[0] - self.t_sent) * 1000.0

    @property
    def decode_seconds(self) -> float | None:
        if len(self.arrivals) < 2:
            return None
        return self.arrivals[-1] - self.arrivals[0]

    @property
    def decode_tps(self) -> float | None:
        """Tokens after the first over the time from the first token to the last."""
        secs = self.decode_seconds
        if not secs or self.tokens < 2:
            return None
        return (self.tokens - 1) / secs


WATCHDOG = Watchdog()


def request_body(model: str, prompt: str, max_tokens: int, path: str, extra: dict | None = None) -> bytes:
    body = {"model": model, "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
    if path == CHAT_PATH:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    body.update(extra or {})
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _error_text(raw: bytes) -> str:
    try:
        doc = json.loads(raw)
        err = doc.get("error", doc) if isinstance(doc, dict) else doc
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail") or err
        return str(err)[:300]
    except ValueError:
        return raw[:300].decode("utf-8", "replace").strip()


class HttpStatusError(MeasureError):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def stream(endpoint: Endpoint, ex: Exchange, model: str, max_tokens: int, *, stop: threading.Event | None = None,
           on_token=None, extra: dict | None = None) -> Exchange:
    """Send ``ex``'s prompt and read the stream to its end, timing every content chunk. Raises
    MeasureError on anything that leaves the exchange unfinished (it is then not evidence)."""
    ex.request_body = request_body(model, ex.prompt, max_tokens, ex.path, extra)
    headers = endpoint.headers(len(ex.request_body))
    sent_headers = dict(headers)
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    target = endpoint.prefix + ex.path
    # the archived request: what was sent, minus the API key (a secret is never written to the WARC)
    ex.request_head = (f"POST {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent_headers.items())
                       + "\r\n").encode("utf-8")
    conn = endpoint.connect()
    ex.conn = conn
    what = f"request {ex.index + 1} ({ex.kind})"
    try:
        ex.started_at = datetime.now(timezone.utc)
        conn.connect()
        ex.t_sent = time.perf_counter()
        conn.request("POST", target, body=ex.request_body, headers=headers)
        sock = ex.sock = conn.sock   # kept: an answer delimited by Connection: close leaves conn.sock None
        resp = conn.getresponse()
        ex.t_head = time.perf_counter()
        ex.status, ex.reason = resp.status, resp.reason
        ex.http_version = "HTTP/1.0" if resp.version == 10 else "HTTP/1.1"
        ex.response_headers = resp.getheaders()
        ctype = (resp.getheader("Content-Type") or "").lower()
        if resp.status >= 400:
            raw = resp.read(65536)
            raise HttpStatusError(f"{what}: the server answered {resp.status} {resp.reason}: {_error_text(raw)}",
                                  resp.status)
        if "text/event-stream" not in ctype:
            raw = resp.read(65536)
            raise MeasureError(f"{what}: the server did not stream (Content-Type: {ctype or 'none'}); Caveat times "
                               "tokens as they arrive, so the server must honour \"stream\": true")
        # while the body streams the socket blocks without a timeout (a timeout costs a poll() per
        # token); the watchdog cuts a stream that has read nothing for the timeout instead
        sock.settimeout(None)
        with WATCHDOG.watching(ex, endpoint.timeout):
            _read_events(resp, sock, ex, stop, on_token)
        ex.done = True
        return ex
    except (MeasureError, OSError, http.client.HTTPException, ValueError) as exc:
        if ex.overtime:   # the watchdog cut it: whatever the cut stream looked like, that is why it ended
            raise MeasureError(f"{what}: timed out after {endpoint.timeout:g} s with the answer unfinished "
                               f"(--timeout is the most one request may take, however steadily it streams), "
                               f"after {ex.reads} read(s) of the stream") from None
        if isinstance(exc, MeasureError):
            raise
        if stop is not None and stop.is_set():
            raise Interrupted("stopped") from None
        if ex.stalled:
            exc = TimeoutError()
        got = f" after {ex.reads} read(s) of the stream" if ex.reads else ""
        raise MeasureError(_reason(exc, endpoint, what) + got) from None
    finally:
        ex.conn = ex.sock = None
        conn.close()


def _body_pieces(resp, sock, clock):
    """The response body as it arrives, de-chunked: (bytes, arrival time) per read. After what
    http.client's buffer already holds, the socket itself is read (one C call per token, not the
    buffered reader and its Python ``readinto``), and the chunked framing is undone here
    (bench/measure.py measures the difference)."""
    fp = resp.fp
    if fp is None:
        return
    first = fp.peek(READ_SIZE)  # the body bytes read with the headers, or one read of the socket
    if first:
        fp.read(len(first))
    recv = sock.recv
    if not resp.chunked:
        left = resp.length
        while left is None or left > 0:
            if first is not None:
                data, first = first, None
            else:
                data = recv(READ_SIZE)
            if not data:
                if left:
                    raise http.client.IncompleteRead(b"", left)
                return
            if left is not None:
                data = data[:left]
                left -= len(data)
            yield data, clock()
        return
    buf = bytearray()
    while True:
        if first is not None:
            data, first = first, None
        else:
            data = recv(READ_SIZE)
        now = clock()
        if not data:
            raise http.client.IncompleteRead(bytes(buf))
        if not buf:  # the usual case: the read is exactly one whole chunk (one event)
            nl = data.find(b"\r\n")
            if 0 < nl < 9 and data.endswith(b"\r\n"):
                try:
                    size = int(data[:nl], 16)
                except ValueError:
                    size = -1
                if size > 0 and len(data) == nl + size + 4:
                    yield data[nl + 2:nl + 2 + size], now
                    continue
        buf += data
        out = []
        while True:
            nl = buf.find(b"\r\n")
            if nl < 0:
                break
            try:
                size = int(bytes(buf[:nl]).split(b";", 1)[0].strip() or b"x", 16)
            except ValueError:
                raise http.client.HTTPException("bad chunk size in the response") from None
            if size == 0:
                if out:
                    yield b"".join(out), now
                return
            end = nl + 2 + size
            if len(buf) < end + 2:
                break
            out.append(bytes(buf[nl + 2:end]))
            del buf[:end + 2]
        if out:
            yield b"".join(out), now


def _read_events(resp, sock, ex: Exchange, stop, on_token) -> None:
    """Read the stream to its end, keeping each read with its arrival time, then parse it. While the
    stream runs only the socket is read and the chunked framing undone (the stream's end must be
    seen); the SSE and JSON are parsed once it has ended, in one pass, with each event timed by the
    read that completed it: the same times as parsing live, for less work per wake-up."""
    reads: list[tuple[bytes, float]] = []
    add = reads.append
    total = line = 0
    for data, now in _body_pieces(resp, sock, time.perf_counter):
        total += len(data)
        nl = data.rfind(b"\n")
        line = line + len(data) if nl < 0 else len(data) - nl - 1
        if total > MAX_RESPONSE_BYTES:
            raise MeasureError(f"the answer passed {MAX_RESPONSE_BYTES:,} bytes; a measurement's answer is far "
                               "smaller: the server is not streaming tokens")
        if line > MAX_LINE_BYTES:
            raise MeasureError(f"a line of the answer passed {MAX_LINE_BYTES:,} bytes; server-sent events are "
                               "lines of a few hundred: the server is not streaming tokens")
        add((data, now))
        if stop is not None and stop.is_set():
            raise Interrupted("stopped")
        ex.reads += 1
        if on_token is not None and (ex.reads == 1 or not ex.reads & 31):
            on_token(ex)
        if b"data: [DONE]" in data:
            break
    _parse_reads(ex, reads)


_NOT_JSON = object()


def _lenient(payload: bytes):
    """What orjson refuses but the standard library reads (NaN, Infinity): the document, or _NOT_JSON."""
    try:
        return json.loads(payload)
    except ValueError:
        return _NOT_JSON


def _parse_reads(ex: Exchange, reads: list[tuple[bytes, float]]) -> None:
    body = ex.body
    pieces = ex.pieces
    arrivals = ex.arrivals
    loads = orjson.loads  # about 3x the standard library on a stream's small events
    finished = False
    pending = b""
    pause = time.sleep
    for n, (data, now) in enumerate(reads):
        if not n & 15:
            pause(0)  # let the other streams' threads read their sockets (their arrival times stay right)
        body += data
        pending += data
        if b"\n\n" not in pending and b"\r\n\r\n" not in pending:
            continue
        if b"\r" in pending:
            pending = pending.replace(b"\r\n", b"\n")
        events = pending.split(b"\n\n")
        pending = events.pop()
        for event in events:
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    finished = True
                    break
                try:
                    doc = loads(payload)
                except ValueError:
                    doc = _lenient(payload)
                if doc is _NOT_JSON:
                    raise MeasureError(f"request {ex.index + 1}: the stream holds a line that is not JSON: "
                                       f"{payload[:120].decode('utf-8', 'replace')!r}") from None
                if not isinstance(doc, dict):
                    continue
                if "error" in doc and not doc.get("choices"):
                    raise MeasureError(f"request {ex.index + 1}: the server reported an error mid-stream: "
                                       f"{_error_text(payload)}")
                for choice in doc.get("choices") or ():
                    delta = choice.get("delta")
                    piece = delta.get("content") if isinstance(delta, dict) else choice.get("text")
                    if piece:
                        pieces.append(piece)
                        arrivals.append(now)
                    if choice.get("finish_reason"):
                        ex.finish_reason = choice["finish_reason"]
                        finished = True
                usage = doc.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    ex.usage_tokens = usage["completion_tokens"]
                    if isinstance(usage.get("prompt_tokens"), int):
                        ex.prompt_tokens = usage["prompt_tokens"]
                if isinstance(doc.get("timings"), dict):
                    ex.server_timings = doc["timings"]
                if doc.get("model") and ex.model_reported is None:
                    ex.model_reported = str(doc["model"])
                if doc.get("system_fingerprint"):
                    ex.system_fingerprint = str(doc["system_fingerprint"])
            if finished and b"[DONE]" in event:
                break
    if not finished:
        raise MeasureError(f"request {ex.index + 1} ({ex.kind}): the stream ended after {len(pieces)} chunk(s) "
                           "without a finish_reason or [DONE]: the server stopped mid-stream")
