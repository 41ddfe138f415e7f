"""Delivery status notifications (RFC 3464) of the shapes receiving servers send, made
by the tests: one recipient or many, an alias's Final-Recipient beside the
Original-Recipient, failures, delays and deliveries, the returned mail's header."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count

_numbers = count(1)


@dataclass(frozen=True)
class Group:
    """One recipient's fields in the report."""

    final: str
    status: str = "5.1.1"
    action: str = "failed"
    #: the address as the sender gave it (None: the field is left out)
    original: str | None = None
    diagnostic: str | None = None

    def fields(self) -> str:
        lines = [f"Final-Recipient: rfc822; {self.final}"]
        if self.original is not None:
            lines.append(f"Original-Recipient: rfc822;{self.original}")
        lines += [f"Action: {self.action}", f"Status: {self.status}"]
        code = {"5": "550", "4": "451", "2": "250"}[self.status[0]]
        lines.append("Diagnostic-Code: smtp; " + (
            self.diagnostic or f"{code} {self.status} <{self.final}>: as the server said"))
        return "\n".join(lines)


def dsn(to: str, groups: list[Group], returned_id: str | None = None,
        sender: str = "MAILER-DAEMON@mx.example.net (Mail Delivery System)") -> bytes:
    """A report to ``to`` (where the bounce is sent) of the ``groups``; with
    ``returned_id``, the returned mail's header (its Message-ID) in a
    text/rfc822-headers part."""
    n = next(_numbers)
    boundary = f"report-{n}"
    subject = ("Delayed Mail (still being retried)" if all(g.action == "delayed" for g in groups)
               else "Undelivered Mail Returned to Sender")
    headers = (f"From: pbmserv <pbmserv@localhost>\nTo: {groups[0].final}\n"
               f"Subject: a board\nMessage-ID: {returned_id}\n") if returned_id else ""
    returned = (f"\n--{boundary}\nContent-Description: Undelivered Message Headers\n"
                f"Content-Type: text/rfc822-headers\n\n{headers}") if returned_id else ""
    status = "\n\n".join(g.fields() for g in groups)
    return f"""From: {sender}
To: {to}
Subject: {subject}
Message-ID: <report-{n}@mx.example.net>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="{boundary}"

--{boundary}
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.net.

Your message could not be delivered to one or more recipients.

--{boundary}
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net
Arrival-Date: Tue, 24 Nov 2026 10:00:00 +0000

{status}
{returned}
--{boundary}--
""".replace("\n", "\r\n").encode()
