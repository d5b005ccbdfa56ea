"""The field's own tools (pywb, wacz, warcio, cdxj-indexer) as test referees, and a pywb runner."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parent.parent
REF_BIN = Path(os.environ.get("CAVEAT_REF_BIN", str(REPO / ".venv-ref" / "bin")))


def tool(name: str) -> str:
    path = REF_BIN / name
    if not path.exists():
        pytest.skip(f"{name} not found in {REF_BIN}; set CAVEAT_REF_BIN to the folder holding the reference tools")
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pywb:
    """A pywb ``wayback`` process serving collection ``coll`` built from the given WARC/WACZ files."""

    def __init__(self, workdir: Path, files: list[Path], *, unpack_wacz: bool = False):
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([tool("wb-manager"), "init", "coll"], cwd=self.dir, check=True, capture_output=True)
        args = [tool("wb-manager"), "add"] + (["--unpack-wacz"] if unpack_wacz else []) + ["coll"]
        subprocess.run(args + [str(f) for f in files], cwd=self.dir, check=True, capture_output=True)
        (self.dir / "config.yaml").write_text("enable_memento: true\n")
        self.port = free_port()
        self.proc = subprocess.Popen([tool("wayback"), "-p", str(self.port)], cwd=self.dir,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}/coll"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("pywb did not start within 30 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self) -> "Pywb":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.dir / "collections", ignore_errors=True)
