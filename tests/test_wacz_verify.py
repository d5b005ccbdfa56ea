"""`wacz validate --verify-auth` on a signed Caveat WACZ (issue 29, item 12): authsign's direct check knows
only the domain-certificate form, so the package names its verifier: `--verifier-url <base>/api/wacz/verify`,
which the real `wacz` tool posts signedData to. Valid, tampered and foreign signatures, through the tool."""

from __future__ import annotations

import base64
import json
import subprocess
import zipfile

import pytest

from app.capture.http import capture_urls
from app.models import Source
from archive import signing
from tests.refbin import tool


@pytest.fixture
def exported(tmp_path, live_app, server, cli):
    app, base = live_app
    db = app.state.db
    with db.Session() as s:
        s.add(Source(name="board", url=server.url("/b")))
        s.commit()
    assert capture_urls(db, [server.route("/b", "<p>Model X runs at 900 tok/s.</p>")])[0].ok
    out = tmp_path / "board.wacz"
    assert cli("export-wacz", str(out)).exit_code == 0
    return base, out


def _validate(path, *extra):
    return subprocess.run([tool("wacz"), "validate", "-f", str(path), *extra], capture_output=True, text=True,
                          timeout=120)


def _rewrite_digest(src, dst, change) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "datapackage-digest.json":
                digest = json.loads(data)
                change(digest["signedData"])
                data = json.dumps(digest).encode()
            zout.writestr(item, data)


@pytest.mark.referee
def test_wacz_validate_verifies_the_signature_through_caveats_verifier(exported, tmp_path):
    base, out = exported
    v = _validate(out, "--verify-auth", "--verifier-url", f"{base}/api/wacz/verify")
    assert v.returncode == 0 and "Successfully verified signature" in v.stdout, v.stdout + v.stderr
    assert "Traceback" not in v.stdout + v.stderr

    # a signature changed after signing: the verifier refuses, the tool reports it
    bad = tmp_path / "bad.wacz"

    def flip(sd):
        raw = bytearray(base64.b64decode(sd["signature"]))
        raw[-1] ^= 1
        sd["signature"] = base64.b64encode(bytes(raw)).decode()

    _rewrite_digest(out, bad, flip)
    v = _validate(bad, "--verify-auth", "--verifier-url", f"{base}/api/wacz/verify")
    assert v.returncode != 0 and "Signature not verified" in v.stdout, v.stdout + v.stderr

    # a valid signature by a key this installation does not sign with: not vouched for
    foreign = tmp_path / "foreign.wacz"
    key_path = tmp_path / "other.pem"
    signing.ensure_key(key_path)
    key = signing.load_key(key_path)

    def resign(sd):
        sd["signature"], sd["publicKey"] = signing.sign(key, sd["hash"]), signing.public_key_b64(key)

    _rewrite_digest(out, foreign, resign)
    v = _validate(foreign, "--verify-auth", "--verifier-url", f"{base}/api/wacz/verify")
    assert v.returncode != 0 and "Signature not verified" in v.stdout, v.stdout + v.stderr


def test_verifier_answers_in_the_api_shape(exported):
    import httpx

    base, out = exported
    with zipfile.ZipFile(out) as z:
        signed = json.loads(z.read("datapackage-digest.json"))["signedData"]
    r = httpx.post(f"{base}/api/wacz/verify", json=signed)
    body = r.json()
    assert r.status_code == 200 and list(body)[0] == "ok" and body["verified"] is True and body["current_key"]
    assert body["hash"] == signed["hash"]
    r = httpx.post(f"{base}/api/wacz/verify", json={**signed, "hash": "sha256:" + "0" * 64})
    assert r.status_code == 400 and r.json()["ok"] is False and "does not verify" in r.json()["error"]
    r = httpx.post(f"{base}/api/wacz/verify", json={"hash": signed["hash"]})
    assert r.status_code == 400 and r.json()["ok"] is False
