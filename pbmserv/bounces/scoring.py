"""Bounces: mail of ours that did not reach its address, counted per address.

Only bounces of our own mail are counted: a DSN that came back to the signed VERP
address of one outgoing mail, or that names the Message-ID of one (pbmserv.processing.
bounces), or the relay's 5xx for the address; each against that outgoing mail's
recipient, and each outgoing mail once.  Each is a row of one kind
(``bounce_kind``): *hard* (the address is dead), *soft* (a policy refusal, a full
mailbox, any other permanent failure) or a *delay* (kept to be seen, never counted).
An address's score of each kind is its bounces of that kind within the last
``bounce_days`` days.  At ``bounce_threshold`` hard or ``soft_bounce_threshold`` soft
bounces the address is suspended: the sender sends it nothing (its mails are kept,
marked ``suppressed``) until its owner mails the server from it again, or the
administrator clears it.  Many counted bounces within an hour, from any addresses, are
a bounce storm: the administrator is told (the server's mail may be refused as a
whole), in words of ours only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
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
from pbmserv.db.status import (
    AlertKind,
    BoardStatus,
    BounceKind,
    InboundStatus,
    OutboxStatus,
    Resolution,
)
from pbmserv.service import incidents

#: this many counted bounces within STORM_WINDOW, from any addresses, are a bounce storm
STORM = 20
STORM_WINDOW = timedelta(hours=1)
_ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
_REPLY_CODE = re.compile(r"\b([45][0-9][0-9])\b")
#: the kinds that count toward a suspension and a storm
COUNTED = (BounceKind.HARD, BounceKind.SOFT)


def enhanced_status(text: str) -> str:
    """The first enhanced status code (RFC 3463, ``5.1.1``) in ``text``, or ""."""
    found = _ENHANCED.search(text)
    return found.group(0) if found else ""


def reply_code(text: str) -> int | None:
    """The first SMTP reply code (``550``) in ``text`` (a DSN's Diagnostic-Code), if any."""
    found = _REPLY_CODE.search(text)
    return int(found.group(1)) if found else None


def bounce_kind(status: str, code: int | None, *, permanent: bool = True) -> BounceKind:
    """What a failure says of the address.  Hard: the address itself is dead (5.1.x,
    no such mailbox or domain, 5.1.10 a null MX; 5.2.1 the mailbox is disabled; 5.4.4
    no route to the domain), or with no enhanced code (or the undefined 5.0.0) the
    reply 550, 551 or 553, or a permanent failure that gives no code at all (an old
    Postfix's "unknown user").  Soft: any other permanent failure (a policy refusal
    5.7.x, a full mailbox 5.2.2, the mail's form or size).  A delay: not a permanent
    failure (the mail is still tried)."""
    if not permanent:
        return BounceKind.DELAY
    if status.startswith("5.1.") or status in ("5.2.1", "5.4.4"):
        return BounceKind.HARD
    undefined = status in ("", "5.0.0")
    if undefined and (code in (550, 551, 553) or (code is None and not status)):
        return BounceKind.HARD
    return BounceKind.SOFT


@dataclass(frozen=True)
class Counted:
    """A bounce as recorded: the address, its scores now (hard and soft), whether it
    counted (a delay never does, nor a second bounce of one outgoing mail), and
    whether this bounce suspended it."""

    address: str
    kind: BounceKind
    hard: int
    soft: int
    counted: bool
    suspended_now: bool


def _score(session: Session, address: str, kind: BounceKind, since: datetime) -> int:
    return int(session.scalar(select(func.count()).select_from(Bounce).where(
        Bounce.address == address, Bounce.kind == kind, Bounce.at > since,
        Bounce.cleared_at.is_(None))) or 0)


def record_bounce(session: Session, settings: Settings, address: str, now: datetime, *,
                  source: str, kind: BounceKind = BounceKind.HARD, status: str = "",
                  detail: str = "", outbox_id: int | None = None,
                  inbound_id: int | None = None) -> Counted:
    """Record one bounce of ``address`` (the recipient of outgoing mail ``outbox_id``,
    counted once per outgoing mail; a delay once too, apart); suspend the address when
    a score reaches its threshold; open a bounce storm if counted bounces pour in."""
    address = address.strip().lower()
    detail = " ".join(detail.split())[:1000]
    counts = kind in COUNTED
    kinds = COUNTED if counts else (kind,)
    new = True
    if outbox_id is not None:
        new = session.scalar(select(Bounce.id).where(Bounce.outbox_id == outbox_id,
                                                     Bounce.kind.in_(kinds))) is None
        if counts:
            session.execute(update(OutboxMessage)
                            .where(OutboxMessage.id == outbox_id,
                                   OutboxMessage.status.in_((OutboxStatus.SENT,
                                                             OutboxStatus.FAILED,
                                                             OutboxStatus.PENDING)))
                            .values(status=OutboxStatus.BOUNCED, last_error=detail or None)
                            .execution_options(synchronize_session=False))
    if new:
        session.add(Bounce(address=address, at=now, outbox_id=outbox_id, inbound_id=inbound_id,
                           source=source, kind=kind, status=status[:16], detail=detail))
    since = now - timedelta(days=settings.bounce_days)
    hard = _score(session, address, BounceKind.HARD, since)
    soft = _score(session, address, BounceKind.SOFT, since)
    suspended_now = False
    over = hard >= settings.bounce_threshold or soft >= settings.soft_bounce_threshold
    if counts and over and session.get(MailSuspension, address) is None:
        session.add(MailSuspension(address=address, since=now,
                                   score=hard if hard >= settings.bounce_threshold else soft,
                                   reason=detail or status))
        suspended_now = True
    if new and counts:
        recent = int(session.scalar(select(func.count()).select_from(Bounce)
                                    .where(Bounce.at > now - STORM_WINDOW,
                                           Bounce.kind.in_(COUNTED))) or 0)
        if recent >= STORM:
            # the server's own words only: the address is an outgoing mail's recipient,
            # the status a code read as digits; the remote server's text stays out
            incidents.record(session, AlertKind.BOUNCE_STORM,
                             f"{recent} bounces within {_hours(STORM_WINDOW)}; the last: "
                             f"{address}" + (f" (outbox {outbox_id})" if outbox_id else "")
                             + f", {kind} bounce, status {status or 'not given'}", now,
                             item=address[:60])
    return Counted(address, kind, hard, soft, new and counts, suspended_now)


def _hours(span: timedelta) -> str:
    hours = int(span.total_seconds() // 3600)
    return "an hour" if hours == 1 else f"{hours} hours"


#: which of some (lower-cased) addresses are suspended
_SUSPENDED = select(MailSuspension.address).where(
    MailSuspension.address.in_(bindparam("addresses", expanding=True)))
#: whether one (lower-cased) address is
_IS_SUSPENDED = select(MailSuspension.address).where(
    MailSuspension.address == bindparam("address"))


def suspended_among(session: Session, addresses: Iterable[str]) -> set[str]:
    """Those of ``addresses`` (lower-cased) that are suspended."""
    wanted = {a.strip().lower() for a in addresses}
    if not wanted:
        return set()
    return set(session.scalars(_SUSPENDED, {"addresses": list(wanted)}))


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
    # every mail a player sends asks this: a look at one column (a third of the cost
    # of loading the object), which is loaded only for the rare suspended address
    if session.scalar(_IS_SUSPENDED, {"address": address}) is None:
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
    _forgive(session, address, utcnow())
    return lifted


def _forgive(session: Session, address: str, now: datetime) -> None:
    """The address's bounces no longer count toward a suspension; they are kept, so
    the count of bounces (``/metrics``) only grows."""
    session.execute(update(Bounce).where(Bounce.address == address,
                                         Bounce.cleared_at.is_(None))
                    .values(cleared_at=now).execution_options(synchronize_session=False))


def clear(session: Session, address: str | None, now: datetime | None = None) -> int:
    """Forget the bounces and lift the suspension of ``address`` (every address if
    None: a bounce storm is then over, the administrator has dealt with it); returns
    how many addresses were cleared."""
    addresses = set(session.scalars(select(Bounce.address).distinct()
                                    .where(Bounce.cleared_at.is_(None)))) | set(
        session.scalars(select(MailSuspension.address)))
    if address is not None:
        addresses &= {address.strip().lower()}
    for each in addresses:
        _forgive(session, each, now or utcnow())
        session.execute(delete(MailSuspension).where(MailSuspension.address == each))
    if address is None and now is not None:
        session.execute(update(Alert).where(Alert.kind == AlertKind.BOUNCE_STORM,
                                            Alert.closed_at.is_(None))
                        .values(closed_at=now, resolution=Resolution.CLEARED)
                        .execution_options(synchronize_session=False))
    return len(addresses)


@dataclass(frozen=True)
class AddressBounces:
    """One address's bounces, for ``pbmserv users bounces``: each kind apart."""

    address: str
    userids: list[str]
    #: hard and soft bounces within bounce_days (each toward its own threshold), and
    #: delays (never counted)
    hard: int
    soft: int
    delays: int
    last_at: datetime | None
    #: the last bounce's kind ("" when only a suspension is left) and reason
    last_kind: str
    last_reason: str
    suspended_since: datetime | None

    @property
    def score(self) -> int:
        """The bounces that count, of both kinds."""
        return self.hard + self.soft


def bounce_list(session: Session, settings: Settings, now: datetime) -> list[AddressBounces]:
    """Every address with bounces (or delays) in the window or a suspension, worst first."""
    since = now - timedelta(days=settings.bounce_days)
    scores: dict[str, dict[BounceKind, int]] = {}
    for address, kind, count in session.execute(
            select(Bounce.address, Bounce.kind, func.count())
            .where(Bounce.at > since, Bounce.cleared_at.is_(None))
            .group_by(Bounce.address, Bounce.kind)):
        scores.setdefault(address, {})[BounceKind(kind)] = int(count)
    suspended = {s.address: s for s in session.scalars(select(MailSuspension))}
    out = []
    for address in set(scores) | set(suspended):
        last = session.scalars(select(Bounce).where(Bounce.address == address,
                                                    Bounce.cleared_at.is_(None))
                               .order_by(Bounce.at.desc(), Bounce.id.desc()).limit(1)).first()
        held = suspended.get(address)
        userids = list(session.scalars(select(User.userid)
                                       .where(func.lower(User.email) == address)
                                       .order_by(User.key)))
        kinds = scores.get(address, {})
        out.append(AddressBounces(
            address, userids, kinds.get(BounceKind.HARD, 0), kinds.get(BounceKind.SOFT, 0),
            kinds.get(BounceKind.DELAY, 0),
            last.at if last else (held.since if held else None),
            str(last.kind) if last else "",
            (last.detail or last.status) if last else (held.reason if held else ""),
            held.since if held else None))
    return sorted(out, key=lambda a: (a.suspended_since is None, -a.hard, -a.soft, -a.delays,
                                      a.address))


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
    #: bounces counted (hard and soft, not delays), ever kept (forgiven ones too: it
    #: only grows) and in the last day; suspended addresses
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
        bounces=int(session.scalar(select(func.count()).select_from(Bounce)
                                   .where(Bounce.kind.in_(COUNTED))) or 0),
        bounces_last_day=int(session.scalar(select(func.count()).select_from(Bounce).where(
            Bounce.at > now - timedelta(days=1), Bounce.kind.in_(COUNTED))) or 0),
        suspended=int(session.scalar(select(func.count()).select_from(MailSuspension)) or 0),
        open_alerts=int(session.scalar(select(func.count()).select_from(Alert).where(
            Alert.closed_at.is_(None), Alert.kind != AlertKind.REPORT)) or 0),
    )


# -- probes (pbmserv.bounces.notices sends them) ----------------------------------------
#: the most probes a suspended address is sent (then only its owner's mail lifts it)
MAX_PROBES = 3
#: a probe that has not bounced this long after it was sent: the address works again
PROBE_WINDOW = timedelta(days=1)


def probes_due(session: Session, settings: Settings, now: datetime) -> list[MailSuspension]:
    """The suspended addresses to probe now: suspended (or last probed)
    ``bounce_probe_days`` ago, probed fewer than MAX_PROBES times."""
    if not settings.bounce_probe_days:
        return []
    before = now - timedelta(days=settings.bounce_probe_days)
    return list(session.scalars(select(MailSuspension).where(
        MailSuspension.probes < MAX_PROBES,
        func.coalesce(MailSuspension.probed_at, MailSuspension.since) <= before)
        .order_by(MailSuspension.since)))


def probe_ids(session: Session, addresses: Iterable[str]) -> set[int]:
    """The outbox numbers of the probes to some (suspended) addresses: sent though
    the address is suspended."""
    wanted = {a.strip().lower() for a in addresses}
    if not wanted:
        return set()
    return {number for number in session.scalars(
        select(MailSuspension.probe_outbox_id).where(MailSuspension.address.in_(wanted)))
        if number is not None}


def lift_answered(session: Session, now: datetime) -> list[Resumed]:
    """The suspended addresses whose probe went out PROBE_WINDOW ago and did not
    bounce: mailed again, as if their owner had written (``resume``)."""
    lifted = []
    for found in list(session.scalars(select(MailSuspension)
                                      .where(MailSuspension.probe_outbox_id.is_not(None)))):
        probe = session.get(OutboxMessage, found.probe_outbox_id)
        if probe is None or probe.status != OutboxStatus.SENT or probe.sent_at is None \
                or probe.sent_at > now - PROBE_WINDOW:
            continue
        bounced = session.scalar(select(Bounce.id).where(Bounce.outbox_id == probe.id)
                                 .limit(1))
        if bounced is None:
            resumed = resume(session, found.address)
            if resumed is not None:
                lifted.append(resumed)
    return lifted


def suspended_list(session: Session) -> list[tuple[MailSuspension, list[str]]]:
    """Every address no longer mailed, the longest suspended first, with the userids
    of its accounts."""
    out = []
    for found in session.scalars(select(MailSuspension).order_by(MailSuspension.since)):
        out.append((found, list(session.scalars(select(User.userid).where(
            func.lower(User.email) == found.address).order_by(User.key)))))
    return out


def suspended_since(session: Session, address: str) -> datetime | None:
    """Since when ``address`` is no longer mailed (None: it is mailed)."""
    found = session.get(MailSuspension, address.strip().lower())
    return None if found is None else found.since
