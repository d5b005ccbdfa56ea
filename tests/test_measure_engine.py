"""`caveat measure` against a real inference engine: `transformers serve` (PyPI transformers[serving],
CPU torch) in its own venv (`make engine`, installed by `make test`), serving a 2-layer Llama with
random weights and a byte-level BPE tokenizer built here (tests/engine_model.py), nothing downloaded.

Random weights write garbage, so the first thing tested is that the output check refuses to count it.
`transformers serve` reports no server-side timings and has no proposer that replays earlier output
(its continuous-batching prefix sharing reuses a prompt's KV blocks, which shortens prefill, not
decode), so the repeat-speedup and server-clock tests run against tests/openai_server.py instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.db import Database
from app.measure.client import Endpoint
from app.measure.run import Plan, execute
from app.measure.store import store
from tests.refbin import free_port, tool

REPO = Path(__file__).resolve().parent.parent
ENGINE_BIN = Path(os.environ.get("CAVEAT_ENGINE_BIN", str(REPO / ".venv-engine" / "bin")))

pytestmark = pytest.mark.skipif(not (ENGINE_BIN / "transformers").exists(),
                                reason=f"no `transformers` in {ENGINE_BIN}: run `make engine` (make test does) "
                                       "or set CAVEAT_ENGINE_BIN")


class Engine:
    def __init__(self, model_dir: Path, log: Path):
        self.model_dir = model_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(log.parent / "hf"))
        self.log = open(log, "wb")
        self.proc = subprocess.Popen([str(ENGINE_BIN / "transformers"), "serve", "--host", "127.0.0.1", "--port",
                                      str(self.port), "--device", "cpu", str(model_dir)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/v1/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"transformers serve did not start: {log.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
        self.log.close()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("engine") / "tiny-llama"
    done = subprocess.run([str(ENGINE_BIN / "python"), str(REPO / "tests" / "engine_model.py"), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def engine(model_dir, tmp_path_factory):
    e = Engine(model_dir, tmp_path_factory.mktemp("engine-log") / "serve.log")
    yield e
    e.kill()


def _warcio_ok(settings) -> None:
    for path in settings.warc_dir.glob("caveat-*.warc.gz"):
        check = subprocess.run([tool("warcio"), "check", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_random_weights_output_is_measured_archived_and_refused(engine, cli, settings):
    served = httpx.get(engine.url + "/v1/models").json()["data"][0]["id"]
    r = cli("measure", "--endpoint", engine.url, "--model", served, "--prompts", "3", "--max-tokens", "48",
            "--repeats", "2", "--json")
    body = json.loads(r.stdout)
    assert r.exit_code == 1 and body["ok"] is False, r.output
    m = body["measurement"]
    assert m["api"] == "/v1/chat/completions" and m["engine"].startswith("uvicorn")
    timed = m["requests"][1:]  # after the probe
    assert len(timed) == 5 and all(q["token_count_from"] == "usage" for q in m["requests"])
    assert all(q["decode_tps"] and q["decode_tps"] > 0 for q in timed)
    assert m["decode_tps"] > 0 and m["ttft_ms"] > 0 and m["repeat_test"]["ratio"] is not None
    # the random model's text is not text: every request fails a check, so nothing here may be quoted
    assert m["output_check"]["passed"] is False and m["counts_as_measured"] is False
    assert all(not q["passed"] for q in timed)
    assert any(p.split(": ", 1)[1].startswith(("garbage", "repeat loop", "degenerate", "empty"))
               for p in m["output_check"]["problems"])
    _warcio_ok(settings)
    # the archived response is the engine's own stream
    db = Database(settings)
    try:
        from sqlalchemy import select

        from app.models import Snapshot
        from app.storage.snapshots import load_record

        with db.Session() as s:
            snap = s.scalars(select(Snapshot).order_by(Snapshot.id)).first()
            rec = load_record(settings, snap)
        assert rec.fixity == "ok" and b"chat.completion.chunk" in rec.raw_body and b"data: " in rec.raw_body
    finally:
        db.dispose()


def test_wrong_model_lists_what_the_engine_serves(engine, cli):
    r = cli("measure", "--endpoint", engine.url, "--model", "no-such-model", "--json")
    err = json.loads(r.stdout)["error"]
    assert r.exit_code == 1 and "does not serve a model named 'no-such-model'" in err
    assert str(engine.model_dir) in err


def test_engine_killed_mid_stream(model_dir, settings, tmp_path):
    """The engine process is SIGKILLed while it streams the second timed request: a clear error, and
    only the finished exchanges (the probe and the first) are archived, as a failed measurement."""
    e = Engine(model_dir, tmp_path / "serve-kill.log")
    served = httpx.get(e.url + "/v1/models").json()["data"][0]["id"]
    killed = threading.Event()

    def progress(message: str) -> None:
        if message.startswith("request 3 of") and "tokens so far" in message and not killed.is_set():
            killed.set()
            e.kill()

    try:
        plan = Plan(endpoint=Endpoint.parse(e.url, timeout=30), model=served, prompts=3, max_tokens=1500, repeats=0)
        outcome = execute(plan, progress=progress)
    finally:
        e.kill()
    assert killed.is_set()
    assert outcome.error and "mid-stream" in outcome.error
    assert [ex.kind for ex in outcome.exchanges] == ["probe", "unique"]
    db = Database(settings)
    try:
        m = store(db, outcome)
    finally:
        db.dispose()
    assert m["output_check"]["passed"] is False and "the run stopped early" in m["output_check"]["problems"][0]
    assert len(m["requests"]) == 2
    _warcio_ok(settings)
