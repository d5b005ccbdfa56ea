"""WACZ for the field's viewers (issue 13): the CDXJ carries Caveat's own 17-digit timestamps (two
captures a second apart, or in the same second, stay apart), pages.jsonl lists only top-level pages
(no redirect hops, images or error pages), and the package is signed as the WACZ Signing and
Verification specification says (anonymous signedData in datapackage-digest.json), checked here with
the cryptography library directly and by `wacz validate`."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import subprocess
import zipfile

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from app.models import Source
from app.capture.http import capture_urls
from tests.refbin import tool

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c6360000002000154a24f5f0000000049454e44ae426082")


@pytest.fixture
def package(app, server, tmp_path, cli):
    db = app.state.db
    page = server.route("/board", "<html><head><title>Board</title></head><body><p>first 100 tok/s</p></body></html>")
    with db.Session() as s:
        src = Source(name="board", url=server.url("/start"))
        s.add(src)
        s.commit()
        sid = src.id
    server.redirect("/start", page)
    server.route("/logo.png", PNG, content_type="image/png")
    server.route("/missing", "<p>no such page</p>", status=404)
    first = capture_urls(db, [server.url("/start"), server.url("/logo.png"), server.url("/missing")], source_id=sid)
    assert all(r.ok for r in first), [r.error for r in first]
    server.route("/board", "<html><head><title>Board</title></head><body><p>second 200 tok/s</p></body></html>")
    second = capture_urls(db, [page], source_id=sid)[0]       # the next capture, moments later
    out = tmp_path / "board.wacz"
    r = cli("export-wacz", str(out), "--source", "board")
    assert r.exit_code == 0, r.output
    return out, first, second


def test_cdxj_has_17_digit_timestamps_and_pages_only_top_level(package):
    out, first, second = package
    with zipfile.ZipFile(out) as z:
        cdx = gzip.decompress(z.read("indexes/index.cdx.gz")).decode().splitlines()
        lines = z.read("pages/pages.jsonl").decode().splitlines()
    stamps = {line.split(" ")[1] for line in cdx}
    final = first[0].snapshot                               # the page the redirect led to
    assert final.timestamp in stamps and second.snapshot.timestamp in stamps
    assert all(len(ts) == 17 and ts.isdigit() for ts in stamps)
    assert final.timestamp != second.snapshot.timestamp
    pages = [json.loads(x) for x in lines[1:]]
    assert sorted(p["id"] for p in pages) == sorted([final.citation_id, second.snapshot.citation_id])
    urls = {p["url"] for p in pages}
    assert all(u.endswith("/board") for u in urls)          # no redirect hop, image or 404 listed as a page


def test_the_package_is_signed_per_the_wacz_signing_spec(package, settings):
    out, _, _ = package
    with zipfile.ZipFile(out) as z:
        pkg = z.read("datapackage.json")
        digest = json.loads(z.read("datapackage-digest.json"))
    assert digest["path"] == "datapackage.json" and digest["hash"] == "sha256:" + hashlib.sha256(pkg).hexdigest()
    signed = digest["signedData"]
    assert signed["hash"] == digest["hash"] and signed["software"].startswith("Caveat") and signed["created"]
    pub = serialization.load_der_public_key(base64.b64decode(signed["publicKey"]))
    assert isinstance(pub, ec.EllipticCurvePublicKey) and pub.curve.name == "secp384r1"
    raw = base64.b64decode(signed["signature"])
    assert len(raw) == 96                                   # r || s, as WebCrypto verifies it
    der = encode_dss_signature(int.from_bytes(raw[:48], "big"), int.from_bytes(raw[48:], "big"))
    pub.verify(der, signed["hash"].encode(), ec.ECDSA(hashes.SHA256()))   # raises if it does not verify
    with pytest.raises(Exception):
        pub.verify(der, b"sha256:" + b"0" * 64, ec.ECDSA(hashes.SHA256()))
    # the key is the installation's, made once (caveat init makes it; the export reuses it)
    key = serialization.load_pem_private_key((settings.data_dir / "signing_key.pem").read_bytes(), None)
    assert key.public_key().public_numbers() == pub.public_numbers()
    assert (settings.data_dir / "signing_key.pem").stat().st_mode & 0o077 == 0


@pytest.mark.referee
def test_wacz_validate_accepts_the_signed_package(package):
    out, _, _ = package
    v = subprocess.run([tool("wacz"), "validate", "-f", str(out)], capture_output=True, text=True)
    assert v.returncode == 0 and "is valid" in v.stdout, v.stdout + v.stderr


def test_init_makes_the_signing_key(tmp_path, cli, settings):
    key = settings.data_dir / "signing_key.pem"
    key.unlink(missing_ok=True)
    r = cli("init")
    assert r.exit_code == 0 and "signing key made" in r.output and key.exists()
    assert "signing key made" not in cli("init").output      # made once
