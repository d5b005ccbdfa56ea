"""Helpers shared by the capture tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.db import Database

REPO = Path(__file__).resolve().parent.parent
REF_BIN = Path(os.environ.get("CAVEAT_REF_BIN", str(REPO / ".venv-ref" / "bin")))


def db_with(settings, **changes) -> Database:
    """A Database on the same files whose settings differ by ``changes`` (limits, timeouts...)."""
    return Database(settings.model_copy(update=changes))


def warc_files(settings) -> list[Path]:
    return sorted(settings.warc_dir.glob("*.warc.gz"))


def ref_tool(name: str) -> str:
    path = REF_BIN / name
    if not path.exists():
        raise AssertionError(f"reference tool {path} is missing; install the referee venv (.venv-ref) or set "
                             "CAVEAT_REF_BIN")
    return str(path)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


CLI = [sys.executable, "-c", "from app.cli import main; main()"]  # `caveat` in a subprocess, this interpreter


def cli_env(settings, **extra: str) -> dict:
    """The environment for a `caveat` subprocess on ``settings``' files (no stray CAVEAT_* of the caller)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAVEAT_")}
    env.update(CAVEAT_DATA_DIR=str(settings.data_dir), CAVEAT_DATABASE_URL=settings.db_url,
               CAVEAT_ALLOW_PRIVATE_ADDRESSES="1", **extra)
    return env


def foreign_warc(path, n: int, tag, *, repeat: int = 50) -> None:
    """A WARC of ``n`` distinct responses written by another tool (warcio), for import and reindex tests."""
    import hashlib
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for i in range(n):
            body = hashlib.sha256(f"{tag}-{i}".encode()).hexdigest().encode() * repeat
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"http://import.test/{tag}/{i}", "response",
                                                payload=io.BytesIO(body), http_headers=http))
