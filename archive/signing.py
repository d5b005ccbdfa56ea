"""An ECDSA P-384 key kept in a file, and the signatures made with it: WACZ ``signedData`` (the WACZ
Signing and Verification specification's anonymous form) and the tamper-evident log's tree heads.

The key is a PKCS#8 PEM file (mode 0600) made once (:func:`ensure_key`, by ``caveat init``). A
signature is ECDSA with SHA-256 over the UTF-8 bytes of the signed string, encoded as the raw
``r || s`` pair (IEEE P1363, what WebCrypto produces and verifies); public keys are base64 DER
SubjectPublicKeyInfo. Verification accepts DER-encoded signatures too.
"""

from __future__ import annotations

import base64
import os
from datetime import datetime, timezone
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

CURVE = ec.SECP384R1
SIZE = 48  # bytes of r and of s on P-384


def ensure_key(path: Path) -> bool:
    """Make the key file if there is none; True when it was made now."""
    path = Path(path)
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(CURVE())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return True


def load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path} does not hold an ECDSA private key")
    return key


def public_key_b64(key: ec.EllipticCurvePrivateKey) -> str:
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(der).decode("ascii")


def sign(key: ec.EllipticCurvePrivateKey, message: str) -> str:
    """Base64 of the raw r||s ECDSA(SHA-256) signature of ``message``'s UTF-8 bytes."""
    r, s = decode_dss_signature(key.sign(message.encode("utf-8"), ec.ECDSA(hashes.SHA256())))
    size = (key.curve.key_size + 7) // 8
    return base64.b64encode(r.to_bytes(size, "big") + s.to_bytes(size, "big")).decode("ascii")


def verify(public_key_b64_der: str, message: str, signature_b64: str) -> bool:
    """True when ``signature_b64`` (raw r||s or DER) signs ``message`` under the base64 SPKI key."""
    try:
        pub = serialization.load_der_public_key(base64.b64decode(public_key_b64_der))
        sig = base64.b64decode(signature_b64)
    except (ValueError, TypeError):
        return False
    if not isinstance(pub, ec.EllipticCurvePublicKey):
        return False
    size = (pub.curve.key_size + 7) // 8
    if len(sig) == 2 * size:
        sig = encode_dss_signature(int.from_bytes(sig[:size], "big"), int.from_bytes(sig[size:], "big"))
    try:
        pub.verify(sig, message.encode("utf-8"), ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


def wacz_signed_data(key: ec.EllipticCurvePrivateKey, package_hash: str, *, software: str, version: str) -> dict:
    """The anonymous ``signedData`` of ``datapackage-digest.json``: the datapackage hash signed."""
    return {"hash": package_hash, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "software": software, "version": version, "signature": sign(key, package_hash),
            "publicKey": public_key_b64(key)}
