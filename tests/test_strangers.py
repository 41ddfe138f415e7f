"""One stranger's mail reaches few and costs nobody an answer they did not want.

Mail to others than the sender is capped per incoming mail and per sender an hour,
and what is over is refused in the sender's reply; every limit on an address counts
it without its +tag and case; a reset is linked to the mail that asked for it.
Strangers' noise (spam our mail server marked, mail failing its SPF/DKIM/DMARC
checks, programs' mail without RFC 3834's marks) is neither run nor answered; a
stranger's mail with no command is answered once a day; one address gets a handful
of answers a day that carry nothing out; answers never go to a third party named in
Reply-To.  The test mails are written here, in the shapes of real ones.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, InboundMessage, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.mail.addresses import address_key
from pbmserv.notifications.held import fold_held
from pbmserv.service.throttle import sender_key, throttled
from tests.conftest import Mailer, make_mail


def flat(text: str) -> str:
    return " ".join(text.split())


def sent_to_others(db: Database, inbound: int, sender: str) -> list[OutboxMessage]:
    with db.reading() as s:
        return [m for m in s.scalars(select(OutboxMessage)
                                     .where(OutboxMessage.inbound_id == inbound))
                if address_key(m.to_addr) != address_key(sender)]


def last_inbound(db: Database) -> InboundMessage:
    with db.reading() as s:
        row = s.scalar(select(InboundMessage).order_by(InboundMessage.id.desc()).limit(1))
        assert row is not None
        return row


def age_outbox(db: Database, hours: float) -> None:
    """Everything queued so far as if it had been queued ``hours`` earlier."""
    with db.transaction() as s:
        for mail in s.scalars(select(OutboxMessage)):
            mail.created_at -= timedelta(hours=hours)


# -- mail to others, per mail and per hour ---------------------------------------------
def test_fifty_resets_in_one_mail_mail_three_players(mailer: Mailer, db: Database) -> None:
    """The issue's 'multiple' mail of 'reset pNN' lines: three codes go out (each linked
    to the mail that asked), the rest are refused in the reply, in one sentence."""
    players = [f"p{n}" for n in range(6)]
    mailer.signup(*players)
    out = mailer.send("multiple", "\n".join(f"reset {p}" for p in players),
                      sender="mallory@example.net")
    inbound = last_inbound(db).id
    codes = [m for m in out if "code to reset" in m.subject]
    assert sorted(m.to_addr for m in codes) == [f"p{n}@example.org" for n in range(3)]
    assert {m.inbound_id for m in codes} == {inbound}
    [reply] = [m for m in out if m.in_reply_to]
    text = flat(reply.body)
    assert text.count("ERROR: not done: it would mail someone other than you, and one mail "
                      "may make at most 3 mails to others (3 made by this one already); "
                      "nothing was sent for this line. Send it again in a mail of its own"
                      ) == 1
    assert "(and 2 more lines of this mail refused in the same words)" in text
    # a line refused so is not acted on: no code was made for p3 (it may ask at once)
    out = mailer.send("reset p3", sender="p3@example.org")
    assert [m.to_addr for m in out if "code to reset" in m.subject] == ["p3@example.org"]


def test_mails_to_others_an_hour_whatever_the_tag(db: Database, settings: Settings) -> None:
    mailer = Mailer(db, replace(settings, mails_to_others_per_mail=3,
                                mails_to_others_per_hour=4))
    players = [f"p{n}" for n in range(6)]
    mailer.signup(*players)
    mailer.send("multiple", "reset p0\nreset p1\nreset p2", sender="rv+1@example.net")
    out = mailer.send("multiple", "reset p3\nreset p4", sender="RV+2@Example.net")
    assert [m.to_addr for m in out if "code to reset" in m.subject] == ["p3@example.org"]
    [reply] = [m for m in out if m.in_reply_to]
    assert re.search(r"the mails from your address may make at most 4 mails to others an "
                     r"hour \(4 in the last hour\); nothing was sent for this line\. Try "
                     r"again after \d\d:\d\d UTC", flat(reply.body))
    age_outbox(db, 1.1)  # an hour later the sender may again
    out = mailer.send("reset p4", sender="rv@example.net")
    assert [m.to_addr for m in out if "code to reset" in m.subject] == ["p4@example.org"]


def test_challenges_in_one_mail_mail_three_others(mailer: Mailer, db: Database) -> None:
    """25 challenge lines from a stranger: one board (two players mailed) is made, the
    second would make four mails to others, so it and the rest are refused."""
    mailer.signup("alice", "bob", "carol", "dave")
    lines = "\n".join(["honeydonuts challenge alice bob", "honeydonuts challenge carol dave"]
                      * 12 + ["honeydonuts challenge alice carol"])
    out = mailer.send("multiple", lines, sender="mallory@example.net")
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(Board)) == 1
    others = sent_to_others(db, last_inbound(db).id, "mallory@example.net")
    assert sorted(m.to_addr for m in others) == ["alice@example.org", "bob@example.org"]
    [reply] = [m for m in out if m.in_reply_to]
    assert "it would mail 2 people other than you" in flat(reply.body)
    # a challenge from one of its players mails only the other one
    out = mailer.send("multiple", "\n".join(["honeydonuts challenge alice dave"] * 4),
                      sender="alice@example.org")
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(Board)) == 4


def test_signups_for_others_mail_three_confirmations(mailer: Mailer, db: Database) -> None:
    lines = "\n".join(f"signup zz{n} a-long-password victim{n}@example.com" for n in range(5))
    out = mailer.send("multiple", lines, sender="mallory@example.net")
    assert sorted(m.to_addr for m in out if not m.in_reply_to) == [
        f"victim{n}@example.com" for n in range(3)]
    with db.reading() as s:  # the refused lines opened no account
        assert sorted(s.scalars(select(User.userid).where(User.userid.like("zz%")))) == [
            "zz0", "zz1", "zz2"]


def test_mail_to_the_sender_itself_is_not_counted(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    out = mailer.send("multiple", "\n".join(["reset alice"] * 1 + ["help"] * 4),
                      sender="Alice+Games@Example.org")
    assert [m.to_addr for m in out if "code to reset" in m.subject] == ["alice@example.org"]
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(OutboxMessage)
                        .where(OutboxMessage.cause_key.is_not(None))) == 0


def test_an_address_change_notice_is_linked_to_its_mail(mailer: Mailer, db: Database) -> None:
    """Both mails of 'change address' carry the mail that asked for them; the code to
    the new address (not proved yet) counts as a mail to another, the notice to the
    account's own address (the password proves it) does not."""
    mailer.signup("alice")
    mailer.send("change address alice pw-alice alice2@example.org",
                sender="alice@work.example")
    inbound = last_inbound(db).id
    with db.reading() as s:
        [notice] = s.scalars(select(OutboxMessage).where(
            OutboxMessage.subject == "pbmserv: alice's address is to change",
            OutboxMessage.in_reply_to.is_(None)))
        [code] = s.scalars(select(OutboxMessage).where(
            OutboxMessage.subject.startswith("confirm alice "),
            OutboxMessage.in_reply_to.is_(None)))
    assert (notice.to_addr, notice.inbound_id, notice.cause_key) == (
        "alice@example.org", inbound, None)
    assert (code.to_addr, code.inbound_id, code.cause_key) == (
        "alice2@example.org", inbound, "alice@work.example")


# -- every limit on an address counts it without +tag and case ----------------------------
def test_replies_an_hour_count_every_tag_of_a_mailbox(db: Database, settings: Settings) -> None:
    limited = replace(settings, replies_per_sender_hour=3)
    mailer = Mailer(db, limited)
    out = [m for n in range(5) for m in mailer.send("help", sender=f"RV+{n}@Example.net")]
    assert [m.status for m in out] == [OutboxStatus.PENDING] * 3 + [OutboxStatus.HELD] * 2
    with db.transaction() as s:
        assert fold_held(s, limited, utcnow() + timedelta(hours=1, minutes=1)) == 1
    with db.reading() as s:
        [fold] = s.scalars(select(OutboxMessage).where(
            OutboxMessage.subject.like("%held for you%")))
        assert fold.to_addr == "rv+4@example.net" and fold.to_key == "rv@example.net"


def test_challenges_and_signups_a_day_count_every_tag(db: Database,
                                                      settings: Settings) -> None:
    mailer = Mailer(db, replace(settings, challenges_per_sender_day=2,
                                signups_per_sender_day=2))
    mailer.signup("alice", "bob", "carol")
    for n, pair in enumerate(("alice bob", "bob carol")):
        mailer.reply(f"honeydonuts challenge {pair}", sender=f"mallory+{n}@example.net")
    assert "2 boards have been started by challenges from your address" in flat(
        mailer.reply("honeydonuts challenge carol alice", sender="Mallory+x@Example.NET"))
    for n in range(2):
        mailer.reply(f"signup yy{n} a-long-password", sender=f"eve+{n}@example.net")
    assert "2 accounts have been opened from your address" in flat(
        mailer.reply("signup yy9 a-long-password", sender="EVE@example.net"))


def test_wrong_passwords_from_every_tag_count_together(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    for n in range(5):
        mailer.send("honeydonuts show alice", sender=f"rv+{n}@example.net")
        mailer.send(f"change password alice wrong{n}pw newpassword1", sender=f"rv+{n}@example.net")
    with db.reading() as s:
        counted = throttled(s, "user:none", sender_key("RV+99@example.net"))
    assert counted.get(sender_key("rv@example.net")) is not None  # locked


# -- answers go to the sender ------------------------------------------------------------
def test_a_third_party_in_reply_to_is_never_answered(mailer: Mailer) -> None:
    out = mailer.send("help", sender="robot@example.net", Reply_To="victim@example.com")
    assert [m.to_addr for m in out] == ["robot@example.net"]


def test_a_reply_to_of_the_account_a_mail_proves_is_answered(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    # alice writes from work, asking for answers at her account's address
    out = mailer.send("honeydonuts show 101 ", sender="alice@work.example",
                      Reply_To="Alice <alice@example.org>")
    assert [m.to_addr for m in out if m.in_reply_to] == ["alice@work.example"]
    out = mailer.send("vacation alice pw-alice", sender="alice@work.example",
                      Reply_To="Alice <alice@example.org>")
    assert [m.to_addr for m in out if m.in_reply_to] == ["alice@example.org"]
    # a password of another account proves nothing about this address
    out = mailer.send("vacation bob pw-bob", sender="alice@work.example",
                      Reply_To="Alice <alice@example.org>")
    assert [m.to_addr for m in out if m.in_reply_to] == ["alice@work.example"]


# -- strangers' noise ----------------------------------------------------------------------
SPAM_MARKS = [{"X-Spam-Flag": "YES"}, {"X-Spam-Status": "Yes, score=14.2 required=5.0"},
              {"X-Spam": "Yes"}]


@pytest.mark.parametrize("marks", SPAM_MARKS)
def test_a_strangers_spam_is_neither_run_nor_answered(mailer: Mailer, db: Database,
                                                      marks: dict[str, str]) -> None:
    mailer.signup("alice", "bob")
    assert mailer.send("honeydonuts challenge alice bob", sender="spam@example.net",
                       **marks) == []
    row = last_inbound(db)
    assert row.status is InboundStatus.IGNORED and "marked as spam" in (row.error or "")
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(Board)) == 0
    # a player's own mail, marked by a filter's mistake, is run and answered
    out = mailer.send("honeydonuts challenge alice bob", **marks)
    assert len(out) == 2


@pytest.mark.parametrize(("results", "silent"), [
    ("mx.games.example; dmarc=fail (p=reject dis=none) header.from=bank.example", True),
    ("mx.games.example; spf=fail smtp.mailfrom=bank.example", True),
    ("mx.games.example; dkim=fail reason=\"signature verification failed\" "
     "header.d=bank.example", True),
    ("mx.games.example 1; dkim=fail header.d=a.example; dkim=pass header.d=b.example", False),
    ("mx.games.example; dkim=fail header.d=a.example; dmarc=pass header.from=a.example",
     False),
    ("mx.games.example; spf=softfail smtp.mailfrom=a.example", False),
    ("mx.games.example; spf=pass smtp.mailfrom=a.example; dkim=pass; dmarc=pass", False),
    # another host's results may be forged, or a forwarder's fair failure
    ("mx.elsewhere.example; dmarc=fail header.from=a.example", False),
    ("mx.games.example.evil.example; dmarc=fail header.from=a.example", False),
])
def test_a_strangers_mail_failing_our_own_checks(db: Database, settings: Settings,
                                                 results: str, silent: bool) -> None:
    mailer = Mailer(db, replace(settings, trusted_authserv_ids=("mx.games.example",)))
    out = mailer.send("help", sender="someone@bank.example",
                      Authentication_Results=results)
    assert (out == []) is silent
    if silent:
        assert "from an address with no account: failed" in (last_inbound(db).error or "")


def test_authentication_results_are_read_only_when_trusted(mailer: Mailer) -> None:
    out = mailer.send("help", sender="someone@bank.example",
                      Authentication_Results="localhost; dmarc=fail header.from=bank.example")
    assert len(out) == 1  # trusted_authserv_ids is empty: nothing is read


ROBOTS = [
    ({"sender": "noreply@shop.example"}, "help"),
    ({"sender": "No-Reply <alerts@bank.example>"}, "help"),
    ({"sender": "\"Do Not Reply\" <news@shop.example>"}, "help"),
    ({"sender": "gmail-noreply@mail.example"}, "help"),
    ({"sender": "Mailer-Daemon <postmaster@mx.example>"}, "help"),
    ({"X_Auto_Response_Suppress": "All"}, "help"),
    ({"X_MS_Exchange_Generated_Message_Source": "Mailbox Rules Agent"}, "help"),
    ({}, "[AUTO GENERATED] help"),
    ({}, "Automatic reply: help"),
    ({}, "RE: Out of Office: help"),
    ({}, "Abwesenheitsnotiz: help"),
    ({}, "Réponse automatique : help"),
    ({}, "Your request has been received [#48213]"),
    ({}, "[Ticket #20931] Re: help"),
    ({}, "Thank you for contacting Example Support"),
    ({}, "Undeliverable: help"),
    ({"Return_Path": "<bounces+83421-ab12@mailer.shop.example>"}, "help"),
    ({"Errors_To": "4CB52C7@bounce.shop.example"}, "help"),
    ({"Sender": "games-request@lists.example"}, "help"),
]


@pytest.mark.parametrize(("headers", "subject"), ROBOTS)
def test_a_strangers_robot_without_rfc3834_marks_gets_no_answer(
        mailer: Mailer, db: Database, headers: dict[str, str], subject: str) -> None:
    headers = dict(headers)
    sender = headers.pop("sender", "helpdesk@shop.example")
    out = mailer.send_raw(make_mail(subject, "Thank you for your message.", sender, **headers),
                          envelope_from="helpdesk@shop.example")
    assert out == []
    row = last_inbound(db)
    assert row.status is InboundStatus.IGNORED
    assert (row.error or "").startswith("from an address with no account: a")


def test_an_accounts_mail_is_never_judged_by_robot_signs(mailer: Mailer, db: Database) -> None:
    """The signs are for strangers: a player behind Exchange (whose mail carries its
    headers) still moves, and is answered."""
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-b1", sender="alice@example.org",
                      X_Auto_Response_Suppress="All")
    [reply] = [m for m in out if m.in_reply_to]
    assert "Honeydonuts" in reply.subject or "Honey Donuts" in reply.subject
    with db.reading() as s:
        board = s.scalar(select(Board))
        assert board is not None and board.ply == 1


def test_hello_how_do_i_play_is_answered_once_a_day(mailer: Mailer, db: Database) -> None:
    [welcome] = mailer.send("hello, how do I play?", "Hi, I found your address on a web "
                            "page. How do I join a game?", sender="newcomer@example.com")
    assert welcome.subject == "pbmserv: how to begin"
    text = flat(welcome.body)
    assert text.startswith("I found no command in your mail. pbmserv is a server for board "
                           "games played by mail: Amoeba, Honey Donuts, Hexamoeba, Ex nihilo.")
    assert "signup USERID PASSWORD an account for your address" in text
    assert mailer.send("are you there?", sender="Newcomer+x@example.com") == []
    assert "answered once in the last 24 hours" in (last_inbound(db).error or "")
    # a command is answered as ever
    assert len(mailer.send("help", sender="newcomer@example.com")) == 1
    age_outbox(db, 25)
    assert len(mailer.send("anyone?", sender="newcomer@example.com")) == 1


def test_a_handful_of_refusals_a_day(db: Database, settings: Settings) -> None:
    mailer = Mailer(db, replace(settings, refusals_per_address_day=3))
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    replies = [mailer.send(f"honeydonuts move 101 alice pw-alice z{n}") for n in range(5)]
    assert [len(r) for r in replies] == [1, 1, 1, 0, 0]
    assert "ERROR" in replies[1][0].body and "last answer" not in replies[1][0].body
    assert re.search(r"This is the last answer until \d{4}-\d\d-\d\d \d\d:\d\d UTC to a mail "
                     r"from your address that carries nothing out",
                     flat(replies[2][0].body))
    row = last_inbound(db)
    assert row.status is InboundStatus.DONE and "refusals_per_address_day" in (row.error or "")
    # a command that works is carried out and answered as ever
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-b1")
    assert any(m.in_reply_to for m in out)


def test_a_naive_autoresponder_cannot_keep_an_exchange_going(mailer: Mailer,
                                                             db: Database) -> None:
    """A program that answers every mail with 'Re:' and its Subject (and marks
    nothing), started by a mail forged in its name: the exchange ends."""
    mailer.signup("alice")
    answer = mailer.send("amoeba help", sender="auto@example.com")  # a stranger
    rounds = 0
    while answer and rounds < 100:
        rounds += 1
        [mail] = answer
        answer = mailer.send(f"Re: {mail.subject}", "I am away until Monday.",
                             sender="auto@example.com")
    assert rounds <= 10
    # a player's own naive vacation program, answering its board mails, ends too
    mailer.signup("bob")
    out = mailer.send("honeydonuts challenge alice bob")
    [board_mail] = [m for m in out if m.to_addr == "bob@example.org"]
    answer = [board_mail]
    rounds = 0
    while answer and rounds < 100:
        rounds += 1
        answer = [m for m in mailer.send(f"Re: {answer[0].subject}", "Away until Monday.",
                                         sender="bob@example.org") if m.in_reply_to]
    assert rounds <= 11


# -- the same on PostgreSQL ------------------------------------------------------------------
def caps_and_silence(db: Database, settings: Settings) -> None:
    """The limits' queries on one database: mails to others per mail and an hour, the
    tag-blind counts, the daily welcome and the refusals."""
    mailer = Mailer(db, replace(settings, mails_to_others_per_hour=4,
                                refusals_per_address_day=2))
    mailer.signup("p0", "p1", "p2", "p3", "p4")
    out = mailer.send("multiple", "reset p0\nreset p1\nreset p2\nreset p3",
                      sender="rv_1+a@example.net")
    assert len([m for m in out if "code to reset" in m.subject]) == 3
    out = mailer.send("multiple", "reset p3\nreset p4", sender="RV_1+b@example.net")
    assert len([m for m in out if "code to reset" in m.subject]) == 1
    # rv%1@ is another mailbox: LIKE's wildcards are escaped
    out = mailer.send("reset p4", sender="rv%1@example.net")
    assert len([m for m in out if "code to reset" in m.subject]) == 1
    assert len(mailer.send("hello", sender="new+1@example.org")) == 1
    assert mailer.send("hello", sender="NEW@example.org") == []
    assert len(mailer.send("amoeba frob", sender="new+2@example.org")) == 1  # refused: 2nd
    assert mailer.send("amoeba help", sender="new@example.org") == []  # over the limit


def test_caps_and_silence_on_sqlite(db: Database, settings: Settings) -> None:
    caps_and_silence(db, settings)


@pytest.mark.postgres
def test_caps_and_silence_on_postgres(pg_url: str, tmp_path: Path) -> None:
    db = Database(pg_url)
    try:
        caps_and_silence(db, Settings(database_url=pg_url, maildir=tmp_path / "mail"))
    finally:
        db.dispose()
