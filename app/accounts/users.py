"""Accounts and their passwords: Argon2id hashing (older scrypt hashes still verify and are rehashed at
the next sign-in), creating, finding and authenticating users."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from argon2 import PasswordHasher
from argon2 import Type as Argon2Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.errors import BadRequest, Conflict, NotFound
from app.models import User

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MIN_PASSWORD = 8
USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")


# -- passwords -------------------------------------------------------------------------------------
def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024, dklen=32)


# Argon2id at OWASP's minimum (m = 19 MiB, t = 2, p = 1). Hashes from before (scrypt) still verify and
# are replaced by an Argon2id hash at the user's next sign-in.
_ARGON2 = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1, hash_len=32, salt_len=16,
                         type=Argon2Type.ID)


def hash_password(password: str) -> str:
    return _ARGON2.hash(password)


def _legacy_scrypt_hash(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    if stored.startswith("$argon2"):
        try:
            return _ARGON2.verify(stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def needs_rehash(stored: str) -> bool:
    if not stored.startswith("$argon2"):
        return True
    try:
        return _ARGON2.check_needs_rehash(stored)
    except InvalidHashError:
        return True


_DUMMY_HASH = hash_password(secrets.token_hex(8))


# -- users -----------------------------------------------------------------------------------------
def get_user(session: Session, username: str) -> User | None:
    return session.scalar(select(User).where(User.username == username))


def create_user(session: Session, username: str, password: str) -> User:
    if not USERNAME_RE.match(username or ""):
        raise BadRequest(
            f"Username {username!r} is not allowed: use 1-100 letters, digits, '_', '.', '@' or '-', "
            "starting with a letter or digit."
        )
    if len(password or "") < MIN_PASSWORD:
        raise BadRequest(f"The password is too short: use at least {MIN_PASSWORD} characters.")
    if get_user(session, username) is not None:
        raise Conflict(f"User {username!r} already exists; pick another name or sign in as that user.")
    user = User(username=username, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    return user


def _existing_user(session: Session, username: str) -> User:
    user = get_user(session, username)
    if user is None:
        raise NotFound(f"No user {username!r}. Create one with `caveat user add {username}`.")
    return user


def authenticate(session: Session, username: str, password: str) -> User | None:
    """The active user with this name and password, or None (same work either way)."""
    user = get_user(session, username or "")
    if user is None:
        verify_password(password or "", _DUMMY_HASH)
        return None
    if not verify_password(password or "", user.password_hash) or not user.is_active:
        return None
    if needs_rehash(user.password_hash):  # an scrypt hash from before: Argon2id from now on
        user.password_hash = hash_password(password)
        session.flush()
    return user
