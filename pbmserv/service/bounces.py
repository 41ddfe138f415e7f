"""Bounces: mail of ours that did not reach its address, counted per address.

Each bounce (a DSN that came back to the VERP address of the mail, or the relay's 5xx
for the address) is a row; an address's score is its bounces within the last
``bounce_days`` days, each outgoing mail counted once.  At ``bounce_threshold`` the
address is suspended: the sender sends it nothing (its mails are kept, marked
``suppressed``) until its owner mails the server from it again, or the administrator
clears it.  Many bounces within an hour, from any addresses, are a bounce storm: the
administrator is told (the server's mail may be refused as a whole).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.models import (
    Alert,
    Board,
    BoardPlayer,
    Bounce,
    InboundMessage,
    MailSuspension,
    OutboxMessage,
    User,
)
from pbmserv.db.prepared import Prepared
from pbmserv.db.status import AlertKind, BoardStatus, InboundStatus, OutboxStatus
from pbmserv.service import incidents

#: this many bounces within STORM_WINDOW, from any addresses, are a bounce storm
STORM = 20
STORM_WINDOW = timedelta(hours=1)
_ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")


def enhanced_status(text: str) -> str:
    """The first enhanced status code (RFC 3463, ``5.1.1``) in ``text``, or ""."""
    found = _ENHANCED.search(text)
    return found.group(0) if found else ""


def blames_address(code: int, status: str) -> bool:
    """Whether a permanent refusal is about the address (no such mailbox, no such
    domain, mailbox disabled), not about the mail itself (its form, its size, a
    policy), nor about us (the sender refused): only those count as bounces."""
    if status:
        return status.startswith(("5.1.", "5.2.1", "5.2.0"))
    return code in (550, 551, 553)


@dataclass(frozen=True)
class Counted:
    """A bounce as counted: the address, its score now, and whether this bounce
    suspended it."""

    address: str
    score: int
    counted: bool
    suspended_now: bool


def record_bounce(session: Session, settings: Settings, address: str, now: datetime, *,
                  source: str, status: str = "", detail: str = "",
                  outbox_id: int | None = None, inbound_id: int | None = None) -> Counted:
    """Count one bounce of ``address`` (once per outgoing mail); suspend the address
    when its score reaches the threshold; open a bounce storm if bounces pour in."""
    address = address.strip().lower()
    detail = " ".join(detail.split())[:1000]
    counted = True
    if outbox_id is not None:
        counted = session.scalar(select(Bounce.id).where(Bounce.outbox_id == outbox_id)) is None
        session.execute(update(OutboxMessage)
                        .where(OutboxMessage.id == outbox_id,
                               OutboxMessage.status.in_((OutboxStatus.SENT,
                                                         OutboxStatus.FAILED,
                                                         OutboxStatus.PENDING)))
                        .values(status=OutboxStatus.BOUNCED, last_error=detail or None)
                        .execution_options(synchronize_session=False))
    if counted:
        session.add(Bounce(address=address, at=now, outbox_id=outbox_id, inbound_id=inbound_id,
                           source=source, status=status[:16], detail=detail))
        session.flush()
    score = int(session.scalar(select(func.count()).select_from(Bounce).where(
        Bounce.address == address, Bounce.at > now - timedelta(days=settings.bounce_days)))
        or 0)
    suspended_now = False
    if score >= settings.bounce_threshold and session.get(MailSuspension, address) is None:
        session.add(MailSuspension(address=address, since=now, score=score,
                                   reason=detail or status))
        session.flush()
        suspended_now = True
    if counted:
        recent = int(session.scalar(select(func.count()).select_from(Bounce)
                                    .where(Bounce.at > now - STORM_WINDOW)) or 0)
        if recent >= STORM:
            incidents.record(session, AlertKind.BOUNCE_STORM,
                             f"{recent} bounces within {_hours(STORM_WINDOW)}; the last: "
                             f"{address}: {detail or status or 'no reason given'}", now,
                             item=address[:60])
    return Counted(address, score, counted, suspended_now)


def _hours(span: timedelta) -> str:
    hours = int(span.total_seconds() // 3600)
    return "an hour" if hours == 1 else f"{hours} hours"


#: whether one (lower-cased) address is suspended
_SUSPENDED = Prepared(select(MailSuspension.address)
                      .where(MailSuspension.address == bindparam("address")))


def suspended_among(session: Session, addresses: Iterable[str]) -> set[str]:
    """Those of ``addresses`` (lower-cased) that are suspended.  One prepared look-up
    an address: the sender asks this of every round's few addresses, and a statement
    with an IN list goes through SQLAlchemy at ten times the cost."""
    wanted = {a.strip().lower() for a in addresses}
    connection = session.connection()
    return {address for address in wanted
            if _SUSPENDED.first(connection, {"address": address}) is not None}


@dataclass(frozen=True)
class Resumed:
    """A suspension lifted: since when it held, and how many mails it kept back."""

    address: str
    since: datetime
    held: int


def resume(session: Session, address: str) -> Resumed | None:
    """The owner of ``address`` mailed the server from it: it is mailed again, and its
    bounces are forgotten.  None if it was not suspended."""
    address = address.strip().lower()
    # every mail a player sends asks this: a plain row, not an ORM object (a third of
    # the cost), and the object loaded only for the rare suspended address
    if _SUSPENDED.first(session.connection(), {"address": address}) is None:
        return None
    found = session.get(MailSuspension, address)
    if found is None:
        return None
    held = int(session.scalar(select(func.count()).select_from(OutboxMessage).where(
        func.lower(OutboxMessage.to_addr) == address,
        OutboxMessage.status == OutboxStatus.SUPPRESSED,
        OutboxMessage.created_at >= found.since)) or 0)
    lifted = Resumed(address, found.since, held)
    session.delete(found)
    session.execute(delete(Bounce).where(Bounce.address == address))
    session.flush()
    return lifted


def clear(session: Session, address: str | None, now: datetime | None = None) -> int:
    """Forget the bounces and lift the suspension of ``address`` (every address if
    None: a bounce storm is then over, the administrator has dealt with it); returns
    how many addresses were cleared."""
    addresses = set(session.scalars(select(Bounce.address).distinct())) | set(
        session.scalars(select(MailSuspension.address)))
    if address is not None:
        addresses &= {address.strip().lower()}
    for each in addresses:
        session.execute(delete(Bounce).where(Bounce.address == each))
        session.execute(delete(MailSuspension).where(MailSuspension.address == each))
    if address is None and now is not None:
        session.execute(update(Alert).where(Alert.kind == AlertKind.BOUNCE_STORM,
                                            Alert.closed_at.is_(None))
                        .values(closed_at=now).execution_options(synchronize_session=False))
    return len(addresses)


@dataclass(frozen=True)
class AddressBounces:
    """One address's bounces, for ``pbmserv users bounces``."""

    address: str
    userids: list[str]
    score: int
    last_at: datetime | None
    last_reason: str
    suspended_since: datetime | None


def bounce_list(session: Session, settings: Settings, now: datetime) -> list[AddressBounces]:
    """Every address with bounces in the window or a suspension, worst first."""
    since = now - timedelta(days=settings.bounce_days)
    scores: dict[str, int] = {row[0]: int(row[1]) for row in session.execute(
        select(Bounce.address, func.count()).where(Bounce.at > since)
        .group_by(Bounce.address))}
    suspended = {s.address: s for s in session.scalars(select(MailSuspension))}
    out = []
    for address in set(scores) | set(suspended):
        last = session.scalars(select(Bounce).where(Bounce.address == address)
                               .order_by(Bounce.at.desc(), Bounce.id.desc()).limit(1)).first()
        held = suspended.get(address)
        userids = list(session.scalars(select(User.userid)
                                       .where(func.lower(User.email) == address)
                                       .order_by(User.key)))
        out.append(AddressBounces(
            address, userids, int(scores.get(address, 0)),
            last.at if last else (held.since if held else None),
            (last.detail or last.status) if last else (held.reason if held else ""),
            held.since if held else None))
    return sorted(out, key=lambda a: (a.suspended_since is None, -a.score, a.address))


def boards_waiting_for(session: Session, address: str) -> list[tuple[Board, User]]:
    """The running boards whose turn is a player of ``address``: (board, that player)."""
    address = address.strip().lower()
    out = []
    for board, user in session.execute(
            select(Board, User).join(BoardPlayer, BoardPlayer.board_id == Board.id)
            .join(User, User.id == BoardPlayer.user_id)
            .where(Board.status == BoardStatus.ACTIVE, BoardPlayer.seat == Board.to_move,
                   func.lower(User.email) == address)
            .order_by(Board.game, Board.number)).all():
        out.append((board, user))
    return out


@dataclass(frozen=True)
class ProblemCounts:
    """What went wrong with mail, as counts (for ``/metrics`` and ``status``)."""

    #: incoming mails kept as failed; outgoing mails refused for good (not bounces)
    failed_in: int
    failed_out: int
    #: outgoing mails bounced (by a DSN or the relay's 5xx), and held back (suppressed)
    bounced_out: int
    suppressed_out: int
    #: bounces counted, ever kept and in the last day; suspended addresses
    bounces: int
    bounces_last_day: int
    suspended: int
    #: incidents not over yet
    open_alerts: int


def problem_counts(session: Session, now: datetime) -> ProblemCounts:
    """The counts of failures, bounces, suspensions and open incidents, in one read."""
    by_status: dict[OutboxStatus, int] = {row[0]: int(row[1]) for row in session.execute(
        select(OutboxMessage.status, func.count())
        .where(OutboxMessage.status.in_((OutboxStatus.FAILED, OutboxStatus.BOUNCED,
                                         OutboxStatus.SUPPRESSED)))
        .group_by(OutboxMessage.status))}
    return ProblemCounts(
        failed_in=int(session.scalar(select(func.count()).select_from(InboundMessage)
                                     .where(InboundMessage.status == InboundStatus.FAILED))
                      or 0),
        failed_out=int(by_status.get(OutboxStatus.FAILED, 0)),
        bounced_out=int(by_status.get(OutboxStatus.BOUNCED, 0)),
        suppressed_out=int(by_status.get(OutboxStatus.SUPPRESSED, 0)),
        bounces=int(session.scalar(select(func.count()).select_from(Bounce)) or 0),
        bounces_last_day=int(session.scalar(select(func.count()).select_from(Bounce)
                                            .where(Bounce.at > now - timedelta(days=1))) or 0),
        suspended=int(session.scalar(select(func.count()).select_from(MailSuspension)) or 0),
        open_alerts=int(session.scalar(select(func.count()).select_from(Alert).where(
            Alert.closed_at.is_(None), Alert.kind != AlertKind.REPORT)) or 0),
    )
