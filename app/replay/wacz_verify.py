"""Checking the signature of a WACZ package this installation exported (``datapackage-digest.json``'s
anonymous ``signedData``: ``hash``, ``signature``, ``publicKey``), for ``POST /api/wacz/verify``.

``wacz validate --verify-auth --verifier-url <base>/api/wacz/verify`` checks that ``hash`` is the sha256
of ``datapackage.json`` and that every file matches its hash, then posts ``signedData`` here: the answer
is 200 only when ``signature`` is ``publicKey``'s ECDSA signature of ``hash`` and ``publicKey`` is a key
this installation signs with (its ``signing_key.pem``, or one pinned in ``CAVEAT_LOG_PUBLIC_KEYS``).
authsign's direct check (``--verify-auth`` alone) verifies only the domain-certificate form, so it
cannot verify an anonymous signature (docs/wacz.md).
"""

from __future__ import annotations

from app.config import Settings
from app.errors import BadRequest
from app.replay.wacz_export import signing_key_path
from archive import signing


def our_keys(settings: Settings) -> list[str]:
    """The public keys (base64 DER) this installation vouches for: its signing key, then pinned ones."""
    keys = []
    path = signing_key_path(settings)
    if path.exists():
        keys.append(signing.public_key_b64(signing.load_key(path)))
    keys += [k.strip() for k in settings.log_public_keys.split(",") if k.strip() and k.strip() not in keys]
    return keys


def verify_signed_data(settings: Settings, signed: dict) -> dict:
    """What a verifier answers for ``signedData``; raises BadRequest saying what does not hold."""
    missing = [k for k in ("hash", "signature", "publicKey") if not isinstance(signed.get(k), str) or not signed[k]]
    if missing:
        raise BadRequest(f"signedData lacks {', '.join(missing)}: post the signedData object of the package's "
                         "datapackage-digest.json (Caveat signs in the anonymous form: hash, signature, publicKey)")
    if not signing.verify(signed["publicKey"], signed["hash"], signed["signature"]):
        raise BadRequest("the signature does not verify: signature is not publicKey's signature of hash, so "
                         "datapackage-digest.json was changed after signing")
    keys = our_keys(settings)
    if signed["publicKey"] not in keys:
        raise BadRequest("the signature is valid but made by a key this installation does not sign with "
                         "(its key is public_key in /log/sth.json); ask the installation that exported the "
                         "package, or pin its key in CAVEAT_LOG_PUBLIC_KEYS")
    return {"verified": True, "hash": signed["hash"], "created": signed.get("created"),
            "public_key": signed["publicKey"], "current_key": signed["publicKey"] == (keys[0] if keys else None)}
