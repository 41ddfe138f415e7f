"""Reading a bounce: which addresses failed, for good or for now, why, and which of
our mails it returns.

Two readers, the first that finds failures wins:

- RFC 3464 delivery status notifications (``multipart/report``, a
  ``message/delivery-status`` part), read here field by field: each recipient's
  ``Original-Recipient`` (the address as the sender gave it) and ``Final-Recipient``
  (where it led: an alias's target, a catch-all), ``Action`` and ``Status``.  This
  also reads the forms ``flufl.bounce`` misses: a status part without blank lines
  between its groups or without ``Action`` (the status class says it), or one sent in
  base64.
- ``flufl.bounce``, GNU Mailman's own detectors, for the non-standard forms: old
  Postfix, Exchange, qmail, Exim, Yahoo and others.  It raises on some mail (a report
  without a From, for one): that is caught and counts as nothing found.

The Message-IDs of the mail returned (a ``message/rfc822`` or ``text/rfc822-headers``
part, or a ``Message-ID:`` line quoted in the text) name the outgoing mail when the
bounce did not come back to its VERP address.
"""

from __future__ import annotations

import base64
import binascii
import logging
import quopri
import re
from dataclasses import dataclass, field
from email.message import Message

from pbmserv.mail.headers import address_of
from pbmserv.mail.text import clean_line, payload_text

log = logging.getLogger(__name__)
#: the text read of a bounce's parts
MAX_TEXT = 256 * 1024
#: the most of a bounce that is read: what it says comes first, the mail it returns
#: (with its attachments, whatever their size) last
MAX_READ = 256 * 1024
_RECIPIENT = re.compile(r"^(final|original)-recipient\s*:\s*(?:[a-z0-9-]+\s*;)?\s*(.*)$", re.I)
_RECIPIENT_LINE = re.compile(r"^(final|original)-recipient\s*:", re.I | re.M)
_FIELD = re.compile(r"^([a-z-]+)\s*:\s*(.*)$", re.I)
_MESSAGE_ID = re.compile(r"^message-id:\s*(<[^<>\s]{1,900}>)", re.I | re.M)
_ENHANCED = re.compile(r"\b[245]\.\d{1,3}\.\d{1,3}\b")
#: a line's end as the mail parser reads it: CRLF, a bare CR or LF
_LINE_END = re.compile(r"\r\n?")


@dataclass(frozen=True)
class Failure:
    """One address that the mail did not reach (for good or, a delay, not yet)."""

    #: the address the report says was mailed: its Original-Recipient if it gives
    #: one, else its Final-Recipient (or the one address a non-standard bounce names)
    address: str
    permanent: bool
    #: the enhanced status code (5.1.1), "" if none was given
    status: str = ""
    #: the remote server's answer or the report's words, in one line
    diagnostic: str = ""
    #: the Final-Recipient, where it differs from ``address`` (an alias's target)
    final: str = ""


@dataclass
class BounceReport:
    failures: list[Failure] = field(default_factory=list)
    #: the report is a DSN (a delivery-status part), even one of success or delay
    is_dsn: bool = False
    #: Message-IDs of the mail it returns
    message_ids: list[str] = field(default_factory=list)

    def about(self, address: str) -> list[Failure]:
        """What the report says of ``address``, the one address the returned mail went
        to: the failures whose Original-Recipient (else Final-Recipient) is that address,
        else those whose Final-Recipient is, else, when the report names one address
        only, that one's (where the address led: an alias's target, a catch-all).  A
        report that names other addresses only says nothing of it: []."""
        address = address.strip().lower()
        found = [f for f in self.failures if f.address == address] or [
            f for f in self.failures if f.final == address]
        if not found and len({f.address for f in self.failures}) == 1:
            found = list(self.failures)
        return found


def read_bounce(msg: Message) -> BounceReport:
    """What a bounce says (nothing raised, whatever the mail)."""
    report = BounceReport()
    texts: list[str] = []
    status_texts: list[str] = []
    try:
        for part in msg.walk():
            ctype = part.get_content_type()
            if ctype == "message/delivery-status":
                report.is_dsn = True
                status_texts.append(_status_text(part))
            elif ctype == "message/rfc822":
                inner = part.get_payload()
                if isinstance(inner, list) and inner and isinstance(inner[0], Message):
                    mid = inner[0].get("Message-ID")
                    if mid:
                        report.message_ids.append(str(mid).strip())
            elif not part.is_multipart():
                text = _decoded(part)
                texts.append(text)
                if ctype != "text/rfc822-headers" and _RECIPIENT_LINE.search(text):
                    status_texts.append(text)  # DSN fields sent as text
    except Exception:  # a broken structure: what was read so far is used
        log.debug("bounce structure not fully read", exc_info=True)
    for text in status_texts:
        report.failures.extend(_dsn_failures(text))
    if not report.failures:
        report.failures.extend(_flufl_failures(msg, "\n".join(texts)))
    for text in texts:
        report.message_ids.extend(_MESSAGE_ID.findall(text))
    report.message_ids = list(dict.fromkeys(report.message_ids))
    seen: set[tuple[str, bool]] = set()
    unique = []
    for failure in report.failures:
        key = (failure.address, failure.permanent)
        if failure.address and key not in seen:
            seen.add(key)
            unique.append(failure)
    report.failures = unique
    return report


def _decoded(part: Message) -> str:
    return _LINE_END.sub("\n", payload_text(part, MAX_TEXT))


def _status_text(part: Message) -> str:
    """The text of a message/delivery-status part: its groups of fields as the parser
    split them.  A group sent in base64 or quoted-printable (the part's own
    Content-Transfer-Encoding, or one that a mangling relay wrote among the fields of
    the group before it) is decoded."""
    body = part.get_payload()
    encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
    if not isinstance(body, list):
        text = str(body)
        return _LINE_END.sub("\n", (_decode(text, encoding) if encoding in (
            "base64", "quoted-printable") else text)[:MAX_TEXT])
    pieces: list[str] = []
    for block in body:
        if not isinstance(block, Message):
            continue
        pieces.append("\n".join(f"{k}: {v}" for k, v in block.items()
                                if k.lower() != "content-transfer-encoding"))
        inner = block.get_payload()
        if isinstance(inner, str) and inner.strip():
            pieces.append(_decode(inner, encoding) if encoding in ("base64", "quoted-printable")
                          else inner)
        # the encoding said among a group's fields is that of what follows it
        encoding = str(block.get("Content-Transfer-Encoding", encoding)).strip().lower()
    return _LINE_END.sub("\n", "\n\n".join(pieces)[:MAX_TEXT])


def _decode(text: str, encoding: str) -> str:
    raw = text.encode("ascii", "replace")
    try:
        data = base64.b64decode(b"".join(raw.split())) if encoding == "base64" \
            else quopri.decodestring(raw)
    except (binascii.Error, ValueError):
        return text
    return data[:MAX_TEXT].decode("utf-8", "replace")


def _unfolded(text: str) -> list[str]:
    lines: list[str] = []
    for line in text.split("\n"):  # (line ends made LF by the callers)
        if line[:1] in (" ", "\t") and lines and lines[-1].strip():
            lines[-1] += " " + line.strip()
        else:
            lines.append(line.rstrip())
    return lines


def _dsn_failures(text: str) -> list[Failure]:
    """The failed recipients of a delivery-status text: groups of fields, one per
    recipient, ended by a blank line or by the next recipient's first field."""
    out: list[Failure] = []
    group: dict[str, str] = {}

    def close() -> None:
        final = address_of(group.get("final-recipient", ""))
        address = address_of(group.get("original-recipient", "")) or final
        if address:
            action = group.get("action", "").lower()
            status = _ENHANCED.search(group.get("status", ""))
            code = status.group(0) if status else ""
            diagnostic = clean_line(group.get("diagnostic-code", ""), 300)
            final = final if final != address else ""
            if action.startswith(("fail", "error")) or (not action and code.startswith("5")):
                out.append(Failure(address, True, code, diagnostic, final))
            elif action.startswith("delayed") or (not action and code.startswith("4")):
                out.append(Failure(address, False, code, diagnostic, final))
        group.clear()

    for line in _unfolded(text):
        if not line.strip():
            if any(k.endswith("-recipient") for k in group):
                close()
            else:
                group.clear()
            continue
        recipient = _RECIPIENT.match(line)
        if recipient is not None:
            key = f"{recipient.group(1).lower()}-recipient"
            if key in group:  # the next recipient's group, with no blank line between
                close()
            group[key] = recipient.group(2).strip()
            continue
        found = _FIELD.match(line)
        if found is not None:
            group.setdefault(found.group(1).lower(), found.group(2).strip())
    if any(k.endswith("-recipient") for k in group):
        close()
    return out


def _flufl_failures(msg: Message, text: str) -> list[Failure]:
    try:
        from flufl.bounce import all_failures
    except ImportError:  # pragma: no cover - a dependency; only RFC 3464 is read without it
        return []
    try:
        temporary, permanent = all_failures(msg)
    except Exception:
        log.debug("flufl.bounce could not read a bounce", exc_info=True)
        return []
    out = []
    for found, is_permanent in ((permanent, True), (temporary, False)):
        for raw in sorted(found):
            address = address_of(raw.decode("utf-8", "replace"))
            if address:
                out.append(Failure(address, is_permanent, *_near(text, address)))
    return out


def _near(text: str, address: str) -> tuple[str, str]:
    """The status code and the words that follow ``address`` where a non-standard
    bounce gives its reason ("<bob@example.org>: host ... said: 550 5.1.1 ...", Exchange's
    "bob@example.org on <date> ... #5.1.1"), up to the end of that paragraph."""
    lower, wanted = text.lower(), address.lower()
    at = -1
    for form in (f"<{wanted}>:", f"{wanted} on "):
        at = lower.find(form)
        if at >= 0:
            break
    if at < 0:
        at = lower.rfind(wanted)
    if at < 0:
        return "", ""
    window = re.split(r"\n[ \t]*\n", text[at:at + 1000], maxsplit=1)[0]
    status = _ENHANCED.search(window)
    return (status.group(0) if status else ""), clean_line(" ".join(window.split()), 300)
