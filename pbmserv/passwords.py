"""Password hashing (argon2id); plain passwords are never stored or logged."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane): about 15 ms
# per check here.  Every move checks a password inside the board's transaction, so
# this cost is paid on the hot path; hashes made with other parameters still verify.
_HASHER = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def check_password(stored_hash: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False
