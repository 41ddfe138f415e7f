"""Password hashing (argon2id); plain passwords are never stored or logged."""

from __future__ import annotations

import hashlib
import hmac
import os

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane): about 18 ms
# per check here.  Hashes made with other parameters still verify.
_HASHER = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)

# Passwords this process has already verified, as a keyed digest under a random
# per-process key, by stored hash: a player's next move skips argon2.  Only successes
# are remembered, so a wrong password always pays the full cost.
_KEY = os.urandom(32)
_VERIFIED: dict[str, bytes] = {}
_VERIFIED_MAX = 10_000


def _digest(password: str) -> bytes:
    return hashlib.blake2b(password.encode("utf-8", "surrogatepass"), key=_KEY).digest()


def _remember(stored_hash: str, digest: bytes) -> None:
    if len(_VERIFIED) >= _VERIFIED_MAX:
        _VERIFIED.clear()
    _VERIFIED[stored_hash] = digest


def hash_password(password: str) -> str:
    """A new hash; the password it was made from counts as verified already."""
    stored = _HASHER.hash(password)
    _remember(stored, _digest(password))
    return stored


def check_password(stored_hash: str, password: str) -> bool:
    digest = _digest(password)
    known = _VERIFIED.get(stored_hash)
    if known is not None and hmac.compare_digest(known, digest):
        return True
    try:
        ok = _HASHER.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False
    _remember(stored_hash, digest)
    return ok
