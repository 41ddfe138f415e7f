"""Talking to the relay: one connection reused for a batch, and a cheap probe.

Failures come in two kinds.  ``RelayDown`` means the relay cannot be reached or
talked to at all: no single mail is to blame, so none is charged with a back-off.
``PermanentFailure`` and ``TemporaryFailure`` are the relay's answer to one mail.
"""

from __future__ import annotations

import smtplib
from types import TracebackType
from typing import Any

TIMEOUT = 30.0
PROBE_TIMEOUT = 5.0


def on_the_wire(data: bytes) -> bytes:
    """A mail as SMTP wants it: every line ending in CRLF (RFC 5321 2.3.8).  smtplib
    sends bytes as they are, and a bare LF is refused by a strict relay (as "Line too
    long": it sees the whole mail as one line) or by Postfix set against SMTP
    smuggling; a bare CR is made a line end too, never passed on."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").replace(b"\n", b"\r\n")


class RelayDown(Exception):
    """The relay is unreachable or not taking mail at all."""


class PermanentFailure(Exception):
    """The relay refused the mail for good (5xx)."""


class TemporaryFailure(Exception):
    """The relay refused the mail for now (4xx)."""


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, smtplib.SMTPResponseException) and exc.smtp_code == 421:
        return True
    return isinstance(exc, OSError | smtplib.SMTPServerDisconnected | smtplib.SMTPConnectError
                      | smtplib.SMTPHeloError)


class _Client(smtplib.SMTP):
    """smtplib's client, keeping the relay's answer to the last DATA (sendmail drops
    it): "250 2.0.0 Ok: queued as 4Xb...", the id to follow the mail in its log."""

    last_answer = ""

    def data(self, msg: Any) -> tuple[int, bytes]:
        code, text = super().data(msg)
        self.last_answer = f"{code} {text.decode('utf-8', 'replace')}"
        return code, text


class RelayConnection:
    """An SMTP session with the relay, opened on first use and reopened once if the
    relay hangs up between mails."""

    def __init__(self, relay: tuple[str, int], sender: str) -> None:
        self.relay = relay
        self.sender = sender
        self._smtp: _Client | None = None

    def _open(self) -> _Client:
        try:
            smtp = _Client(self.relay[0], self.relay[1], timeout=TIMEOUT)
            smtp.ehlo_or_helo_if_needed()
        except Exception as exc:
            raise RelayDown(f"{type(exc).__name__}: {exc}") from None
        self._smtp = smtp
        return smtp

    def send(self, data: bytes, to: str) -> str:
        """Send one mail; returns the relay's answer to it."""
        for attempt in (1, 2):
            smtp = self._smtp or self._open()
            try:
                # a local part in UTF-8 needs a relay that speaks SMTPUTF8 (RFC 6531)
                smtp.sendmail(self.sender, [to], on_the_wire(data),
                              mail_options=() if to.isascii() else ("SMTPUTF8",))
                return smtp.last_answer
            except smtplib.SMTPNotSupportedError as exc:
                raise PermanentFailure(f"the relay cannot send to {to!r}: {exc}") from None
            except smtplib.SMTPRecipientsRefused as exc:
                codes = [code for code, _ in exc.recipients.values()]
                text = "; ".join(f"{c} {m!r}" for c, m in exc.recipients.values())
                if all(500 <= c < 600 for c in codes):
                    raise PermanentFailure(text) from None
                raise TemporaryFailure(text) from None
            except smtplib.SMTPResponseException as exc:
                if exc.smtp_code == 421:
                    self.close()
                    raise RelayDown(f"421 {exc.smtp_error!r}") from None
                if 500 <= exc.smtp_code < 600:
                    raise PermanentFailure(f"{exc.smtp_code} {exc.smtp_error!r}") from None
                raise TemporaryFailure(f"{exc.smtp_code} {exc.smtp_error!r}") from None
            except Exception as exc:
                self.close()
                if not _is_connection_error(exc) or attempt == 2:
                    raise RelayDown(f"{type(exc).__name__}: {exc}") from None
                # the relay may close a connection after some mails: reconnect once
        raise AssertionError("unreachable: the second attempt returns or raises")

    def close(self) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            try:
                smtp.quit()
            except Exception:
                smtp.close()

    def __enter__(self) -> RelayConnection:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def probe(relay: tuple[str, int]) -> bool:
    """Whether the relay answers: connect, greet, say goodbye."""
    try:
        with smtplib.SMTP(relay[0], relay[1], timeout=PROBE_TIMEOUT) as smtp:
            smtp.ehlo_or_helo_if_needed()
            code, _ = smtp.noop()
            return 200 <= code < 300
    except Exception:
        return False
