"""Test helpers: a real threaded HTTP server on 127.0.0.1 with programmable routes."""

from __future__ import annotations

import gzip
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Route:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunked: bool = False
    delay: float = 0.0  # seconds before the body is sent
    handler: Callable | None = None  # handler(request_handler) -> None, full control


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that hangs up (a capture over its size limit, a killed worker) is expected here.
        if isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class LocalServer:
    def __init__(self):
        self.routes: dict[str, Route] = {}
        self.requests: list[dict] = []
        routes, requests = self.routes, self.requests

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):  # noqa: N802
                requests.append({"path": self.path, "headers": dict(self.headers)})
                route = routes.get(self.path) or routes.get(self.path.split("?")[0])
                if route is None:
                    body = b"not found"
                    self.send_response(404)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if route.handler:
                    route.handler(self)
                    return
                self.send_response(route.status)
                for k, v in route.headers:
                    self.send_header(k, v)
                if route.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                if route.delay:
                    time.sleep(route.delay)
                if route.chunked:
                    step = max(1, len(route.body) // 5)
                    for i in range(0, len(route.body), step):
                        chunk = route.body[i:i + step]
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(route.body)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, body: bytes | str = b"", *, status: int = 200,
              content_type: str = "text/html; charset=utf-8", headers: list[tuple[str, str]] | None = None,
              gzip_body: bool = False, **kw) -> str:
        if isinstance(body, str):
            body = body.encode("utf-8")
        hdrs = [("Content-Type", content_type)] if content_type else []
        if gzip_body:
            body = gzip.compress(body)
            hdrs.append(("Content-Encoding", "gzip"))
        hdrs += headers or []
        self.routes[path] = Route(status=status, headers=hdrs, body=body, **kw)
        return self.url(path)

    def redirect(self, path: str, to: str, status: int = 302) -> str:
        self.routes[path] = Route(status=status, headers=[("Location", to)], body=b"")
        return self.url(path)

    def start(self):
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class RawAnswerServer:
    """A raw TCP peer on 127.0.0.1 for hostile-answer tests: reads each request's head (and, when it
    states one, its body), then answers with ``answer()`` (an iterator of bytes) and closes; records in
    ``sent`` how many bytes each answer got out before the client stopped reading."""

    def __init__(self, answer, path: str = "/"):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.answer = answer
        self.sent: list[int] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}{path}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        conn.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        lengths = [line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
        while lengths and len(body) < int(lengths[0]):
            body += conn.recv(65536)
        sent = 0
        try:
            for piece in self.answer():
                conn.sendall(piece)
                sent += len(piece)
        except OSError:
            pass
        self.sent.append(sent)
        conn.close()

    def stop(self):
        self.sock.close()


def wait_until(pred, seconds: float = 60.0, step: float = 0.2) -> bool:
    """Poll ``pred`` until it is true (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def stop_processes(procs, wait: float = 20.0) -> None:
    """SIGTERM every process still running, wait for each, SIGKILL the ones that do not stop."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(wait)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
