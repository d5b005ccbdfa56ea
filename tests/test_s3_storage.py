"""Issue 30: the archive on S3-compatible object storage, against a real SeaweedFS S3 gateway on 127.0.0.1.

Sealed WARC files are uploaded as immutable objects (checksum verified by the store, read back by HEAD),
the local copy goes, and every read path (citations, replay, verify, WACZ export, reindex) reads records by
byte range from the bucket; another data folder with the same bucket (a second machine) serves them all.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import shutil
import subprocess
import zipfile

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.capture.http import capture_urls
from app.capture.verify import verify_all
from app.db import Database
from app.main import create_app
from app.models import ArchiveObject, Snapshot
from app.storage.objects import archive_store
from app.storage.uploads import upload_spool
from app.storage.warcfiles import WarcStore
from tests.capture_helpers import ref_tool
from tests.conftest import make_settings
from tests.s3_server import WEED_MISSING, WeedS3, apply_env, weed_binary

PAGE = "<html><head><title>Board {n}</title></head><body><p>GLM-5.3 decodes at {n}1.5 tok/s on 2x RTX PRO 6000</p></body></html>"


@pytest.fixture(scope="session")
def weed(tmp_path_factory):
    binary = weed_binary()
    if binary is None:
        pytest.skip(WEED_MISSING)
    server = WeedS3(tmp_path_factory.mktemp("seaweedfs")).start(binary)
    apply_env(server)
    yield server
    server.stop()


@pytest.fixture
def s3_settings(settings, weed):
    """The test settings with the archive in a fresh bucket of the SeaweedFS gateway."""
    return settings.model_copy(update={"archive_url": f"s3://{weed.new_bucket()}/archive",
                                       "s3_endpoint": weed.endpoint})


@pytest.fixture
def s3_db(s3_settings):
    d = Database(s3_settings)
    yield d
    d.dispose()


def _objects(weed: WeedS3, settings) -> dict[str, bytes]:
    bucket, _, prefix = settings.archive_url[len("s3://"):].partition("/")
    c = weed.client()
    out = {}
    for obj in c.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", []):
        out[obj["Key"].rsplit("/", 1)[1]] = c.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def _capture_and_upload(db: Database, server, n: int = 4) -> tuple[list[Snapshot], dict[str, str]]:
    """``n`` pages captured (one revisit among them), the spool sealed and uploaded; returns the snapshots
    and the SHA-256 of each file as it was on local disk."""
    urls = [server.route(f"/p{i}", PAGE.format(n=i)) for i in range(n)]
    results = capture_urls(db, urls) + capture_urls(db, urls[:1])
    assert all(r.ok for r in results)
    assert results[-1].snapshot.record_type == "revisit"
    local = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in db.settings.warc_dir.glob("caveat-*.warc.gz")}
    assert local
    report = upload_spool(db, seal={None})
    assert not report.failed, report.failed
    assert sorted(report.uploaded) == sorted(local)
    with db.Session() as s:
        snaps = list(s.scalars(select(Snapshot).order_by(Snapshot.id)))
        s.expunge_all()
    return snaps, local


def _client(settings):
    app = create_app(settings)
    return app, TestClient(app, base_url="http://caveat.test")


def test_sealed_files_upload_verified_and_citations_replay_by_range(s3_db, server, weed):
    settings = s3_db.settings
    snaps, local = _capture_and_upload(s3_db, server)
    assert not list(settings.warc_dir.glob("caveat-*.warc.gz")), "local copies removed after the upload"
    objects = _objects(weed, settings)
    assert {k: hashlib.sha256(v).hexdigest() for k, v in objects.items()} == local, "objects are the files, byte for byte"
    with s3_db.Session() as s:
        rows = {o.name: (o.size, o.sha256) for o in s.scalars(select(ArchiveObject))}
    assert rows == {k: (len(objects[k]), local[k]) for k in local}

    app, client = _client(settings)
    with client:
        for snap in snaps:
            r = client.get(f"/c/{snap.citation_id}")
            assert r.status_code == 200, (snap.citation_id, r.text[:300])
            raw = client.get(f"/web/{snap.timestamp}id_/{snap.url}", follow_redirects=False)
            assert raw.status_code == 200
            assert raw.content == PAGE.format(n=snap.url.rsplit("p", 1)[1]).encode()
    app.state.db.dispose()
    cached = sorted(p.stat().st_size for p in (settings.data_dir / "cache" / "ranges").iterdir())
    wanted = {x.length for x in snaps} | {x.request_length for x in snaps if x.request_length}
    assert cached and set(cached) <= wanted, "only records' own byte ranges were fetched, never whole objects"


def test_upload_never_overwrites_and_a_retry_after_a_crash_is_no_duplicate(s3_db, server, weed):
    settings = s3_db.settings
    urls = [server.route(f"/q{i}", PAGE.format(n=i)) for i in range(2)]
    assert all(r.ok for r in capture_urls(s3_db, urls))
    [path] = settings.warc_dir.glob("caveat-*.warc.gz")
    data = path.read_bytes()
    bucket, _, prefix = settings.archive_url[len("s3://"):].partition("/")
    key = f"{prefix}/{path.name}"

    # Another object under that name: refused, nothing overwritten, the local file kept.
    weed.client().put_object(Bucket=bucket, Key=key, Body=b"someone else's bytes")
    report = upload_spool(s3_db, seal={None})
    assert report.failed and "other bytes" in report.failed[0]
    assert path.exists() and path.read_bytes() == data
    assert weed.client().get_object(Bucket=bucket, Key=key)["Body"].read() == b"someone else's bytes"

    # The same bytes already there (killed after the PUT, before its row and the removal): success, once.
    weed.client().delete_object(Bucket=bucket, Key=key)
    weed.client().put_object(Bucket=bucket, Key=key, Body=data)
    report = upload_spool(s3_db, seal={None})
    assert report.already == [path.name] and not report.failed
    assert not path.exists()
    assert list(_objects(weed, settings)) == [path.name]


def test_killed_after_the_row_before_the_removal_the_writer_starts_a_new_file(s3_db, server, weed):
    """The third crash point: object and row written, local copy still there. A writer opening the series
    must not append to it (the object is sealed); the next upload round removes it."""
    settings = s3_db.settings
    assert capture_urls(s3_db, [server.route("/r0", PAGE.format(n=0))])[0].ok
    [path] = settings.warc_dir.glob("caveat-*.warc.gz")
    kept = settings.data_dir / "kept.warc.gz"
    shutil.copy(path, kept)
    upload_spool(s3_db, seal={None})
    shutil.copy(kept, path)   # as if the process died just before unlink()
    assert capture_urls(s3_db, [server.route("/r1", PAGE.format(n=1))])[0].ok
    assert path.read_bytes() == kept.read_bytes(), "the uploaded file was not appended to"
    report = upload_spool(s3_db, seal={None})
    assert report.already == [path.name] and len(report.uploaded) == 1
    assert not list(settings.warc_dir.glob("caveat-*.warc.gz"))
    assert len(_objects(weed, settings)) == 2


def test_another_machine_reindexes_from_the_bucket_and_serves_every_citation(s3_db, server, weed, tmp_path, cli):
    snaps, _ = _capture_and_upload(s3_db, server, n=5)
    # A second machine: its own empty data folder and no database at all; only the bucket is shared.
    other = tmp_path / "machine2"
    other.mkdir()
    settings2 = make_settings(other, f"sqlite:///{other / 'caveat.db'}", data_dir=other / "data",
                              archive_url=s3_db.settings.archive_url, s3_endpoint=weed.endpoint)
    assert not (other / "caveat.db").exists()
    r = cli("reindex", "--no-reparse", settings_override=settings2)
    assert r.exit_code == 0, r.output
    assert "object(s) in s3://" in r.output
    db2 = Database(settings2)
    with db2.Session() as s:
        back = {(x.citation_id, x.record_id, x.warc_file, x.offset, x.length) for x in s.scalars(select(Snapshot))}
        assert s.scalar(select(ArchiveObject.name).limit(1)) is not None, "archive_objects restored from HEAD"
    assert back == {(x.citation_id, x.record_id, x.warc_file, x.offset, x.length) for x in snaps}
    assert not list(settings2.warc_dir.glob("*.warc.gz")), "the objects were read, not copied into the spool"
    app, client = _client(settings2)
    with client:
        for snap in snaps:
            assert client.get(f"/c/{snap.citation_id}").status_code == 200
            raw = client.get(f"/web/{snap.timestamp}id_/{snap.url}", follow_redirects=False)
            assert raw.status_code == 200 and raw.content == PAGE.format(n=snap.url.rsplit("p", 1)[1]).encode()
    app.state.db.dispose()
    db2.dispose()


@pytest.mark.referee
def test_wacz_export_reads_the_bucket_and_validates(s3_db, server, weed, tmp_path, cli):
    snaps, _ = _capture_and_upload(s3_db, server)
    out = tmp_path / "bucket.wacz"
    r = cli("export-wacz", str(out), settings_override=s3_db.settings)
    assert r.exit_code == 0, r.output
    v = subprocess.run([ref_tool("wacz"), "validate", "-f", str(out)], capture_output=True, text=True, timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr
    with zipfile.ZipFile(out) as z:
        index = gzip.decompress(z.read("indexes/index.cdx.gz")).decode()
        warc = b"".join(z.read(n) for n in z.namelist() if n.startswith("archive/"))
    assert all(s.url in index for s in snaps)
    assert all(PAGE.format(n=i).encode() in gzip.decompress(warc) for i in range(4)), "every record's bytes"


def test_verify_reports_a_missing_or_changed_object_with_the_citations_it_affects(s3_db, server, weed, cli):
    settings = s3_db.settings
    urls = [server.route(f"/v{i}", PAGE.format(n=i)) for i in range(3)]
    assert all(r.ok for r in capture_urls(s3_db, urls[:2]))
    upload_spool(s3_db, seal={None})
    with WarcStore(s3_db) as store:   # the next capture goes to a new file: the first is sealed
        assert store.writer is not None
    assert capture_urls(s3_db, urls[2:])[0].ok
    upload_spool(s3_db, seal={None})
    with s3_db.Session() as s:
        assert verify_all(s, settings).passed
        by_file: dict[str, set[str]] = {}
        for snap in s.scalars(select(Snapshot)):
            by_file.setdefault(snap.warc_file, set()).add(snap.citation_id)
    assert len(by_file) == 2
    gone, changed = sorted(by_file)
    bucket, _, prefix = settings.archive_url[len("s3://"):].partition("/")
    c = weed.client()
    c.delete_object(Bucket=bucket, Key=f"{prefix}/{gone}")
    data = bytearray(c.get_object(Bucket=bucket, Key=f"{prefix}/{changed}")["Body"].read())
    data[-40] ^= 0xFF   # one byte of the last record changes
    c.put_object(Bucket=bucket, Key=f"{prefix}/{changed}", Body=bytes(data))
    archive_store(settings).cache.prune()

    with s3_db.Session() as s:
        report = verify_all(s, settings)
    assert not report.passed
    missing = {p.citation_id for p in report.problems if p.kind == "missing"}
    assert missing == by_file[gone]
    assert all("missing from s3://" in p.detail for p in report.problems if p.kind == "missing")
    assert report.changed_objects == {changed}
    hurt = {p.citation_id for p in report.problems if p.warc_file == changed}
    assert hurt and hurt <= by_file[changed]

    r = cli("verify", "--json", settings_override=settings)   # the command says the same, citations named
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["changed_objects"] == [changed] and doc["missing_files"] == [gone]
    assert all(any(cid in line for line in doc["problems"]) for cid in by_file[gone] | hurt)


def test_the_local_default_keeps_files_in_the_folder(db, server):
    """No CAVEAT_ARCHIVE_URL: nothing is uploaded and the WARC files stay where they were."""
    assert capture_urls(db, [server.route("/l0", PAGE.format(n=0))])[0].ok
    files = list(db.settings.warc_dir.glob("caveat-*.warc.gz"))
    report = upload_spool(db, seal={None})
    assert report.uploaded == [] and report.failed == []
    assert list(db.settings.warc_dir.glob("caveat-*.warc.gz")) == files
    assert not archive_store(db.settings).remote


def test_object_checksum_is_the_files_sha256(s3_db, server, weed):
    settings = s3_db.settings
    assert capture_urls(s3_db, [server.route("/k0", PAGE.format(n=0))])[0].ok
    [path] = settings.warc_dir.glob("caveat-*.warc.gz")
    digest = base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode()
    upload_spool(s3_db, seal={None})
    info = archive_store(settings).head(path.name)
    assert info is not None and info.sha256_b64 == digest, "the store holds (and checked) the SHA-256 we sent"


def test_caveat_upload_command(s3_db, server, cli, settings):
    r = cli("upload")   # the local default: a clear error, nothing done
    assert r.exit_code != 0 and "CAVEAT_ARCHIVE_URL is not set" in r.output
    assert capture_urls(s3_db, [server.route("/u0", PAGE.format(n=0))])[0].ok
    [path] = s3_db.settings.warc_dir.glob("caveat-*.warc.gz")
    r = cli("upload", "--json", settings_override=s3_db.settings)   # the open file stays with its writer
    assert r.exit_code == 0 and json.loads(r.stdout)["uploaded"] == [] and path.exists()
    r = cli("upload", "--all", "--json", settings_override=s3_db.settings)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["uploaded"] == [path.name] and not path.exists()
