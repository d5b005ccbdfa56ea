"""The crawl progress display: an updating line per source on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from app.cli.claims import _Display


def _run(display):
    report = SimpleNamespace(name="glm", url="http://127.0.0.1:1/x", status="ok")
    display("capture", report)
    display("parse", report)
    display("done", report)


def test_terminal_gets_an_updating_line(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    _run(_Display(1, "crawl"))
    err = capsys.readouterr().err
    # each step rewrites the same line (carriage return + clear), and the finished line ends it
    assert err.count("\r\033[K") == 3
    assert "[1/1] glm: capturing http://127.0.0.1:1/x" in err and err.endswith("[1/1] glm: ok\n")
    assert err.count("\n") == 1


def test_pipe_gets_plain_lines(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    _run(_Display(1, "crawl"))
    err = capsys.readouterr().err
    assert "\033[K" not in err and "\r" not in err
    assert err.splitlines() == [
        "[1/1] glm: capturing http://127.0.0.1:1/x",
        "[1/1] glm: parsing http://127.0.0.1:1/x",
        "[1/1] glm: ok",
    ]
