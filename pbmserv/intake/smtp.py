"""The SMTP edge: refuse what is not ours, store what is, then answer 250.

Storing is the intake writer's (group commit); a session waits for its mail's commit."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from types import SimpleNamespace
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from pbmserv.config import Settings
from pbmserv.connections import (
    FULL,
    MAKE_ROOM,
    CappedConnection,
    ConnectionCap,
    quiet_accept_errors,
)
from pbmserv.intake.store import OverQuota, Stored
from pbmserv.intake.writer import IntakeWriter, Pending
from pbmserv.mail.addresses import MAX_ADDRESS, is_ours

log = logging.getLogger(__name__)

OK = "250 OK"
#: the mail's number in the inbox: ``pbmserv inbox show N``, and in our log
OK_STORED = "250 2.0.0 Message accepted as #{}"
OK_DUPLICATE = "250 2.0.0 Message already received"
NO_SUCH_USER = "550 5.1.1 No such mailbox here: this server only takes mail for {}"
SENDER_TOO_LONG = ("553 5.1.7 The sender address is {} characters long; this server takes "
                   "addresses of at most {}")
STORE_FAILED = "451 4.3.0 Could not store the message; please try again later"
TOO_BIG = "552 5.3.4 Message too big for this server (at most {} bytes)"
#: the longest line of a mail taken (its line end with it): Postfix takes any line
#: (it chops a long one up and puts it together again), mail programs write lines of
#: a few KB (an Exchange header of 1,187 characters, a base64 attachment on one line of
#: 28 KB); a line is held in memory whole until it ends, so there is a cap, and a
#: line over it refuses the mail with this answer
MAX_LINE = 1024 * 1024
LINE_TOO_LONG = (f"500 5.6.0 Line too long: this server takes lines of at most {MAX_LINE} "
                 "bytes (RFC 5321 4.5.3.1.6)")
#: the sender is over its quota of stored mail: for now (see pbmserv.intake.store)
OVER_QUOTA = "451 4.7.1 Not stored: {}; please try again later"


def content_of(envelope: Envelope) -> bytes:
    raw = envelope.original_content or envelope.content or b""
    return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else bytes(raw)


@functools.lru_cache(maxsize=1024)
def parsed_address(arg: str, local_part_limit: int) -> tuple[str | None, str | None]:
    """aiosmtpd's own reading of the argument of a MAIL FROM or RCPT TO (the address
    and what follows it; None, None if it is not one), once for each argument.  Its
    ``SMTP._getaddr`` reads only the server's local part limit (the stand-in given
    it here); ``tests/test_smtp.py`` checks the two agree."""
    stand_in: Any = SimpleNamespace(local_part_limit=local_part_limit)
    return SMTP._getaddr(stand_in, arg)


class CachedAddresses:
    """For an aiosmtpd server class: the address of a MAIL FROM or RCPT TO read once
    for each argument (``parsed_address``).  aiosmtpd reads it afresh with the email
    package's full address grammar and makes a class (a typing.Protocol) every time:
    30 us of CPU a command, 60 a mail, a tenth of the intake's; and the same few
    arguments come again and again (the server's own address in every RCPT TO)."""

    local_part_limit: int

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        return parsed_address(arg, self.local_part_limit)


#: aiosmtpd's own refusals, and what the intake says instead: what was wrong, and the
#: limit; the second member: said after DATA (once for each recipient in LMTP)
_AIOSMTPD_SAYS = {
    "552 Error: message size exceeds fixed maximum message size": (TOO_BIG, False),
    "552 Error: Too much mail data": (TOO_BIG, True),
    "500 Line too long (see RFC5321 4.5.3.1.6)": (LINE_TOO_LONG, True),
}


class PlainRefusals:
    """For an aiosmtpd server class: lines up to MAX_LINE bytes taken, and the
    library's refusals of a mail too large or a line too long said with the limit
    (``tests/test_mail_size.py`` checks each over a real session).  ``per_recipient``
    (LMTP): a refusal after DATA is said once for each recipient, as LMTP answers."""

    line_length_limit = MAX_LINE
    per_recipient = False
    event_handler: Any
    envelope: Envelope | None

    async def push(self, status: Any) -> None:
        said = _AIOSMTPD_SAYS.get(status) if isinstance(status, str) else None
        if said is not None:
            text, after_data = said
            status = text.format(self.event_handler.settings.max_message_size)
            if self.per_recipient and after_data and self.envelope is not None \
                    and self.envelope.rcpt_tos:
                status = "\r\n".join(status for _ in self.envelope.rcpt_tos)
        await super().push(status)  # type: ignore[misc]


class IntakeSMTP(CachedAddresses, PlainRefusals, SMTP):
    """aiosmtpd's SMTP server, its addresses read once (CachedAddresses), its
    refusals plain (PlainRefusals)."""


class CappedSession(CappedConnection):
    """An SMTP or LMTP session under the process's cap (pbmserv.connections): told
    with a 421 why it is closed."""

    hostname: str

    def farewell(self, why: str) -> None:
        code = "4.3.2" if why in (FULL, MAKE_ROOM) else "4.4.2"
        transport = self.capped_transport
        if isinstance(transport, asyncio.WriteTransport):
            transport.write(f"421 {code} {self.hostname} {why}\r\n".encode())


class CappedSMTP(CappedSession, IntakeSMTP):
    """The SMTP listener's sessions."""


class SmtpController(Controller):
    """SMTP on host:port, its sessions counted by ``cap``."""

    cap: ConnectionCap

    def factory(self) -> CappedSMTP:
        session = CappedSMTP(self.handler, **self.SMTP_kwargs)
        session.cap = self.cap
        return session


class IntakeHandler:
    """aiosmtpd handler: only the hooks it needs."""

    def __init__(self, writer: IntakeWriter, settings: Settings) -> None:
        self.writer = writer
        self.settings = settings

    async def handle_MAIL(self, server: SMTP, session: Session, envelope: Envelope,
                          address: str, mail_options: list[str]) -> str:
        """An envelope sender longer than any address is refused here, before anything
        is stored (a mail from it could not be answered)."""
        if len(address) > MAX_ADDRESS:
            return SENDER_TOO_LONG.format(len(address), MAX_ADDRESS)
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return OK

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope,
                          address: str, rcpt_options: list[str]) -> str:
        if not is_ours(address, self.settings.addresses):
            return NO_SUCH_USER.format(", ".join(self.settings.addresses))
        envelope.rcpt_tos.append(address)
        return OK

    async def store(self, raw: bytes, envelope: Envelope) -> str:
        """Have the mail committed; the answer for the client once it is (or is not)."""
        answer: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self.writer.submit(Pending(raw, envelope.mail_from or "<>", answer))
        try:
            stored = await answer
        except Exception:
            return STORE_FAILED
        if isinstance(stored, OverQuota):
            return OVER_QUOTA.format(stored)
        return OK_DUPLICATE if stored is None else OK_STORED.format(stored)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        with working(server):
            return await self.store(content_of(envelope), envelope)


def working(server: SMTP) -> contextlib.AbstractContextManager[None]:
    """While a session's mail is stored, it is busy: never closed to make room."""
    return server.working() if isinstance(server, CappedConnection) else \
        contextlib.nullcontext()


def make_controller(handler: IntakeHandler, host: str, port: int,
                    settings: Settings, cap: ConnectionCap) -> Controller:
    """The SMTP listener on host:port; its sessions count against ``cap``."""
    kwargs: dict[str, Any] = {
        "hostname": host,
        "port": port,
        "data_size_limit": settings.max_message_size,
        "enable_SMTPUTF8": True,
        "decode_data": False,
        "ident": f"{settings.server_name} ESMTP",
        # silence is timed by the cap (pbmserv.connections), which says so (421)
        "timeout": settings.connection_max_seconds,
    }
    controller = SmtpController(handler, server_hostname=settings.domain, **kwargs)
    controller.cap = cap
    quiet_accept_errors(controller.loop)
    return controller
