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
import grp
import os
import socket
import stat
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller, UnixSocketController
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP, Envelope, Session

from pbmserv.config import Settings, SettingsError
from pbmserv.connections import ConnectionCap, quiet_accept_errors
from pbmserv.intake.smtp import (
    TOO_BIG,
    CachedAddresses,
    CappedSession,
    IntakeHandler,
    PlainRefusals,
    content_of,
    working,
)

#: the most the protocol reads of one mail, whatever the settings
HARD_LIMIT = 64 * 1024 * 1024


class LmtpHandler(IntakeHandler):
    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = content_of(envelope)
        if len(raw) > self.settings.max_message_size:
            answer = TOO_BIG.format(self.settings.max_message_size)
        else:
            with working(server):
                answer = await self.store(raw, envelope)
        return "\r\n".join(answer for _ in envelope.rcpt_tos)


class IntakeLMTP(CachedAddresses, PlainRefusals, LMTP):
    """aiosmtpd's LMTP server, its addresses read once (CachedAddresses), its
    refusals plain and said for each recipient (PlainRefusals)."""

    per_recipient = True


class CappedLMTP(CappedSession, IntakeLMTP):
    """The LMTP listener's sessions, counted with the SMTP listener's."""


class _LmtpFactory:
    handler: Any
    SMTP_kwargs: dict[str, Any]
    cap: ConnectionCap

    def factory(self) -> LMTP:
        session = CappedLMTP(self.handler, **self.SMTP_kwargs)
        session.cap = self.cap
        return session


class LmtpController(_LmtpFactory, Controller):
    """LMTP on host:port."""


class LmtpSocketController(_LmtpFactory, UnixSocketController):
    """LMTP on a Unix socket, of the settings' mode and group (the MTA's user must be
    able to connect: Postfix's lmtp client runs as user postfix)."""

    mode: int = 0o660
    #: the group's name and id (-1: the process's own)
    group: str | None = None
    gid: int = -1

    def start(self) -> None:
        path = Path(self.unix_socket)
        _remove_stale(path)
        super().start()
        try:
            if self.gid != -1:
                os.chown(path, -1, self.gid)
            os.chmod(path, self.mode)
        except OSError as exc:
            self.stop()
            raise SettingsError(
                f"lmtp_socket_group: cannot give {path} to group {self.group}: "
                f"{exc.strerror} (the service's user must be a member of it: "
                f"adduser pbmserv {self.group}, or SupplementaryGroups= in its unit)"
            ) from None

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


def make_lmtp_controller(handler: LmtpHandler, where: str, settings: Settings,
                         cap: ConnectionCap) -> LmtpController | LmtpSocketController:
    """An LMTP listener on ``where``: host:port, or the path of a Unix socket; its
    sessions count against ``cap``."""
    controller = _lmtp_controller(handler, where, settings)
    controller.cap = cap
    quiet_accept_errors(controller.loop)
    return controller


def _lmtp_controller(handler: LmtpHandler, where: str,
                     settings: Settings) -> LmtpController | LmtpSocketController:
    kwargs: dict[str, Any] = {
        # the settings' limit is the handler's, to answer once per recipient
        "data_size_limit": max(HARD_LIMIT, settings.max_message_size),
        "enable_SMTPUTF8": True,
        "decode_data": False,
        "ident": f"{settings.server_name} LMTP",
        # silence is timed by the cap (pbmserv.connections), which says so (421)
        "timeout": settings.connection_max_seconds,
    }
    if where.startswith("/"):
        gid = -1
        if settings.lmtp_socket_group is not None:
            try:
                gid = grp.getgrnam(settings.lmtp_socket_group).gr_gid
            except KeyError:
                raise SettingsError("lmtp_socket_group: there is no group "
                                    f"{settings.lmtp_socket_group!r} on this host") from None
        Path(where).parent.mkdir(parents=True, exist_ok=True)
        controller = LmtpSocketController(handler, unix_socket=where,
                                          server_hostname=settings.domain, **kwargs)
        controller.mode = settings.lmtp_socket_mode
        controller.group, controller.gid = settings.lmtp_socket_group, gid
        return controller
    host, _, port = where.rpartition(":")
    return LmtpController(handler, hostname=host.strip("[]"), port=int(port),
                          server_hostname=settings.domain, **kwargs)
