"""The LMTP edge, for an MTA that delivers to pbmserv (Postfix's ``lmtp:`` transport).

The same handler as SMTP (refuse what is not ours at RCPT, store before answering),
but LMTP answers DATA once per accepted recipient.  A mail for two of the game
addresses is stored once, and both recipients get that answer.  The size limit is
checked here, not by the protocol, so that a mail too large gets its permanent
refusal once per recipient too (the protocol's limit, far above it, only bounds
memory).  It listens on host:port or on a Unix socket.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller, UnixSocketController
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP, Envelope, Session

from pbmserv.config import Settings
from pbmserv.intake.smtp import IntakeHandler, content_of

TOO_BIG = "552 5.3.4 Message too big for this server (at most {} bytes)"
#: the most the protocol reads of one mail, whatever the settings
HARD_LIMIT = 64 * 1024 * 1024
#: the mode of the Unix socket: the MTA's user must be able to connect
SOCKET_MODE = 0o660


class LmtpHandler(IntakeHandler):
    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = content_of(envelope)
        if len(raw) > self.settings.max_message_size:
            answer = TOO_BIG.format(self.settings.max_message_size)
        else:
            answer = await self.store(raw, envelope)
        return "\r\n".join(answer for _ in envelope.rcpt_tos)


class _LmtpFactory:
    handler: Any
    SMTP_kwargs: dict[str, Any]

    def factory(self) -> LMTP:
        return LMTP(self.handler, **self.SMTP_kwargs)


class LmtpController(_LmtpFactory, Controller):
    """LMTP on host:port."""


class LmtpSocketController(_LmtpFactory, UnixSocketController):
    """LMTP on a Unix socket."""

    def start(self) -> None:
        path = Path(self.unix_socket)
        _remove_stale(path)
        super().start()
        os.chmod(path, SOCKET_MODE)

    def stop(self, *args: Any, **kwargs: Any) -> None:
        super().stop(*args, **kwargs)
        with contextlib.suppress(FileNotFoundError):
            Path(self.unix_socket).unlink()


def _remove_stale(path: Path) -> None:
    """Remove a socket left by a process that died; refuse one that is in use."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()
            return
    raise OSError(98, "Address already in use", str(path))


def make_lmtp_controller(handler: LmtpHandler, where: str,
                         settings: Settings) -> LmtpController | LmtpSocketController:
    """An LMTP listener on ``where``: host:port, or the path of a Unix socket."""
    kwargs: dict[str, Any] = {
        # the settings' limit is the handler's, to answer once per recipient
        "data_size_limit": max(HARD_LIMIT, settings.max_message_size),
        "enable_SMTPUTF8": True,
        "decode_data": False,
        "ident": f"{settings.server_name} LMTP",
    }
    if where.startswith("/"):
        Path(where).parent.mkdir(parents=True, exist_ok=True)
        return LmtpSocketController(handler, unix_socket=where,
                                    server_hostname=settings.domain, **kwargs)
    host, _, port = where.rpartition(":")
    return LmtpController(handler, hostname=host.strip("[]"), port=int(port),
                          server_hostname=settings.domain, **kwargs)
