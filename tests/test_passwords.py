"""Password hashing and the in-process record of verified passwords."""

from __future__ import annotations

from pbmserv.service import passwords


def test_hash_and_check() -> None:
    stored = passwords.hash_password("s3cret")
    assert stored.startswith("$argon2id$") and "s3cret" not in stored
    assert passwords.check_password(stored, "s3cret")
    assert passwords.check_password(stored, "s3cret")  # the remembered path
    assert not passwords.check_password(stored, "S3cret")
    assert not passwords.check_password("not a hash", "s3cret")


def test_a_changed_password_is_not_remembered() -> None:
    old = passwords.hash_password("one")
    new = passwords.hash_password("two")
    assert passwords.check_password(old, "one")
    assert not passwords.check_password(new, "one")
    assert passwords.check_password(new, "two")
