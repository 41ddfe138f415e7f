"""Prometheus metrics of the server, read from the database at each scrape
(``/metrics``): the queues (how many mails in each state, the age of the oldest
waiting), and totals of mail in and out.

Every number comes from the database, so it is the same whichever process serves it
and survives restarts.  The totals are the highest numbers given so far (inbox and
outbox numbers only grow; a purge does not lower them).  When the database does not
answer, ``pbmserv_database_up`` is 0 and nothing else is reported.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from sqlalchemy import select

from pbmserv.bounces.scoring import problem_counts
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapState, RelayState
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, InboundStatus, OutboxStatus
from pbmserv.reads.queues import due_by, queues
from pbmserv.service.incidents import open_by_kind

log = logging.getLogger("pbmserv.web")


def _seconds(now: datetime, then: datetime | None) -> float:
    return 0.0 if then is None else max((now - then).total_seconds(), 0.0)


class ServerCollector(Collector):
    """The server's metrics, read in one read-only session per scrape."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("pbmserv_database_up",
                               "1 if the database answered this scrape, else 0")
        try:
            metrics = list(self._read())
        except Exception as exc:
            log.warning("metrics: the database does not answer: %s",
                        describe(exc, self.db.url))
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from metrics

    def _read(self) -> Iterator[Metric]:
        now = utcnow()
        with self.db.reading() as session:
            state = queues(session)
            due = due_by(session, now)
            problems = problem_counts(session, now)
            incidents = open_by_kind(session)
            beats = session.execute(select(ImapState.mailbox, ImapState.beat_at,
                                           ImapState.reader)).all()
            relays = session.execute(select(RelayState.relay,
                                            RelayState.failing_since)).all()
        stored = GaugeMetricFamily("pbmserv_inbox_messages",
                                   "Stored incoming mails by status (failed: a person must "
                                   "look; new: waiting to be processed)", labels=["status"])
        for status in InboundStatus:
            stored.add_metric([status.value], state.inbox[status])
        yield stored
        going = GaugeMetricFamily("pbmserv_outbox_messages",
                                  "Outgoing mails by status (failed: refused for good by the "
                                  "relay; pending: not sent yet)", labels=["status"])
        for out_status in OutboxStatus:
            going.add_metric([out_status.value], state.outbox[out_status])
        yield going
        yield GaugeMetricFamily("pbmserv_inbox_oldest_waiting_seconds",
                                "Age of the oldest stored mail waiting to be processed (0: "
                                "none waits)", value=_seconds(now, state.oldest_waiting))
        yield GaugeMetricFamily("pbmserv_outbox_oldest_pending_seconds",
                                "Age of the oldest outgoing mail not sent yet (0: none)",
                                value=_seconds(now, state.oldest_pending))
        yield GaugeMetricFamily("pbmserv_outbox_due_messages",
                                "Outgoing mails due now (pending, their back-off over)",
                                value=due)
        yield GaugeMetricFamily("pbmserv_bounces_last_day",
                                "Bounces counted in the last 24 hours (DSNs that came back "
                                "and the relay's 5xx about an address; forgiven ones too)",
                                value=problems.bounces_last_day)
        yield CounterMetricFamily("pbmserv_bounces",
                                  "Bounces counted since the database was made (hard and "
                                  "soft; forgiven ones too: it only grows)",
                                  value=problems.bounces)
        yield GaugeMetricFamily("pbmserv_suspended_addresses",
                                "Addresses no longer mailed because they bounce",
                                value=problems.suspended)
        yield GaugeMetricFamily("pbmserv_open_alerts",
                                "Incidents the administrator was (or is about to be) told of "
                                "that are not over", value=problems.open_alerts)
        by_kind = GaugeMetricFamily("pbmserv_open_incidents",
                                    "Incidents not over, by kind (admin-unreachable: mail to "
                                    "the administrator was refused or bounced)",
                                    labels=["kind"])
        for kind in AlertKind:
            if kind != AlertKind.REPORT:
                by_kind.add_metric([kind.value], incidents.get(kind, 0))
        yield by_kind
        heartbeat = GaugeMetricFamily("pbmserv_imap_heartbeat_age_seconds",
                                      "Seconds since the IMAP reader of a mailbox last beat "
                                      "(it beats at least every imap_keepalive seconds while "
                                      "serve reads the mailbox)", labels=["mailbox"])
        reading = GaugeMetricFamily("pbmserv_imap_reading",
                                    "1 while a serve holds the mailbox to read it, 0 once "
                                    "its reader stopped", labels=["mailbox"])
        for mailbox, beat_at, reader in beats:
            if beat_at is not None:
                heartbeat.add_metric([mailbox], _seconds(now, beat_at))
                reading.add_metric([mailbox], 0 if reader is None else 1)
        yield heartbeat
        yield reading
        failing = GaugeMetricFamily("pbmserv_relay_failing_seconds",
                                    "Seconds since the relay took no mail it was given: it "
                                    "refused or deferred every one (0: it takes mail)",
                                    labels=["relay"])
        for relay, since in relays:
            failing.add_metric([relay], _seconds(now, since))
        yield failing
        yield CounterMetricFamily("pbmserv_mails_received",
                                  "Mails stored since the database was made (the highest "
                                  "inbox number)", value=state.received)
        yield CounterMetricFamily("pbmserv_mails_queued",
                                  "Mails queued to send since the database was made (the "
                                  "highest outbox number)", value=state.queued)


def registry_for(db: Database) -> CollectorRegistry:
    """A registry of the server's metrics alone (no process metrics: the pages' process
    is not the server's)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServerCollector(db))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The metrics in Prometheus's text format."""
    return generate_latest(registry)
