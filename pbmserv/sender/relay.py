"""Talking to the relay: one connection reused for a batch, and a cheap probe.

The relay is the local MTA (plain SMTP, no login) or a provider's submission server:
``submission://`` (STARTTLS, required) or ``smtps://`` (TLS from the first byte), with
a login; the certificate is checked against ``relay_ca_file`` or the system's
authorities.

Failures come in two kinds.  ``RelayDown`` means the relay cannot be reached or
talked to at all: no single mail is to blame, so none is charged with a back-off.
Two of them are the relay's word, not silence, and the sender backs off for minutes
instead of probing every few seconds: ``LoginRefused`` (a wrong password) and
``Throttled`` (a 421 at any step, or a 4xx to MAIL FROM: providers say so to a
sender over their rate).  ``PermanentFailure`` and ``TemporaryFailure`` are the
relay's answer to one mail.

A login is tried with one mechanism (PLAIN, else LOGIN, else CRAM-MD5): smtplib's own
``login`` tries each one the server offers, and a wrong password cost two refused
logins a try, which brings a provider's lock sooner.
"""

from __future__ import annotations

import smtplib
import ssl
from pathlib import Path
from types import TracebackType
from typing import Any

from pbmserv.config import Relay, Settings, SettingsError, read_password

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


class LoginRefused(RelayDown):
    """The relay refused our login (or there is no password to give it)."""


class Throttled(RelayDown):
    """The relay said "not now" to the session rather than to a mail: 421 at any
    step, or a 4xx to MAIL FROM (a provider's rate limit, a full queue)."""


class PermanentFailure(Exception):
    """The relay refused the mail for good (5xx): ``code`` its reply code, ``about``
    what it refused: "recipient" (RCPT), "sender" (MAIL FROM) or "mail" (DATA, or the
    mail as a whole)."""

    def __init__(self, text: str, code: int = 0, about: str = "mail") -> None:
        super().__init__(text)
        self.code = code
        self.about = about


class TemporaryFailure(Exception):
    """The relay refused the mail for now (4xx)."""


def answer_text(answer: bytes | str) -> str:
    """A relay's answer as one line of text (smtplib gives bytes, lines joined by
    newlines)."""
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else str(answer)
    return " ".join(text.split())


#: the login mechanisms tried, best first: one of them, never each in turn
MECHANISMS = ("PLAIN", "LOGIN", "CRAM-MD5")


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


class _TlsClient(_Client, smtplib.SMTP_SSL):
    """The same over TLS from the first byte (smtps, port 465)."""


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """TLS with the relay's certificate checked (against ``ca_file``, else the system's
    authorities) and its name matched."""
    return ssl.create_default_context(cafile=None if ca_file is None else str(ca_file))


def _connect(relay: Relay, ca_file: Path | None, timeout: float) -> _Client:
    """A session with the relay, greeted, over TLS where its scheme wants it; a greeting
    of 421 (or another 4xx) is Throttled."""
    try:
        if relay.scheme == "smtps":
            smtp: _Client = _TlsClient(relay.host, relay.port, timeout=timeout,
                                       context=tls_context(ca_file))
        else:
            smtp = _Client(relay.host, relay.port, timeout=timeout)
    except smtplib.SMTPConnectError as exc:
        if 400 <= exc.smtp_code < 500:
            raise Throttled(f"{exc.smtp_code} {answer_text(exc.smtp_error)}") from None
        raise
    try:
        smtp.ehlo_or_helo_if_needed()
        if relay.scheme == "submission":
            if not smtp.has_extn("starttls"):
                raise RelayDown(f"{relay.host}:{relay.port} offers no STARTTLS, and the "
                                "password is never sent in the clear")
            smtp.starttls(context=tls_context(ca_file))
            smtp.ehlo()
    except BaseException:
        smtp.close()
        raise
    return smtp


def _why(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (f"its certificate is not trusted ({exc.verify_message}): set relay_ca_file "
                "to the certificate that signs it")
    return f"{type(exc).__name__}: {exc}"


def target(settings: Settings) -> Relay:
    """The relay of ``settings`` (which has one)."""
    relay = settings.relay_target
    assert relay is not None
    return relay


class RelayConnection:
    """An SMTP session with the relay, opened on first use and reopened once if the
    relay hangs up between mails."""

    def __init__(self, relay: tuple[str, int] | Relay, sender: str, *,
                 settings: Settings | None = None) -> None:
        """``relay`` is host:port for plain SMTP; with ``settings``, their relay (its
        scheme, login, password and certificates) is used."""
        self.relay = target(settings) if settings is not None else Relay(*relay)
        self.settings = settings
        self.sender = sender
        self._smtp: _Client | None = None

    def _open(self) -> _Client:
        ca_file = None if self.settings is None else self.settings.relay_ca_file
        try:
            smtp = _connect(self.relay, ca_file, TIMEOUT)
        except RelayDown:
            raise
        except Exception as exc:
            raise RelayDown(_why(exc)) from None
        if self.relay.user:
            self._login(smtp)
        self._smtp = smtp
        return smtp

    def _login(self, smtp: _Client) -> None:
        user = self.relay.user
        try:
            assert self.settings is not None
            password = read_password(self.settings.relay_password,
                                     self.settings.relay_password_file, "the relay's")
            if password is None:
                raise LoginRefused("no password for the relay's login: set "
                                   "relay_password_file (or PBMSERV_RELAY_PASSWORD)")
            login_once(smtp, user, password)
        except smtplib.SMTPAuthenticationError as exc:
            smtp.close()
            said = answer_text(exc.smtp_error)
            if 400 <= exc.smtp_code < 500:  # "try later", not "wrong password"
                raise Throttled(f"{exc.smtp_code} {said}") from None
            raise LoginRefused(f"the relay refused the login of {user} ({exc.smtp_code} "
                               f"{said}): check relay_password_file, and whether the "
                               "provider wants an app password") from None
        except (SettingsError, LoginRefused) as exc:
            smtp.close()
            raise LoginRefused(str(exc)) from None
        except Exception as exc:
            smtp.close()
            raise RelayDown(_why(exc)) from None

    def send(self, data: bytes, to: str, sender: str | None = None) -> str:
        """Send one mail (from the envelope ``sender``, else the connection's); returns
        the relay's answer to it."""
        for attempt in (1, 2):
            smtp = self._smtp or self._open()
            try:
                # a local part in UTF-8 needs a relay that speaks SMTPUTF8 (RFC 6531)
                smtp.sendmail(sender or self.sender, [to], on_the_wire(data),
                              mail_options=() if to.isascii() else ("SMTPUTF8",))
                return smtp.last_answer
            except smtplib.SMTPNotSupportedError as exc:
                raise PermanentFailure(f"the relay cannot send to {to!r}: {exc}") from None
            except smtplib.SMTPRecipientsRefused as exc:
                codes = [code for code, _ in exc.recipients.values()]
                text = "; ".join(f"{c} {answer_text(m)}" for c, m in exc.recipients.values())
                if 421 in codes:
                    self.close()
                    raise Throttled(text) from None
                if all(500 <= c < 600 for c in codes):
                    raise PermanentFailure(text, codes[0], "recipient") from None
                raise TemporaryFailure(text) from None
            except smtplib.SMTPResponseException as exc:
                text = f"{exc.smtp_code} {answer_text(exc.smtp_error)}"
                if exc.smtp_code == 421 or (isinstance(exc, smtplib.SMTPSenderRefused)
                                            and 400 <= exc.smtp_code < 500):
                    self.close()
                    raise Throttled(text) from None
                if 500 <= exc.smtp_code < 600:
                    about = "sender" if isinstance(exc, smtplib.SMTPSenderRefused) else "mail"
                    raise PermanentFailure(text, exc.smtp_code, about) from None
                raise TemporaryFailure(text) from None
            except Exception as exc:
                self.close()
                if not _is_connection_error(exc) or attempt == 2:
                    raise RelayDown(f"{type(exc).__name__}: {exc}") from None
                # the relay may close a connection after some mails: reconnect once
        raise AssertionError("unreachable: the second attempt returns or raises")

    def send_nothing(self) -> None:
        """Open the session (log in) and close it: raises RelayDown if it cannot."""
        with self:
            self._open()

    def try_sender(self, sender: str) -> str | None:
        """Open the session (log in), give ``sender`` in a MAIL FROM and take it back
        (RSET): None if the relay takes mail from it, else its answer.  Raises
        RelayDown if the session cannot be had."""
        with self:
            smtp = self._open()
            try:
                code, text = smtp.mail(sender)
                if code != 250:
                    return f"{code} {answer_text(text)}"
                smtp.rset()
            except smtplib.SMTPException as exc:
                raise RelayDown(_why(exc)) from None
            except OSError as exc:
                raise RelayDown(_why(exc)) from None
            return None

    def try_recipient(self, sender: str, recipient: str) -> str | None:
        """Open the session, give ``sender`` and ``recipient`` (MAIL FROM, RCPT TO) and
        take them back (RSET): None if the relay takes mail for the recipient, else
        its answer (to the sender's MAIL FROM, if that was refused).  Raises RelayDown
        if the session cannot be had."""
        with self:
            smtp = self._open()
            try:
                code, text = smtp.mail(sender)
                if code != 250:
                    return f"{code} {answer_text(text)} (to MAIL FROM:<{sender}>)"
                code, text = smtp.rcpt(recipient)
                smtp.rset()
                if code not in (250, 251):
                    return f"{code} {answer_text(text)}"
            except smtplib.SMTPException as exc:
                raise RelayDown(_why(exc)) from None
            except OSError as exc:
                raise RelayDown(_why(exc)) from None
            return None

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


def login_once(smtp: smtplib.SMTP, user: str, password: str) -> None:
    """Log in with the best mechanism the server offers, once: SMTPAuthenticationError
    if it refuses."""
    smtp.ehlo_or_helo_if_needed()
    if not smtp.has_extn("auth"):
        raise smtplib.SMTPNotSupportedError("the relay offers no AUTH (no login)")
    offered = smtp.esmtp_features["auth"].upper().split()
    mechanism = next((m for m in MECHANISMS if m in offered), None)
    if mechanism is None:
        raise smtplib.SMTPException(f"the relay offers no login this client can use "
                                    f"({' '.join(offered)})")
    smtp.user, smtp.password = user, password
    method = getattr(smtp, "auth_" + mechanism.lower().replace("-", "_"))
    smtp.auth(mechanism, method)


def probe(relay: tuple[str, int] | Relay, ca_file: Path | None = None) -> bool:
    """Whether the relay answers: connect, greet (and start TLS where its scheme wants
    it), say goodbye.  No login: a wrong password is not tried every few seconds."""
    return check(relay, ca_file) is None


def check(relay: tuple[str, int] | Relay, ca_file: Path | None = None) -> str | None:
    """None if the relay answers as ``probe`` asks, else why not."""
    target = relay if isinstance(relay, Relay) else Relay(*relay)
    try:
        with _connect(target, ca_file, PROBE_TIMEOUT) as smtp:
            code, text = smtp.noop()
            if 200 <= code < 300:
                return None
            return f"it answered NOOP with {code} {text.decode('utf-8', 'replace')}"
    except Exception as exc:
        return _why(exc)
