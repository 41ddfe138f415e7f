"""No secret at rest: the stored copy of a processed mail has its passwords and codes
masked.

A mail is stored exactly as it came (``inbound_messages.raw``) before it is
acknowledged, so a crash loses nothing.  Once it has been processed, the passwords
and reset codes its commands held are replaced by ``*****`` in that copy: in the
headers and bodies as they are written, and inside quoted-printable or base64 parts
and encoded words, which are decoded, masked and written again.  What redelivery
detection needs (the sender, the Message-ID, or for a mail without one the hash of
its bytes as it came) is in ``dedupe_key``, kept apart when the mail was stored.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from email import encoders
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesParser
from email.policy import compat32

from pbmserv.commands import lookup
from pbmserv.commands.base import MASK
from pbmserv.service.errors import PlayerError

_MASK = MASK.encode()
#: a secret is masked where it stands as a word: between these (or the ends)
_EDGE = rb"\s\"'<>:;,()\[\]="


def secret_words(lines: Iterable[str]) -> set[str]:
    """The words in a password's (or code's) place in these command lines, whether or
    not the command went through."""
    found: set[str] = set()
    for line in lines:
        try:
            cmd, inv = lookup(line)
        except PlayerError:
            continue
        found.update(inv.args[i] for i in cmd.secrets(inv) if i < len(inv.args))
    return found


def _pattern(secrets: Collection[str]) -> re.Pattern[bytes] | None:
    words = sorted({s.encode("utf-8", "surrogateescape") for s in secrets if s},
                   key=len, reverse=True)
    if not words:
        return None
    alternatives = b"|".join(re.escape(w) for w in words)
    return re.compile(rb"(?<![^" + _EDGE + rb"])(?:" + alternatives + rb")(?![^" + _EDGE
                      + rb"])")


def _masked_part(part: Message, pattern: re.Pattern[bytes]) -> bool:
    """Mask a quoted-printable or base64 leaf part in place; whether it changed."""
    encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
    if encoding not in ("base64", "quoted-printable"):
        return False
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return False
    masked = pattern.sub(_MASK, payload)
    if masked == payload:
        return False
    del part["Content-Transfer-Encoding"]
    part.set_payload(masked)
    (encoders.encode_base64 if encoding == "base64" else encoders.encode_quopri)(part)
    return True


def _masked_headers(message: Message, secrets: Collection[str]) -> bool:
    """Mask the encoded words of the top-level headers in place; whether any changed."""
    changed = False
    for name, value in list(message.items()):
        if "=?" not in str(value):
            continue
        try:
            text = str(make_header(decode_header(str(value))))
        except (ValueError, LookupError, UnicodeError):
            continue
        masked = text
        for secret in sorted(secrets, key=len, reverse=True):
            if secret:
                masked = re.sub(rf"(?<![^\s\"'<>:;,()\[\]=]){re.escape(secret)}"
                                rf"(?![^\s\"'<>:;,()\[\]=])", MASK, masked)
        if masked != text:
            message.replace_header(name, str(make_header([(masked.encode(), "utf-8")])))
            changed = True
    return changed


def mask_raw(raw: bytes, secrets: Collection[str]) -> bytes:
    """``raw`` with every whole-word occurrence of a secret replaced by *****."""
    pattern = _pattern(secrets)
    if pattern is None:
        return raw
    out = pattern.sub(_MASK, raw)
    if b"=?" not in out and not re.search(rb"(?i)content-transfer-encoding:\s*(base64|"
                                          rb"quoted-printable)", out):
        return out
    try:
        message = BytesParser(policy=compat32).parsebytes(out)
        changed = _masked_headers(message, secrets)
        for part in message.walk():
            if not part.is_multipart():
                changed = _masked_part(part, pattern) or changed
        return message.as_bytes(policy=compat32) if changed else out
    except Exception:  # a mail the parser cannot write again: the plain masking stands
        return out
