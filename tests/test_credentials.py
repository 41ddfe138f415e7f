"""Nobody can lock a player out, new passwords are long enough, and changed credentials
void the old ones (reset codes, move-by-reply addresses), telling the old address."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select, update
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.web import create_app
from tests.conftest import Mailer

CODE = re.compile(r"reset (\w+) ([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}) <new password>")
PAUSED = "password checks are paused until"


def flat(text: str) -> str:
    return " ".join(text.split())


def start(mailer: Mailer) -> OutboxMessage:
    """alice and bob on honeydonuts board 101: the board mail that asks alice to move."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob")
    [mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert mail.reply_to is not None
    return mail


def by_reply(mailer: Mailer, to: str, move: str, sender: str = "alice@example.org") -> str:
    out = mailer.send("Re: New Honey Donuts Board 101 alice", f"{move}\n", sender=sender, To=to)
    return next(m for m in out if m.in_reply_to).body


def code_for(mailer: Mailer, db: Database, userid: str, sender: str) -> tuple[str, str]:
    """Ask for a reset code; (the code, the address it was mailed to)."""
    mailer.reply(f"reset {userid}", sender=sender)
    with db.reading() as s:
        mail = s.scalars(select(OutboxMessage).where(OutboxMessage.subject.like(
            "%code to reset%")).order_by(OutboxMessage.id.desc())).first()
    assert mail is not None
    found = CODE.search(mail.body)
    assert found is not None
    return found.group(2), mail.to_addr


def test_a_stranger_cannot_keep_a_player_from_moving_or_recovering(
        mailer: Mailer, db: Database) -> None:
    board_mail = start(mailer)
    assert board_mail.reply_to is not None
    wrong = "\n".join(f"signoff alice guess{n}" for n in range(6))
    mailer.reply("multiple", wrong, sender="mallory@example.net")
    # alice's password is paused now, from any address but hers...
    assert PAUSED in flat(mailer.reply("honeydonuts move 101 alice pw-alice a1-b1",
                                       sender="alice@work.example"))
    # ...but not from her own, where mallory's guesses never hold her up
    text = mailer.reply("vacation alice pw-alice")
    assert "ERROR" not in text and PAUSED not in flat(text)
    # and her reply address still plays her move
    assert "Your move a1-b1 on Honey Donuts board 101" in flat(
        by_reply(mailer, board_mail.reply_to, "a1-b1"))
    # and a reset code still works, the new password at once
    code, to = code_for(mailer, db, "alice", "alice@example.org")
    assert to == "alice@example.org"
    done = mailer.reply(f"reset alice {code} kettle-blue-7")
    assert "The password of alice has been changed" in done
    text = mailer.reply("honeydonuts moves 101 ", sender="alice@example.org")
    assert "ERROR" not in text
    text = mailer.reply("vacation alice kettle-blue-7", sender="alice@work.example")
    assert "ERROR" not in text and PAUSED not in flat(text)


def test_wrong_codes_from_one_address_never_pause_the_owners_code(
        mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    code, _ = code_for(mailer, db, "alice", "alice@example.org")
    wrong = "\n".join(f"reset alice abcd-efgh-jk{n}{n} stolen-pass-{n}" for n in range(2, 9))
    text = mailer.reply("multiple", wrong, sender="mallory@example.net")
    assert text.count("not a valid reset code") == 1
    assert "(and 4 more lines of this mail refused in the same words)" in text
    assert ("too many wrong reset codes have been tried for this account from your "
            "address, so its reset codes are paused until") in flat(text)
    assert "stolen-pass" not in text
    # the codes are paused for mallory's address, not for alice's
    assert "its reset codes are paused" in flat(mailer.reply(
        f"reset alice {code} stolen-pass-9", sender="mallory@example.net"))
    done = mailer.reply(f"reset alice {code} kettle-blue-7")
    assert "The password of alice has been changed" in done


def test_new_passwords_need_eight_characters_and_old_short_ones_still_work(
        mailer: Mailer, db: Database) -> None:
    text = mailer.reply("signup carol short7", sender="carol@example.org")
    assert text.startswith(
        "> signup ...\n"
        "ERROR: a new password needs at least 8 characters (the one given has 6); a\n"
        "few words joined by dashes are easy to remember, like 'blue-kettle-seven'\n")
    assert "Welcome, carol!" in mailer.reply("signup carol eight-ch", sender="carol@x.org")
    start(mailer)
    # bob's password (pw-bob, 6 characters) is from before the rule: it still works
    text = mailer.reply("vacation bob pw-bob", sender="bob@example.org")
    assert "ERROR" not in text
    text = mailer.reply("change password bob pw-bob tiny", sender="bob@example.org")
    assert "> change password bob ***** *****\nERROR: a new password needs at least 8" in text
    code, _ = code_for(mailer, db, "bob", "bob@example.org")
    text = mailer.reply(f"reset bob {code} tiny", sender="bob@example.org")
    assert "> reset ...\nERROR: a new password needs at least 8" in text
    text = mailer.reply("change password bob pw-bob long-enough", sender="bob@example.org")
    assert "The password of bob has been changed" in text


def test_a_password_change_voids_reset_codes_and_reply_addresses(
        mailer: Mailer, db: Database) -> None:
    board_mail = start(mailer)
    assert board_mail.reply_to is not None
    code, _ = code_for(mailer, db, "alice", "alice@example.org")
    text = mailer.reply("change password alice pw-alice kettle-blue-7")
    assert flat(text).endswith(
        "The password of alice has been changed. Reply addresses of board mails sent "
        "before, and any reset code not yet used, no longer work: use the newest board "
        'mail. -- pbmserv <pbmserv@localhost>: send "help" for the commands.')
    assert "not a valid reset code" in mailer.reply(f"reset alice {code} other-pass-1")
    # from alice's own address: why, and the board with a fresh address (issue 38)
    assert ("ERROR: this reply address of honeydonuts board 101 no longer stands for a "
            "move: alice's password (or address) changed since the board mail was sent") \
        in flat(by_reply(mailer, board_mail.reply_to, "a1-b1"))
    # the board mail sent after the change carries an address that works
    out = mailer.send("honeydonuts move 101 alice kettle-blue-7 a1-b1")
    out = mailer.send("honeydonuts move 101 bob pw-bob e3-d3", sender="bob@example.org")
    [fresh] = [m for m in out if m.to_addr == "alice@example.org"]
    assert fresh.reply_to is not None
    assert "ERROR" not in by_reply(mailer, fresh.reply_to, "a1-a2")


def test_an_address_change_tells_the_old_address_and_voids_its_code(
        mailer: Mailer, db: Database) -> None:
    """Issue 34: 'change address' moved the account's mail at once; now a code goes to
    the new address, and the mail moves only once it answers."""
    board_mail = start(mailer)
    assert board_mail.reply_to is not None
    code, to = code_for(mailer, db, "alice", "mallory@example.net")
    assert to == "alice@example.org"
    out = mailer.send("change address alice pw-alice alice@new.example")
    [reply] = [m for m in out if m.in_reply_to]
    assert reply.subject == "pbmserv: alice's new address waits for its confirmation"
    assert flat(reply.body).startswith(
        "> change address alice ***** alice@new.example Mail for alice moves to "
        "alice@new.example once that address confirms it: one mail has gone there, and a "
        "reply to it confirms. Until then it goes on to alice@example.org; unconfirmed, the "
        "request lapses at ")
    [confirmation] = [m for m in out if not m.in_reply_to]  # the sender is the old address
    new_code = confirmation.subject.split()[2]
    assert (confirmation.to_addr, confirmation.subject) == (
        "alice@new.example", f"confirm alice {new_code}")
    assert flat(confirmation.body).startswith(
        "Someone writing from alice@example.org, with the password of the account alice on "
        "pbmserv, asked that its mail come to this address from now on. If that was you, "
        "reply to this mail as it is (its Subject is the command that confirms the "
        f"address), or send \"confirm alice {new_code}\". Until then the account's mail "
        "goes on to its old address. If it was not, do nothing: nothing changes, the request "
        "lapses at ")
    # until it answers, the mail goes to the old address
    mailer.send("honeydonuts move 101 alice pw-alice a1-b1")
    out = mailer.send("honeydonuts move 101 bob pw-bob e3-d3", sender="bob@example.org")
    assert [m.to_addr for m in out if not m.in_reply_to] == ["alice@example.org"]
    [welcome] = [m for m in mailer.answer(confirmation) if m.in_reply_to]
    assert (welcome.to_addr, welcome.subject) == (
        "alice@new.example", "pbmserv: alice's address changed")
    assert flat(welcome.body).endswith(
        "Mail for alice now goes to alice@new.example; alice@example.org has been told. "
        "Reply addresses of board mails sent before, and any reset code not yet used, no "
        "longer work: use the newest board mail. -- pbmserv <pbmserv@localhost>: send "
        "\"help\" for the commands.")
    with db.reading() as s:
        notice = list(s.scalars(select(OutboxMessage).where(
            OutboxMessage.subject.like("%address changed"),
            OutboxMessage.in_reply_to.is_(None))))
    assert [(m.to_addr, m.subject) for m in notice] == [
        ("alice@example.org", "pbmserv: alice's address changed")]
    assert notice[0].body == (
        "The address of the account alice on pbmserv was changed from this address to\n"
        "alice@new.example: a mail that gave the account's password asked for it, and\n"
        "a mail from alice@new.example confirmed it with the code sent to\n"
        "alice@new.example. Its mail goes there from now on, and the reply addresses\n"
        "and reset codes sent here before no longer work.\n\n"
        "If that was not you, someone knows your password: write to the server's\n"
        "administrator at once, with this mail.\n\n"
        "--\npbmserv <pbmserv@localhost>\n")
    # the code mailed to the old address, read by whoever reads it now, is void
    text = mailer.reply(f"reset alice {code} thief-pass-1", sender="thief@evil.example")
    assert "not a valid reset code for alice" in text
    assert "a reply address the server did not give out" in flat(
        by_reply(mailer, board_mail.reply_to, "a1-b1", sender="thief@evil.example"))
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2", sender="alice@new.example")
    assert {m.to_addr for m in out} == {"alice@new.example", "bob@example.org"}


def test_a_thiefs_new_address_waits_and_the_owner_is_told(mailer: Mailer,
                                                          db: Database) -> None:
    """Issue 34: one who knows a password could move the account's mail to any address
    at once.  Now the owner's address hears of it first, and a new password cancels it."""
    mailer.signup("alice")
    out = mailer.send("change address alice pw-alice thief@evil.example",
                      sender="thief@evil.example")
    [reply] = [m for m in out if m.in_reply_to]
    code = reply.subject.split()[2]
    assert (reply.to_addr, reply.subject) == ("thief@evil.example", f"confirm alice {code}")
    assert flat(reply.body).startswith(
        "> change address alice ***** thief@evil.example Mail for alice moves to this "
        "address, thief@evil.example, once you confirm it: reply to this mail as it is (its "
        "Subject is the command that confirms it), or send \"confirm alice "
        f"{code}\". Until then it goes on to alice@example.org, which has been told; "
        "unconfirmed, the request lapses at ")
    [told] = [m for m in out if not m.in_reply_to]
    assert (told.to_addr, told.subject) == (
        "alice@example.org", "pbmserv: alice's address is to change")
    assert flat(told.body).startswith(
        "A mail from thief@evil.example that gave the password of the account alice on "
        "pbmserv asked that its mail go to thief@evil.example from now on, instead of this "
        "address. That happens only once thief@evil.example answers the confirmation mail "
        "sent there, by ")
    assert ("If that was not you, someone knows your password: change it at once (\"change "
            "password alice <password> <new password>\", or \"reset alice\" for a code if it "
            "no longer works), which cancels the request, and write to the server's "
            "administrator.") in flat(told.body)
    assert "change has been made" not in told.body and code not in told.body
    mailer.reply("change password alice pw-alice kettle-blue-7")
    assert "ERROR: the account alice is confirmed already; nothing to do" in flat(
        mailer.answer(reply)[0].body)
    with db.reading() as s:
        assert s.scalar(select(User.email).where(User.key == "alice")) == "alice@example.org"


def test_a_signed_off_userid_is_kept_and_its_boards_still_name_the_player(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts resign 101 bob pw-bob", sender="bob@example.org")
    assert "is closed" in mailer.reply("signoff bob pw-bob", sender="bob@example.org")
    text = mailer.reply("signup bob thief-pass-1", sender="alice@example.org")
    assert flat(text).startswith(
        "> signup ... ERROR: the userid 'bob' belonged to a player who signed off "
        f"on {utcnow():%Y-%m-%d}; it stays theirs until "
        f"{utcnow() + timedelta(days=365):%Y-%m-%d} (their finished games still name them): "
        "choose another")
    client = TestClient(create_app(db, settings))
    page = client.get("/players/bob")
    assert page.status_code == 200
    assert f"bob signed off on {utcnow():%Y-%m-%d}; their games are kept here." in page.text
    assert "/boards/honeydonuts/101" in page.text
    # after the time kept, the userid is anyone's (userid_reserve_days)
    with db.transaction() as s:
        s.execute(update(User).where(User.closed_at.is_not(None))
                  .values(closed_at=utcnow() - timedelta(days=366)))
    assert "Welcome, bob!" in mailer.reply("signup bob new-owner-1", sender="new@example.org")
    assert client.get("/players/bob").status_code == 200


def test_redirects_never_name_the_host_the_request_gave(db: Database,
                                                        settings: Settings) -> None:
    client = TestClient(create_app(db, settings), base_url="http://evil.example")
    response = client.get("/tournaments/?before=5", follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == "/tournaments?before=5"
    configured = replace(settings, web_url="https://games.example.org")
    client = TestClient(create_app(db, configured), base_url="http://evil.example")
    response = client.get("/players/a+b/", follow_redirects=False)
    assert response.headers["location"] == "https://games.example.org/players/a%2Bb"
    assert client.get("/nowhere/", follow_redirects=False).status_code == 404
    assert client.post("/tournaments").status_code == 405


def test_a_new_address_not_confirmed_in_time_lapses(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    out = mailer.send("change address alice pw-alice alice@new.example")
    [confirmation] = [m for m in out if m.to_addr == "alice@new.example"]
    # a stranger's wrong codes pause the stranger, not the new address's answer
    lines = "\n".join(f"confirm alice abcd-efgh-jk{n:02d}" for n in range(6))
    text = flat(mailer.reply("multiple", lines, sender="mallory@example.net"))
    assert "ERROR: that is not the code mailed to alice's new address" in text
    assert "so its confirmation codes are paused until" in text
    with db.transaction() as s:
        user = s.scalar(select(User).where(User.key == "alice"))
        assert user is not None and user.new_email_at is not None
        user.new_email_at -= timedelta(hours=24, seconds=1)
    assert ("ERROR: the new address of alice was not confirmed within 24 hours, so its mail "
            "still goes to the old one; to move it, send 'change address' again") in flat(
                mailer.answer(confirmation)[0].body)
    with db.reading() as s:
        assert s.scalar(select(User.email).where(User.key == "alice")) == "alice@example.org"
    # asked again, it works as the first time
    out = mailer.send("change address alice pw-alice alice@new.example")
    [confirmation] = [m for m in out if m.to_addr == "alice@new.example"]
    assert "Mail for alice now goes to alice@new.example" in flat(
        next(m for m in mailer.answer(confirmation) if m.in_reply_to).body)
