"""Issue 24, item 9: `caveat measure`'s client against hostile or unusual servers (real sockets on
127.0.0.1): an answer delimited by Connection: close (no length, no chunking) is read, an endless
stream ends at the timeout (a total deadline, however steadily it sends), and an endless line or
answer is refused at a bound instead of filling memory."""

from __future__ import annotations

import json
import time

import pytest

from app.measure import client
from app.measure.client import Endpoint, Exchange, MeasureError
from tests.helpers import RawAnswerServer


def _sse(text: str) -> bytes:
    doc = {"id": "x", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


class Hostile(RawAnswerServer):
    """Reads the request, then answers with ``answer()``; records how many bytes it got out."""

    def __init__(self, answer):
        super().__init__(answer, path="/v1")


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def _go(srv: Hostile, timeout: float = 5.0) -> Exchange:
    ex = Exchange(index=0, kind="unique", prompt="Say something.")
    return client.stream(Endpoint.parse(srv.url, timeout=timeout), ex, "m", 16)


def test_an_answer_delimited_by_connection_close_is_read():
    def answer():
        yield HEAD + b"Connection: close\r\n\r\n"
        for w in ("one ", "two ", "three"):
            time.sleep(0.05)
            yield _sse(w)
        yield b"data: [DONE]\n\n"

    srv = Hostile(answer)
    try:
        ex = _go(srv)
        assert ex.done and ex.text == "one two three"
    finally:
        srv.stop()


def test_an_endless_stream_ends_at_the_timeout():
    def answer():
        yield HEAD + b"Connection: close\r\n\r\n"
        for _ in range(100_000):   # a token every 10 ms, for ever as far as the client knows
            time.sleep(0.01)
            yield _sse("more ")

    srv = Hostile(answer)
    try:
        with pytest.raises(MeasureError, match="timed out after 1 s with the answer unfinished"):
            _go(srv, timeout=1.0)
    finally:
        srv.stop()


@pytest.mark.parametrize("shape", ["one long line", "many lines"])
def test_an_endless_answer_is_refused_at_a_bound(shape):
    def answer():
        yield HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
        piece = (b"x" * 65536) if shape == "one long line" else (_sse("y" * 200) * 250)
        chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
        if shape == "one long line":
            yield b"6\r\ndata: \r\n"
        for _ in range(20_000):   # over a GiB if anybody read it all
            yield chunk

    srv = Hostile(answer)
    try:
        bound = client.MAX_LINE_BYTES if shape == "one long line" else client.MAX_RESPONSE_BYTES
        with pytest.raises(MeasureError, match=f"passed {bound:,} bytes"):
            _go(srv, timeout=60)
    finally:
        srv.stop()
