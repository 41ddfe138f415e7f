"""How the server stands, as far as its database tells: the one computation behind
``pbmserv status`` (pbmserv.operations) and ``/healthz`` (pbmserv.web).

Unhealthy: the database cannot be read or its schema is not this code's; stored mail
waits longer than ``inbox_late``; outgoing mail is due for longer than
``outbox_late``; the IMAP reader cannot read its mailbox, or its heartbeat stopped
(``serve`` is not running, or its reader thread is stuck); the relay has refused or
deferred every mail it was given for longer than ``health_mail_age``, or outgoing
mail has waited longer than that (a relay that does not answer, a 4xx that goes on)
unless a ``daily_send_limit`` holds it.  Failed mail
and a bounce storm need a person, not a restart (``attention``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pbmserv.bounces.scoring import problem_counts
from pbmserv.config import Settings, relay_url
from pbmserv.db import migrate
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapState, RelayState
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, InboundStatus, OutboxStatus
from pbmserv.reads.queues import due_by, pending_since, queues, sent_since
from pbmserv.render import duration
from pbmserv.service import incidents

#: mail stored this long ago and still not processed: nothing is processing it
INBOX_LATE = incidents.INBOX_LATE
#: outgoing mail due this long ago and still not sent: nothing is sending it
OUTBOX_LATE = incidents.OUTBOX_LATE
#: the default of ``health_mail_age``
MAIL_AGE = timedelta(minutes=5)
#: the default of ``imap_keepalive``
KEEPALIVE = timedelta(seconds=60)
#: beyond its keepalive, how long a reader may take to beat again (a command waiting
#: for a slow server's answer) before its heartbeat counts as stopped
BEAT_GRACE = timedelta(seconds=90)
#: ``pbmserv status`` exits with these: the server is down (or its database, or mail
#: is not moving), or it runs but something waits for a person
EXIT_DOWN = 1
EXIT_ATTENTION = 3


# -- status -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Status:
    """How the server stands, as far as its database tells."""

    #: the database's schema revision, and the one this code needs
    revision: str | None = None
    head: str = ""
    #: mails waiting to be processed, and the age of the oldest
    waiting: int = 0
    oldest_waiting: timedelta | None = None
    #: mails kept as failed (a bug while processing them): for the administrator
    failed_in: int = 0
    #: outgoing mails not yet sent, the age of the oldest, and how many of them are due
    #: for longer than ``OUTBOX_LATE`` (nobody sends them)
    pending: int = 0
    oldest_pending: timedelta | None = None
    overdue: int = 0
    #: outgoing mails the relay refused for good
    failed_out: int = 0
    #: what is wrong, in words; none: healthy
    problems: list[str] = field(default_factory=list)
    #: what waits for a person (the server itself runs), in words
    attention: list[str] = field(default_factory=list)
    #: addresses no longer mailed because they bounce
    suspended: int = 0
    #: whether the database answered, and whether the queues were counted
    reachable: bool = True
    counted: bool = False
    #: how the IMAP intake stands, when one is set ("" when none is): its reader and
    #: heartbeat
    imap: str = ""
    #: how the relay stands, when one is set and has been tried
    relay: str = ""
    #: how the daily sending limit stands, when one is set
    sending: str = ""

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        """0: all well; EXIT_DOWN: unhealthy; EXIT_ATTENTION: healthy, but something
        needs a person."""
        return EXIT_DOWN if self.problems else EXIT_ATTENTION if self.attention else 0


def _age(now: datetime, then: datetime | None) -> timedelta | None:
    return None if then is None else max(now - then, timedelta(0))


def status(db: Database, now: datetime | None = None, *, inbox_late: timedelta = INBOX_LATE,
           outbox_late: timedelta = OUTBOX_LATE, mailbox: str | None = None,
           daily_send_limit: int = 0, keepalive: timedelta = KEEPALIVE,
           relay: str | None = None, mail_age: timedelta = MAIL_AGE) -> Status:
    """The server's health (see the module's docstring): ``mailbox`` the IMAP mailbox
    (user@host/folder) whose reader beats at least every ``keepalive``, ``relay`` the
    relay's URL.  Mail held back by a ``daily_send_limit`` that is reached is waiting
    by design, not overdue."""
    now = now or utcnow()
    head = migrate.head()
    try:
        revision = migrate.current(db)
    except Exception as exc:
        return Status(head=head, problems=[f"database: {describe(exc, db.url)}"],
                      reachable=False)
    if revision != head:
        try:
            migrate.check(db)
        except Exception as exc:
            return Status(revision, head, problems=[describe(exc, db.url)])
    with db.reading() as session:
        state = queues(session)
        waiting, oldest_in = state.waiting, state.oldest_waiting
        failed_in = state.inbox[InboundStatus.FAILED]
        pending, oldest_out = state.pending, state.oldest_pending
        overdue = due_by(session, now - outbox_late)
        failed_out = state.outbox[OutboxStatus.FAILED]
        stale, stale_error = pending_since(session, now - mail_age)
        counts = problem_counts(session, now)
        open_alerts = incidents.open_alerts(session)
        storms = [a for a in open_alerts if a.kind == AlertKind.BOUNCE_STORM]
        unreachable = [a for a in open_alerts if a.kind == AlertKind.ADMIN_UNREACHABLE]
        imap = None if mailbox is None else session.get(ImapState, mailbox)
        relay_row = None if relay is None else session.get(RelayState, relay)
        sent_today = 0 if not daily_send_limit else sent_since(
            session, now - timedelta(hours=24))
    imap_text, imap_problems = _reader(mailbox, imap, now, keepalive)
    relay_text, relay_problem = _relay(relay, relay_row, now, mail_age)
    capped = bool(daily_send_limit) and sent_today >= daily_send_limit
    sending = ""
    if capped:
        sending = (f"daily_send_limit reached: {sent_today} mails sent in the last 24 hours; "
                   f"{pending or 0} wait until older ones are a day old")
    elif daily_send_limit:
        sending = f"{sent_today} of daily_send_limit {daily_send_limit} sent in the last 24 hours"
    result = Status(revision, head, waiting, _age(now, oldest_in), failed_in or 0, pending,
                    _age(now, oldest_out), overdue or 0, failed_out or 0, counted=True,
                    imap=imap_text, relay=relay_text, sending=sending,
                    suspended=counts.suspended)
    if failed_in:
        result.attention.append(f"{failed_in} incoming mail(s) failed: 'pbmserv inbox list "
                                "--status failed', then 'pbmserv inbox replay --all-failed'")
    if failed_out:
        result.attention.append(f"{failed_out} outgoing mail(s) refused for good: 'pbmserv "
                                "outbox list --status failed', then 'pbmserv outbox retry "
                                "--all' or 'pbmserv outbox discard ID'")
    for alert in unreachable:
        result.attention.append(
            f"the administrator cannot be reached: mail to the admin address was refused "
            f"or bounced since {alert.opened_at:%Y-%m-%d %H:%M} UTC ({alert.last_detail}); "
            f"'pbmserv alerts show {alert.id}', 'pbmserv config check', then 'pbmserv outbox "
            "retry --all'")
    for storm in storms:
        result.attention.append(f"a bounce storm since {storm.opened_at:%Y-%m-%d %H:%M} UTC "
                                f"({storm.count} bounces): 'pbmserv users bounces'")
    if result.oldest_waiting is not None and result.oldest_waiting > inbox_late:
        result.problems.append(
            f"stored mail is not being processed: the oldest waits since "
            f"{oldest_in:%Y-%m-%d %H:%M} UTC (is 'pbmserv serve' or 'pbmserv work --loop' "
            "running?)")
    result.problems.extend(imap_problems)
    if relay_problem:
        result.problems.append(relay_problem)
    if stale and not capped and not relay_problem and not result.overdue:
        result.problems.append(
            f"outgoing mail waits: {stale} mail(s) made more than "
            f"{int(mail_age.total_seconds())} s ago (health_mail_age) not sent yet, the "
            f"oldest since {oldest_out:%Y-%m-%d %H:%M} UTC"
            + (f"; a last error: {' '.join(stale_error.split())[:300]}" if stale_error else "")
            + " ('pbmserv outbox list')")
    if result.overdue and not capped:
        result.problems.append(
            f"outgoing mail is not going out: {result.overdue} mail(s) due for more than "
            f"{int(outbox_late.total_seconds() // 60)} minutes (is the relay down, or "
            "nothing running that sends? 'pbmserv outbox list' shows the last error)")
    return result

def status_of(db: Database, settings: Settings, now: datetime | None = None, *,
              inbox_late: timedelta = INBOX_LATE,
              outbox_late: timedelta = OUTBOX_LATE) -> Status:
    """``status`` with what ``settings`` name: the mailbox, the relay, the limits."""
    return status(db, now, inbox_late=inbox_late, outbox_late=outbox_late,
                  mailbox=None if settings.imap is None else str(settings.imap),
                  daily_send_limit=settings.daily_send_limit,
                  keepalive=timedelta(seconds=settings.imap_keepalive),
                  relay=None if settings.relay is None else relay_url(settings),
                  mail_age=timedelta(seconds=settings.health_mail_age))


def _ago(now: datetime, then: datetime) -> str:
    seconds = int(max((now - then).total_seconds(), 0))
    return f"{seconds} s ago" if seconds < 120 else f"{duration(seconds)} ago"


def _reader(mailbox: str | None, state: ImapState | None, now: datetime,
            keepalive: timedelta) -> tuple[str, list[str]]:
    """The IMAP line of the status, and its problems."""
    if mailbox is None:
        return "", []
    if state is None or state.beat_at is None:
        return (f"{mailbox}: never read",
                [f"IMAP {mailbox}: never read (is 'pbmserv serve' running?)"])
    problems = [f"IMAP {mailbox}: {state.problem}"] if state.problem else []
    text = (f"{mailbox}: cannot be read since {state.since:%Y-%m-%d %H:%M} UTC"
            if state.problem else f"{mailbox}: read since {state.since:%Y-%m-%d %H:%M} UTC, "
            + ("waiting with IDLE" if state.idle else "polled"))
    if state.reader is None:
        problems.append(f"IMAP {mailbox}: not read since {state.beat_at:%Y-%m-%d %H:%M} UTC, "
                        "when its reader stopped (is 'pbmserv serve' running?)")
        return (f"{text}; its reader stopped at {state.beat_at:%Y-%m-%d %H:%M:%S} UTC",
                problems)
    text += (f"; reader {state.reader}, heartbeat {_ago(now, state.beat_at)} "
             f"({state.beat_at:%Y-%m-%d %H:%M:%S} UTC)")
    if now - state.beat_at > keepalive + BEAT_GRACE:
        problems.append(f"IMAP {mailbox}: its reader ({state.reader}) has not beaten since "
                        f"{state.beat_at:%Y-%m-%d %H:%M} UTC, and beats every "
                        f"{int(keepalive.total_seconds())} s (is 'pbmserv serve' running, "
                        "or stuck?)")
        text += ": stopped"
    return text, problems


def _relay(relay: str | None, state: RelayState | None, now: datetime,
           mail_age: timedelta) -> tuple[str, str]:
    """The relay line of the status, and the problem ("" if none)."""
    if relay is None or state is None:
        return "", ""
    if state.failing_since is None:
        last = ("" if state.last_ok_at is None
                else f", the last at {state.last_ok_at:%Y-%m-%d %H:%M} UTC")
        return f"{relay}: taking mail{last}", ""
    answer = state.last_answer or "no answer"
    text = (f"{relay}: nothing taken since {state.failing_since:%Y-%m-%d %H:%M:%S} UTC; "
            f"its last answer: {answer}")
    if state.retry_at is not None and state.retry_at > now:
        text += f"; no mail tried before {state.retry_at:%H:%M:%S} UTC"
    if now - state.failing_since <= mail_age:
        return text, ""
    return text, (f"the relay {relay} has refused or deferred every mail since "
                  f"{state.failing_since:%Y-%m-%d %H:%M} UTC (longer than health_mail_age, "
                  f"{int(mail_age.total_seconds())} s); its last answer: {answer}")


