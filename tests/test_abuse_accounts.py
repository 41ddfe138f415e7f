"""Confirmed addresses: an account works once its address answered the one mail the
signup sends there; until then nothing else reaches that address, nobody can
challenge, subscribe or enter it, and it lapses after ``confirm_days``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.timers import run_lapses
from tests.conftest import Mailer


def flat(text: str) -> str:
    return " ".join(text.split())


def mails_to(db: Database, address: str) -> list[OutboxMessage]:
    with db.transaction() as s:
        return list(s.scalars(select(OutboxMessage).where(OutboxMessage.to_addr == address)))


def test_an_address_gets_one_mail_until_it_answers(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    out = mailer.send("signup victim pw-victim-1 victim@example.net",
                      sender="mallory@example.net")
    [reply] = [m for m in out if m.in_reply_to]
    assert reply.subject == "pbmserv: victim waits for its confirmation"
    assert ("It works once victim@example.net confirms it: one mail has gone there, and a "
            "reply to it confirms the account. Until then no password opens it, nobody can "
            "challenge it and nothing else is mailed to victim@example.net; unconfirmed, it "
            "lapses at ") in flat(reply.body)
    [confirmation] = mails_to(db, "victim@example.net")
    code = confirmation.subject.split()[2]
    assert confirmation.subject == f"confirm victim {code}"
    text = flat(confirmation.body)
    assert text.startswith("Someone writing from mallory@example.net has opened the account "
                           "victim on this game server, with this address for its mail. If "
                           "that was you, reply to this mail as it is (its Subject is the "
                           "command that confirms the account), or send \"confirm victim "
                           f"{code}\". If it was not, do nothing: the account lapses at ")
    # nothing works for it, and nothing more goes to its address
    not_yet = ("the account victim is not confirmed yet: it works once its address answers "
               "the confirmation mail sent there when it was opened (a reply will do: its "
               "Subject is the command that confirms it)")
    for command in ("honeydonuts challenge alice victim", "reset victim",
                    "honeydonuts seek victim pw-victim-1", "vacation victim pw-victim-1"):
        assert not_yet in flat(mailer.reply(command, sender="alice@example.org")), command
    mailer.reply("honeydonuts seek alice pw-alice", sender="alice@example.org")
    assert not_yet in flat(mailer.reply("honeydonuts join 1 victim pw-victim-1",
                                        sender="alice@example.org"))
    mailer.reply("tournament create Cup honeydonuts alice pw-alice -roundrobin")
    assert not_yet in flat(mailer.reply("tournament join Cup victim pw-victim-1",
                                        sender="alice@example.org"))
    assert len(mails_to(db, "victim@example.net")) == 1
    # a second signup for the same address waits its turn
    assert ("ERROR: the account victim for victim@example.net waits for its confirmation "
            "already: answer the mail sent there") in flat(mailer.reply(
                "signup victim2 pw-victim-2 victim@example.net", sender="alice@example.org"))
    # a wrong code is refused; the owner's reply confirms
    assert ("ERROR: that is not the code mailed to victim's address; reply to the "
            "confirmation mail as it is, or copy its Subject exactly") in flat(mailer.reply(
                "confirm victim abcd-efgh-jkmn", sender="alice@example.org"))
    [welcome] = mailer.answer(confirmation)
    assert welcome.to_addr == "victim@example.net"
    assert welcome.subject == "pbmserv: welcome, victim"
    assert ("Welcome, victim! Your account is confirmed and open, and the server's mail "
            "for it goes to victim@example.net.") in flat(welcome.body)
    assert "ERROR: the account victim is confirmed already; nothing to do" in flat(
        mailer.reply(f"confirm victim {code}", sender="victim@example.net"))
    assert "New Honey Donuts Board 101" in mailer.send("honeydonuts challenge alice victim",
                                                      sender="alice@example.org")[0].subject


def test_one_sender_opens_few_accounts(db: Database, settings: Settings) -> None:
    """The issue's 'signup subN pwN victim+N@example.net' lines: five accounts a day
    from one sender, none of them usable before its address answers (where one mail
    may mail others any number of times: test_strangers has that limit)."""
    mailer = Mailer(db, replace(settings, mails_to_others_per_mail=100))
    lines = "\n".join(f"signup sub{n} pw-sub-{n}-x victim+{n}@example.net" for n in range(40))
    out = mailer.send("multiple", lines, sender="mallory@example.net")
    [reply] = [m for m in out if m.in_reply_to]
    # the 35 refusals in the very same words are said once
    assert flat(reply.body).count(
        "ERROR: 5 accounts have been opened from your address in the last 24 hours, the "
        "most a day; try again tomorrow") == 1
    assert sorted(m.to_addr for m in out if not m.in_reply_to) == [
        f"victim+{n}@example.net" for n in range(5)]


def test_an_unconfirmed_account_lapses(mailer: Mailer, db: Database,
                                       settings: Settings) -> None:
    [reply] = mailer.send("signup late pw-late-1", sender="late@example.org")
    def age(days: float) -> None:
        with db.transaction() as s:
            user = s.scalar(select(User).where(User.key == "late"))
            assert user is not None
            user.created_at -= timedelta(days=days)

    age(6)
    assert run_lapses(db, settings) == 0
    age(1.001)
    assert ("ERROR: the account late was not confirmed within 7 days and has lapsed; sign up "
            "again") in flat(mailer.answer(reply)[0].body)
    assert run_lapses(db, settings) == 1
    # the userid is free again
    [again] = mailer.send("signup late pw-late-1", sender="other@example.org")
    assert again.subject.startswith("confirm late ")


def test_a_round_robin_of_unconfirmed_accounts_in_one_mail_makes_nothing(
        mailer: Mailer, db: Database) -> None:
    """The issue's one mail that opened 32 accounts at victims' addresses, then made,
    joined and started a double round robin of them: five accounts open, none of
    which can create, join or start anything, and no board is made."""
    lines = [f"signup sub{n} pw-sub-{n}-x victim+{n}@example.net" for n in range(32)]
    lines.append("tournament create Big honeydonuts sub0 pw-sub-0-x -roundrobin -double")
    lines += [f"tournament join Big sub{n} pw-sub-{n}-x" for n in range(1, 32)]
    lines.append("tournament start Big sub0 pw-sub-0-x")
    out = mailer.send("multiple", "\n".join(lines[:50]), sender="mallory@example.net")
    [reply] = [m for m in out if m.in_reply_to]
    assert "ERROR: the account sub0 is not confirmed yet" in flat(reply.body)
    # one confirmation to each of three addresses (the most mails to others one mail
    # makes), and nothing else
    assert sorted(m.to_addr for m in out if not m.in_reply_to) == [
        f"victim+{n}@example.net" for n in range(3)]
    with db.transaction() as s:
        assert s.scalars(select(Board)).all() == []
