"""A real OpenAI-compatible streaming server on 127.0.0.1 for `caveat measure`'s tests and bench.

It is not an imitation of a particular engine: it is a small serving engine of its own whose "model"
is deterministic (the text is a function of the prompt) and whose decode step takes a fixed time, so
the true rate is known. What it does is set by :class:`Behaviour`:

- ``rate``: decode steps per second (one token per step), on an absolute schedule from the first
  token, so the rate holds however long the writes take; ``ttft``: seconds before the first token.
- ``text``: ``prose`` (common English words), ``loop`` (one sentence over and over), ``garbage``
  (random characters), ``hostile`` (prose with a script tag in it).
- ``replay_proposer``: speculative decoding with a proposer that replays earlier outputs (a suffix
  cache, as n-gram/suffix speculation does): every earlier completion is remembered; when the tokens so
  far match one, the next ``draft`` tokens are proposed and verified in the same step. The model is
  deterministic, so on a repeated prompt every draft is accepted and a step yields ``draft + 1``
  tokens, sent as one chunk. New prompts never match, so they run at ``rate``.
- ``kill_after``: close the connection after that many tokens, mid-stream (``kill_on_request``: only
  on the n-th request); ``stall_after``: after that many tokens send nothing for ``stall`` seconds.
- ``stream=False`` answers JSON even when asked to stream; ``status`` answers that error status;
  ``chat=False`` has no /v1/chat/completions (404), only /v1/completions; ``usage``/``timings``:
  report usage (OpenAI ``stream_options.include_usage``) and llama.cpp-style ``timings``.
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from app.measure.words import COMMON

_WORDS = sorted(COMMON)


@dataclass
class Behaviour:
    model: str = "test-model"
    rate: float = 400.0
    ttft: float = 0.01
    text: str = "prose"
    replay_proposer: bool = False
    draft: int = 4
    kill_after: int | None = None
    kill_on_request: int | None = None  # only the n-th POST (1-based) is killed; None: every one
    stall_after: int | None = None  # after that many tokens, send nothing for ``stall`` seconds, then go on
    stall: float = 0.0
    stream: bool = True
    status: int | None = None
    chat: bool = True
    usage: bool = True
    timings: bool = False
    usage_offset: int = 0     # a server that miscounts its tokens
    version: str | None = "sse-test 1.0"
    api_key: str | None = None  # when set, every request must carry "Authorization: Bearer <key>" (else 401)
    burst: bool = False       # every token at once, after ``ttft``: nothing is decoded while the client watches


def tokens_for(prompt: str, n: int, kind: str) -> list[str]:
    rng = random.Random(hashlib.sha256(prompt.encode()).digest())
    if kind == "loop":
        cycle = [" The", " river", " runs", " past", " the", " old", " mill", "."]
        return [cycle[i % len(cycle)] for i in range(n)]
    if kind == "garbage":
        alphabet = "ĠzqxjkvbÃ¤ĊçðÿþĦŊ#@%^~`|\\{}0123456789"
        return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(n)]
    out = []
    for i in range(n):
        if kind == "hostile" and i == 5:
            out.append(' <script>alert("from the endpoint")</script>')
            continue
        w = rng.choice(_WORDS)
        out.append((" " if i else "") + (w.capitalize() if i % 11 == 0 else w) + ("." if i % 11 == 10 else ""))
    return out


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # 32 clients connect at once (the default backlog of 5 resets some)

    def handle_error(self, request, client_address):  # a killed stream or a client that hung up
        pass


class OpenAIServer:
    def __init__(self, behaviour: Behaviour | None = None):
        self.b = behaviour or Behaviour()
        self.cache: list[list[str]] = []  # the replay proposer's memory: earlier completions
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _json(self, status: int, doc: dict) -> None:
                raw = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _authorised(self) -> bool:
                key = outer.b.api_key
                if key and self.headers.get("Authorization") != f"Bearer {key}":
                    self._json(401, {"error": {"message": "invalid API key"}})
                    return False
                return True

            def do_GET(self):  # noqa: N802
                if not self._authorised():
                    return
                if self.path == "/v1/models":
                    self._json(200, {"object": "list", "data": [{"id": outer.b.model, "object": "model",
                                                                 "owned_by": "caveat-test"}]})
                elif self.path == "/version" and outer.b.version:
                    self._json(200, {"version": outer.b.version})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:   # the request's number is taken as it is logged: concurrent handlers never share one
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    nth = len(outer.requests)
                b = outer.b
                if not self._authorised():
                    return
                if self.path not in ("/v1/chat/completions", "/v1/completions") or \
                        (self.path == "/v1/chat/completions" and not b.chat):
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                if b.status:
                    return self._json(b.status, {"error": {"message": "the engine is overloaded"}})
                if body.get("model") != b.model:
                    return self._json(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
                chat = self.path == "/v1/chat/completions"
                prompt = body["messages"][-1]["content"] if chat else body.get("prompt", "")
                n = int(body.get("max_tokens") or 16)
                toks = tokens_for(prompt, n, b.text)
                if not (body.get("stream") and b.stream):
                    text = "".join(toks)
                    choice = {"index": 0, "finish_reason": "length",
                              **({"message": {"role": "assistant", "content": text}} if chat else {"text": text})}
                    return self._json(200, {"id": "x", "object": "chat.completion", "model": b.model,
                                            "choices": [choice], "usage": {"completion_tokens": n}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Server", "caveat-test-engine")
                self.end_headers()
                kill = b.kill_after if b.kill_on_request in (None, nth) else None
                outer._stream(self, toks, chat, bool((body.get("stream_options") or {}).get("include_usage")), kill)

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _stream(self, h, toks: list[str], chat: bool, include_usage: bool, kill: int | None = None) -> None:
        b = self.b
        w = h.wfile

        held: list[bytes] = []   # burst mode: the whole answer goes out in one write at the end

        def send(doc) -> None:
            data = b"data: " + (doc if isinstance(doc, bytes) else json.dumps(doc).encode()) + b"\n\n"
            framed = f"{len(data):x}\r\n".encode() + data + b"\r\n"
            if b.burst:
                held.append(framed)
                return
            w.write(framed)
            w.flush()

        def chunk(text: str | None, finish: str | None = None, extra: dict | None = None) -> dict:
            if chat:
                c = {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}
            else:
                c = {"index": 0, "text": text or "", "finish_reason": finish}
            return {"id": "cmpl-test", "object": "chat.completion.chunk", "model": b.model, "choices": [c], **(extra or {})}

        with self.lock:
            memory = [list(c) for c in self.cache] if b.replay_proposer else []
        time.sleep(b.ttft)
        start = time.perf_counter()
        first = last = None
        produced = 0
        step = 0
        stalled = False
        while produced < len(toks):
            # one decode step: the model's next token, plus whatever drafts the proposer gets accepted
            take = 1
            if memory:
                so_far = toks[:produced]
                for past in memory:
                    if past[:produced] == so_far and len(past) > produced:
                        # drafts are verified against the model's own tokens: accepted while they agree
                        agree = 0
                        while agree < b.draft and produced + 1 + agree < len(toks) and \
                                produced + 1 + agree < len(past) and past[produced + 1 + agree] == toks[produced + 1 + agree]:
                            agree += 1
                        take = 1 + agree
                        break
            due = start + step / b.rate
            pause = due - time.perf_counter()
            if pause > 0 and not b.burst:
                time.sleep(pause)
            if b.stall_after is not None and produced == b.stall_after and step and not stalled:
                stalled = True
                time.sleep(b.stall)
                start += b.stall  # the schedule goes on from where it stopped
                due += b.stall
            if kill is not None and produced >= kill:
                try:
                    h.connection.shutdown(socket.SHUT_RDWR)
                finally:
                    h.close_connection = True
                return
            send(chunk("".join(toks[produced:produced + take])))
            now = time.perf_counter()
            first = first if first is not None else now
            last = now
            produced += take
            step += 1
        extra: dict = {}
        if include_usage and b.usage:
            extra["usage"] = {"completion_tokens": len(toks) + b.usage_offset, "prompt_tokens": 20,
                              "total_tokens": len(toks) + 20}
        if b.timings and first is not None and last is not None and last > first:
            ms = (last - first) * 1000
            extra["timings"] = {"predicted_n": len(toks), "predicted_ms": ms,
                                "predicted_per_second": (len(toks) - 1) / (last - first)}
        send(chunk(None, "length", extra))
        send(b"[DONE]")
        w.write(b"".join(held) + b"0\r\n\r\n")
        w.flush()
        if b.replay_proposer:
            with self.lock:
                self.cache.append(list(toks))

    def use_tls(self, certfile: str, keyfile: str) -> "OpenAIServer":
        """Serve HTTPS with this certificate (call before start)."""
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certfile, keyfile)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https"
        return self

    scheme = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "OpenAIServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
