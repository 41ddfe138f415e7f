"""Every mail is bounded alike before it is read: a bounce as much as a person's mail,
whatever its line ends (CRLF, LF or a bare CR, as the mail parser reads them).

The cost of reading a mail is measured as work, not time: the Python calls made while
parsing it (sys.setprofile), against those of a mail just inside the limits."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
from sqlalchemy import select

from pbmserv.bounces.reading import MAX_READ, read_bounce
from pbmserv.db.models import Bounce, InboundMessage, MailSuspension
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus
from pbmserv.mail.parse import (
    MAX_CONTAINERS,
    MAX_HEADER_FIELDS,
    MAX_PARTS,
    parse_bounded,
    parse_message,
)
from tests.conftest import Mailer

OURS = ("pbmserv@localhost",)
#: a bounce to a bounce address (VERP) and to the game address, and a person's mail
SENDERS = [("<>", "MAILER-DAEMON@mx.example.org", "pbmserv+bounce-o1-aaaaaaaaaaaaaaaa@localhost"),
           ("<>", "MAILER-DAEMON@mx.example.org", "pbmserv@localhost"),
           ("mallory@example.net", "mallory@example.net", "pbmserv@localhost")]


def calls(work: Callable[[], Any]) -> int:
    """How many Python and C functions ``work`` calls."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def many_parts(parts: int, sender: str, to: str, eol: str = "\r\n") -> bytes:
    """A multipart mail of ``parts`` empty parts (and the mail itself: parts + 1)."""
    body = "".join(f"--x{eol}{eol}" for _ in range(parts))
    return (f"From: {sender}{eol}To: {to}{eol}Subject: help{eol}MIME-Version: 1.0{eol}"
            f'Content-Type: multipart/mixed; boundary="x"{eol}{eol}{body}--x--{eol}').encode()


def nested(depth: int, eol: str) -> bytes:
    """``depth`` multiparts nested in one another, the command in the innermost."""
    body = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"{eol}{eol}--b{i}{eol}'
                   for i in range(depth))
    body += f"Content-Type: text/plain{eol}{eol}help{eol}"
    body += "".join(f"--b{i}--{eol}" for i in reversed(range(depth)))
    return f"From: alice@example.org{eol}Subject: help{eol}MIME-Version: 1.0{eol}{body}".encode()


@pytest.mark.parametrize(("envelope", "sender", "to"), SENDERS)
def test_25000_empty_parts_cost_what_a_mail_at_the_limit_costs(envelope: str, sender: str,
                                                               to: str) -> None:
    at_limit = many_parts(MAX_PARTS - 1, sender, to)
    flood = many_parts(25_000, sender, to)
    assert parse_message(at_limit, OURS, envelope).refusal == ""
    read = parse_message(flood, OURS, envelope)
    assert read.refusal == "parts"
    if envelope == "<>":  # a bounce over a limit is not read: it says nothing
        assert read.bounce is not None and not read.bounce.failures
    # before, the parser built all 25,000 parts, and a bounce's readers went through
    # them all: 1.3 s against 0.02 s; now the parser stops at the 101st part
    limit = calls(lambda: parse_message(at_limit, OURS, envelope))
    assert calls(lambda: parse_message(flood, OURS, envelope)) < limit * 1.5


def test_the_parser_stops_at_the_part_after_the_limit() -> None:
    _, refusal = parse_bounded(many_parts(MAX_PARTS - 1, "a@example.org", "pbmserv@localhost"))
    assert refusal == ""
    msg, refusal = parse_bounded(many_parts(MAX_PARTS, "a@example.org", "pbmserv@localhost"))
    assert refusal == "parts" and not msg.is_multipart()  # its header alone


@pytest.mark.parametrize("eol", ["\r\n", "\n", "\r"])
def test_line_ends_of_every_kind_are_counted(eol: str) -> None:
    # 30 nested levels passed the 20-level limit when lines ended in a bare CR
    assert parse_message(nested(MAX_CONTAINERS, eol)).commands == ["help"]
    assert parse_message(nested(MAX_CONTAINERS + 1, eol)).refusal == "nesting"
    assert parse_message(nested(30, eol)).refusal == "nesting"
    # the header's lines, and where it ends
    fields = "".join(f"X-Filler-{n}: {n}{eol}" for n in range(MAX_HEADER_FIELDS))
    many = f"From: alice@example.org{eol}{fields}Subject: help{eol}{eol}help{eol}".encode()
    assert parse_message(many).refusal == "headers"
    fields = "".join(f"X-Filler-{n}: {n}{eol}" for n in range(MAX_HEADER_FIELDS - 3))
    fine = f"From: alice@example.org{eol}{fields}Subject: help{eol}{eol}{eol}".encode()
    assert parse_message(fine).commands == ["help"]
    # parts
    flood = many_parts(MAX_PARTS, "alice@example.org", "pbmserv@localhost", eol)
    assert parse_message(flood).refusal == "parts"


def test_line_ends_mixed_in_one_mail_are_counted() -> None:
    eols = ["\r", "\n", "\r\n"]
    body = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"{eols[i % 3]}'
                   f"{eols[(i + 1) % 3]}--b{i}{eols[i % 3]}" for i in range(30))
    raw = f"From: alice@example.org\rSubject: help\n{body}".encode()
    assert parse_message(raw).refusal == "nesting"


def test_a_dsn_with_bare_cr_line_ends_is_read() -> None:
    dsn = (b"From: MAILER-DAEMON@mx.example.org\r"
           b"To: pbmserv+bounce-o7-aaaaaaaaaaaaaaaa@localhost\r"
           b"Subject: Undelivered Mail Returned to Sender\r"
           b'Content-Type: multipart/report; report-type=delivery-status; boundary="r"\r\r'
           b"--r\rContent-Type: text/plain\r\rYour mail could not be delivered.\r\r"
           b"--r\rContent-Type: message/delivery-status\r\r"
           b"Reporting-MTA: dns; mx.example.org\r\r"
           b"Final-Recipient: rfc822; bob@example.org\rAction: failed\rStatus: 5.1.1\r"
           b"Diagnostic-Code: smtp; 550 5.1.1 no such user\r\r"
           b"--r\rContent-Type: text/rfc822-headers\r\r"
           b"Message-ID: <abc@localhost>\r\r--r--\r")
    read = parse_message(dsn, OURS, "<>")
    assert read.bounce is not None
    assert [(f.address, f.permanent, f.status, f.diagnostic) for f in read.bounce.failures] \
        == [("bob@example.org", True, "5.1.1", "smtp; 550 5.1.1 no such user")]
    assert read.bounce.message_ids == ["<abc@localhost>"]
    msg, _ = parse_bounded(dsn)
    assert read_bounce(msg).failures == read.bounce.failures


@pytest.mark.parametrize(("envelope", "sender", "to"), SENDERS)
def test_a_flood_of_parts_is_refused_or_dropped_and_counts_for_nothing(
        mailer: Mailer, db: Database, envelope: str, sender: str, to: str) -> None:
    mailer.signup("bob")
    flood = many_parts(25_000, sender, to).replace(
        b"Subject: help", b"Subject: help\r\nMessage-ID: <flood@example.net>")
    out = mailer.send_raw(flood, envelope)
    with db.reading() as s:
        stored = s.scalars(select(InboundMessage).order_by(InboundMessage.id.desc())).first()
        assert stored is not None
        assert s.scalar(select(Bounce)) is None and s.scalar(select(MailSuspension)) is None
    if envelope == "<>":  # never answered; kept with the reason
        assert out == []
        assert (stored.status, stored.error) == (
            InboundStatus.IGNORED, "bounce not counted: not read, over a limit (parts)")
    else:
        [reply] = out
        assert reply.to_addr == sender
        assert "too many parts (at most 100 are read)" in reply.body


def qmail_bounce(returned_lines: int) -> bytes:
    """A qmail bounce: plain text (flufl.bounce reads it), the mail it returns copied
    below the reason, line by line."""
    returned = "".join(f"line {n} of a long mail that came back whole\r\n"
                       for n in range(returned_lines))
    return ("From: MAILER-DAEMON@mx.example.org\r\nTo: pbmserv@localhost\r\n"
            "Subject: failure notice\r\n\r\n"
            "Hi. This is the qmail-send program at mx.example.org.\r\n"
            "I'm afraid I wasn't able to deliver your message to the following addresses.\r\n"
            "This is a permanent error; I've given up. Sorry it didn't work out.\r\n\r\n"
            "<bob@example.org>:\r\nSorry, no mailbox here by that name. (#5.1.1)\r\n\r\n"
            "--- Below this line is a copy of the message.\r\n\r\n"
            "From: pbmserv <pbmserv@localhost>\r\nTo: bob@example.org\r\n"
            f"Message-ID: <returned@localhost>\r\nSubject: a board\r\n\r\n{returned}").encode()


def junk_bounce(size: int) -> bytes:
    """A bounce-looking mail (null sender, a Mailer-Daemon From) of ``size`` bytes of
    lines every reader of non-standard bounces looks at, and none recognises."""
    line = "<bob@example.org>: host mx.example.org said: 550 5.1.1 and again\r\n"
    return ("From: MAILER-DAEMON@mx.example.org\r\nTo: pbmserv@localhost\r\n"
            "Subject: Undelivered\r\n\r\n" + line * (size // len(line))).encode()


def test_a_bounce_is_read_no_further_than_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a bounce says comes first; the rest (the mail it returns, any size) is not
    read through: the readers' work is the same for 4 MB as for 256 KB (before: 16
    times as much, 2.7 s for 7 MB)."""
    work: list[int] = []

    def counted(msg: Any) -> Any:
        out: list[Any] = []
        work.append(calls(lambda: out.append(read_bounce(msg))))
        return out[0]

    monkeypatch.setattr("pbmserv.mail.parse.read_bounce", counted)
    parse_message(junk_bounce(MAX_READ), OURS, "<>")
    parse_message(junk_bounce(16 * MAX_READ), OURS, "<>")
    assert work[1] < work[0] * 1.5, work
    # a genuine bounce that returns a large mail is read right all the same
    for returned in (200, 90_000):
        read = parse_message(qmail_bounce(returned), OURS, "<>")
        assert read.bounce is not None and read.bounce.message_ids == ["<returned@localhost>"]
        assert [(f.address, f.status) for f in read.bounce.failures] == [
            ("bob@example.org", "5.1.1")]
