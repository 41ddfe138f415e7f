"""Bounces count only when they are ours: a stranger who forges bounces naming a player
(with a null sender, to the game address or to a bounce address with a wrong
signature, by the dozen) suspends nobody and raises no bounce storm; a bounce of a mail
we sent still counts, found by its bounce address or by its Message-ID.  Sent over a
real SMTP session to the real listener and worker, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import smtplib
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Alert, Bounce, InboundMessage, MailSuspension, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.server import Server
from pbmserv.timers import run_alerts
from tests.conftest import Mailer, free_port, make_mail
from tests.dsns import Group, dsn
from tests.test_bounces import cli, sent_to

#: what a stranger writes into the reports, hoping the administrator reads it
BAIT = "URGENT call +1-555-0100 or visit http://evil.example/reset"


def processed(db: Database, stored: int, limit: float = 30.0) -> list[InboundMessage]:
    """The stored mails once ``stored`` of them are stored and none waits."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with db.reading() as s:
            rows = list(s.scalars(select(InboundMessage).order_by(InboundMessage.id)))
        if len(rows) >= stored and all(r.status != InboundStatus.NEW for r in rows):
            return rows
        time.sleep(0.05)
    raise AssertionError(f"{stored} mails were not all processed in {limit} s")


def forged_bounces(bad_verp: str) -> list[tuple[str, str, bytes]]:
    """(envelope sender, recipient, mail) of every forgery tried: 26 reports naming bob."""
    bob = Group("bob@example.org", diagnostic=f"550 5.1.1 {BAIT}")
    out = [("<>", "pbmserv@localhost", dsn("pbmserv@localhost", [bob])) for _ in range(3)]
    out += [("<>", bad_verp, dsn(bad_verp, [bob])) for _ in range(3)]
    # a Message-ID that is no mail of ours, in the returned header
    out += [("<>", "pbmserv@localhost",
             dsn("pbmserv@localhost", [bob], f"<forged{n}@localhost>")) for n in range(17)]
    # a bounce by its form alone: a report from a real-looking sender, a Mailer-Daemon
    # From with no report at all
    out.append(("postmaster@evil.example", "pbmserv@localhost",
                dsn("pbmserv@localhost", [bob])))
    out.append(("mailer-daemon@evil.example", "pbmserv@localhost", make_mail(
        "Undeliverable", f"<bob@example.org>: unknown user. {BAIT}",
        sender="MAILER-DAEMON@evil.example")))
    out.append(("<>", "pbmserv@localhost", dsn("pbmserv@localhost", [
        Group("bob@example.org", "5.1.1", original="bob@example.org"),
        Group("alice@example.org", "5.1.1")])))
    return out


def check_forged_bounces_count_for_nothing(db: Database, settings: Settings) -> None:
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob")
    mailer.send("honeydonuts move 101 alice pw-alice a1-b1#1")  # bob is to move
    mailer.send("help", sender="bob@example.org")
    mails = sent_to(db, settings, "bob@example.org")
    (first, verp, _), (second, _, second_id) = mails[:2]
    bad_verp = re.sub(r"-[a-z2-7]{16}@", "-abcdefghijklmnop@", verp)
    assert bad_verp != verp
    with db.reading() as s:
        before = s.scalar(select(func.count()).select_from(InboundMessage)) or 0
    forgeries = forged_bounces(bad_verp)

    server = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    server.start()
    try:
        with smtplib.SMTP(server.controller.hostname, server.controller.port,
                          timeout=10) as smtp:
            for envelope, to, raw in forgeries:
                assert smtp.sendmail(envelope, [to], raw) == {}
            rows = processed(db, before + len(forgeries))[before:]
            # nothing was counted against anyone, no storm, no mail to anyone
            with db.reading() as s:
                assert s.scalar(select(Bounce)) is None
                assert s.scalar(select(MailSuspension)) is None
                assert s.scalar(select(Alert)) is None
                assert s.scalar(select(OutboxMessage).where(
                    OutboxMessage.inbound_id.in_([r.id for r in rows]))) is None
            assert [(r.status, r.error) for r in rows] == [
                (InboundStatus.IGNORED, "bounce not counted: " + why) for why in
                ["it came to no bounce address and names no Message-ID of a mail we sent"] * 3
                + ["a bounce address with a wrong signature"] * 3
                + ["it came to no bounce address and names no Message-ID of a mail we sent"]
                * 20]
            assert run_alerts(db, settings, utcnow() + timedelta(minutes=2)) == 0
            listed = cli(settings, "inbox", "list", "--limit", "3").output.splitlines()
            assert len(listed) == 3 and all(
                " ignored  " in line and line.endswith(
                    "  [bounce not counted: it came to no bounce address and names no "
                    "Message-ID of a mail we sent]") for line in listed), listed
            assert cli(settings, "users", "bounces").output == "no address bounces\n"

            # the bounces of mail we sent count: by its bounce address (a report that
            # names alice too counts for bob alone), and by its Message-ID
            smtp.sendmail("<>", [verp], dsn(verp, [Group("bob@example.org"),
                                                   Group("alice@example.org")]))
            smtp.sendmail("<>", ["pbmserv@localhost"],
                          dsn("pbmserv@localhost", [Group("bob@example.org")], second_id))
            rows = processed(db, before + len(forgeries) + 2)[-2:]
    finally:
        server.stop()
    assert [(r.status, r.error) for r in rows] == [
        (InboundStatus.DONE, f"bounce: bob@example.org (outbox {number}): smtp; 550 5.1.1 "
         f"<bob@example.org>: as the server said; {n} of 3 hard bounces (the address)")
        for number, n in ((first, 1), (second, 2))]
    with db.reading() as s:
        assert sorted((b.address, b.outbox_id) for b in s.scalars(select(Bounce))) == [
            ("bob@example.org", first), ("bob@example.org", second)]
        assert [s.get(OutboxMessage, n).status for n in (first, second)] == [  # type: ignore[union-attr]
            OutboxStatus.BOUNCED, OutboxStatus.BOUNCED]
        assert s.scalar(select(MailSuspension)) is None and s.scalar(select(Alert)) is None
    assert cli(settings, "users", "bounces").output.startswith(
        "bob@example.org (bob): mailed; within 7 days 2 of 3 hard, 0 of 5 soft, 0 delays ")


def test_forged_bounces_count_for_nothing(db: Database, settings: Settings) -> None:
    check_forged_bounces_count_for_nothing(db, settings)


@pytest.mark.postgres
def test_forged_bounces_count_for_nothing_on_postgres(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    db = Database(pg_url)
    try:
        check_forged_bounces_count_for_nothing(db, settings)
    finally:
        db.dispose()
