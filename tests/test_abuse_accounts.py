"""Confirmed addresses: an account works once its address answered the one mail the
signup sends there; until then nothing else reaches that address, nobody can
challenge, subscribe or enter it, no page shows it, and it lapses after
``confirm_hours``."""

from __future__ import annotations

import random
import string
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv import spelling
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import AuthThrottle, Board, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.service.accounts import SUGGESTION_CANDIDATES
from pbmserv.timers import run_lapses
from pbmserv.web import create_app
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
    """Issue 34: an unconfirmed signup holds its userid for hours (24, the default
    confirm_hours), not a week."""
    [reply] = mailer.send("signup late pw-late-1", sender="late@example.org")
    def age(hours: float) -> None:
        with db.transaction() as s:
            user = s.scalar(select(User).where(User.key == "late"))
            assert user is not None
            user.created_at -= timedelta(hours=hours)

    age(1)
    with db.transaction() as s:
        lapses = s.scalar(select(User.created_at).where(User.key == "late"))
        assert lapses is not None
        lapses += timedelta(hours=24)
    assert flat(mailer.reply("signup late pw-late-2", sender="other@example.org")).endswith(
        "ERROR: the userid '...' is held by a signup that waits for its confirmation; "
        f"unless it is confirmed, it is free again at {lapses:%Y-%m-%d %H:%M} UTC: choose "
        "another, or try then -- pbmserv <pbmserv@localhost>: send \"help\" for the commands.")
    age(22)
    assert run_lapses(db, settings) == 0
    age(1.001)
    assert ("ERROR: the account late was not confirmed within 24 hours and has lapsed; sign "
            "up again") in flat(mailer.answer(reply)[0].body)
    assert run_lapses(db, settings) == 1
    # the userid is free again
    [again] = mailer.send("signup late pw-late-1", sender="other@example.org")
    assert again.subject.startswith("confirm late ")


def test_a_signup_in_a_newcomers_name_never_blocks_their_own(mailer: Mailer,
                                                             db: Database) -> None:
    """Issue 34: 'signup zzblock1 pw newcomer@victim.example' from a stranger made the
    newcomer's own signup wait for a week; now a signup from the address itself goes
    ahead (it may even take that userid), lapsing the stranger's."""
    mailer.send("signup zzblock1 pw-block-1 newcomer@victim.example",
                sender="mallory@example.net")
    out = mailer.send("signup zzblock1 pw-newcomer-1", sender="newcomer@victim.example")
    [reply] = out  # the reply is the confirmation itself: nothing else is mailed
    assert reply.subject.startswith("confirm zzblock1 ")
    [welcome] = mailer.answer(reply)
    assert welcome.subject == "pbmserv: welcome, zzblock1"
    assert "ERROR" not in mailer.reply("vacation zzblock1 pw-newcomer-1",
                                       sender="newcomer@victim.example")
    with db.transaction() as s:
        keys = sorted(s.scalars(select(User.key).where(User.email == "newcomer@victim.example")))
    assert keys[0] == "zzblock1" and keys[1].startswith("zzblock1#lapsed")
    # the newcomer's own signup that waits is theirs: nobody lapses it, not even they
    mailer.send("signup other1 pw-other-1", sender="other@victim.example")
    assert ("ERROR: the account other1 for other@victim.example waits for its confirmation "
            "already") in flat(mailer.reply("signup other2 pw-other-2",
                                            sender="other@victim.example"))
    assert ("ERROR: the account other1 for ***** waits for its confirmation already"
            ) in flat(mailer.reply("signup other3 pw-other-3 other@victim.example",
                                   sender="mallory@example.net"))


def test_no_page_shows_an_unconfirmed_account(mailer: Mailer, db: Database,
                                              settings: Settings) -> None:
    client = TestClient(create_app(db, settings))
    [reply] = mailer.send("signup newbie pw-newbie-1", sender="newbie@example.org")
    assert client.get("/players/newbie").status_code == 404
    mailer.answer(reply)
    page = client.get("/players/newbie")
    assert page.status_code == 200 and "newbie" in page.text


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


def test_a_strangers_wrong_codes_never_hold_up_the_owner(mailer: Mailer, db: Database) -> None:
    """Issue 34: ten wrong 'confirm newbie5 ...' from a stranger pause the stranger's
    codes; the owner's reply confirms all the same, and the owner's password is not
    held up either."""
    [reply] = mailer.send("signup newbie5 pw-newbie-5", sender="newbie5@example.org")
    lines = "\n".join(f"confirm newbie5 abcd-efgh-jk{n:02d}" for n in range(10))
    text = flat(mailer.reply("multiple", lines, sender="mallory@example.net"))
    assert ("ERROR: too many wrong confirmation codes have been tried for this account from "
            "your address, so its confirmation codes are paused until ") in text
    assert "Reply to the confirmation mail as it is: its Subject is the command." in text
    with db.transaction() as s:
        held = {row.key: row.failures for row in s.scalars(select(AuthThrottle))}
    assert held == {"confirm:newbie5|mallory@example.net": 5}
    [welcome] = mailer.answer(reply)
    assert welcome.subject == "pbmserv: welcome, newbie5"
    assert "has been started" in mailer.reply("honeydonuts challenge newbie5 bot1",
                                              sender="newbie5@example.org")
    assert "You resigned" in mailer.reply("honeydonuts resign 101 newbie5 pw-newbie-5",
                                          sender="newbie5@example.org")


def test_did_you_mean_for_a_userid_compares_a_bounded_few(
        mailer: Mailer, db: Database, settings: Settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: 50 lines 'reset <unknown 32-character userid>' with 1,000 unconfirmed
    accounts cost 17.4 s: each line was compared with every open account of a like
    length.  Now a line compares at most SUGGESTION_CANDIDATES, the confirmed accounts
    nearest it (never an unconfirmed one), by mail and on the web alike."""
    check_bounded_suggestions(mailer, db, settings, monkeypatch)


@pytest.mark.postgres
def test_did_you_mean_for_a_userid_on_postgres(pg_url: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    db = Database(pg_url)
    try:
        check_bounded_suggestions(Mailer(db, settings), db, settings, monkeypatch)
    finally:
        db.dispose()


def check_bounded_suggestions(mailer: Mailer, db: Database, settings: Settings,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(34)
    def uid() -> str:
        return "z" + "".join(rng.choice(string.ascii_lowercase) for _ in range(31))
    with db.transaction() as s:
        for n in range(400):
            name = uid()
            s.add(User(key=name, userid=name, password_hash="!", email=f"u{n}@example.net",
                       confirmed_at=utcnow() if n % 4 == 0 else None,
                       confirm_code_hash=None if n % 4 == 0 else "x"))
        confirmed = list(s.scalars(select(User.userid).where(User.confirmed_at.is_not(None))))
        unconfirmed = s.scalar(select(User.userid).where(User.confirmed_at.is_(None)))
    assert unconfirmed is not None
    compared: list[tuple[str, str]] = []
    counted = spelling.distance
    def distance(a: str, b: str, limit: int | None = None) -> int:
        compared.append((a, b))
        return counted(a, b) if limit is None else counted(a, b, limit)
    monkeypatch.setattr(spelling, "distance", distance)
    lines = [f"reset {uid()}" for _ in range(48)]
    slip = confirmed[7][:-1] + ("a" if confirmed[7][-1] != "a" else "b")
    lines += [f"reset {slip}", f"reset {unconfirmed[:-1]}"]
    text = flat(mailer.reply("multiple", "\n".join(lines), sender="mallory@example.net"))
    assert len(compared) <= 50 * SUGGESTION_CANDIDATES
    assert not {b for _, b in compared} & {unconfirmed.lower()}
    assert f"(did you mean {confirmed[7]}?)" in text
    assert "did you mean" not in text.replace(f"(did you mean {confirmed[7]}?)", "")
    compared.clear()
    client = TestClient(create_app(db, settings))
    page = client.get(f"/players/{slip}")
    assert page.status_code == 404 and f"did you mean {confirmed[7]}?" in page.text
    assert client.get(f"/players/{unconfirmed}").status_code == 404
    assert len(compared) <= 2 * SUGGESTION_CANDIDATES
