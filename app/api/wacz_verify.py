"""`POST /api/wacz/verify`: the verifier `wacz validate --verify-auth --verifier-url` posts a WACZ
package's ``signedData`` to (docs/wacz.md). Public: it reads nothing but this installation's public keys."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from app.api.convention import ok
from app.api.schemas import ERRORS, Open
from app.replay.wacz_verify import verify_signed_data

router = APIRouter(tags=["citations"])


class SignedData(BaseModel):
    """``signedData`` of ``datapackage-digest.json`` as Caveat writes it (the anonymous form)."""

    model_config = ConfigDict(extra="allow")
    hash: str = Field(..., max_length=200, description="sha256:<hex of datapackage.json>")
    signature: str = Field(..., max_length=1000, description="base64 ECDSA P-384 signature of hash (r||s or DER)")
    publicKey: str = Field(..., max_length=2000, description="base64 DER SubjectPublicKeyInfo")
    created: str | None = Field(None, max_length=64)
    software: str | None = Field(None, max_length=200)
    version: str | None = Field(None, max_length=64)


class Verified(Open):
    ok: Literal[True]
    verified: Literal[True]
    hash: str
    created: str | None = None
    public_key: str
    current_key: bool


@router.post("/api/wacz/verify", response_model=Verified, responses=ERRORS,
             summary="Verify a WACZ package's signedData: 200 when this installation signed it")
def verify_wacz_signature(body: SignedData, request: Request) -> dict:
    return ok(verify_signed_data(request.app.state.settings, body.model_dump()))
