"""A player's language: chosen with 'notify <userid> <password> language xx', or hinted
by the Content-Language of the signup mail; the replies and board mails speak it,
commands stay English."""

from __future__ import annotations

import smtplib
import time
from datetime import UTC, datetime
from email.message import EmailMessage

import pytest
from sqlalchemy import select, update

from pbmserv.config import Settings
from pbmserv.db.models import MailPrefs, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.render import columns
from pbmserv.server import Server
from pbmserv.timers import run_digests
from tests.conftest import (
    LONG_URL_LINE,
    Mailer,
    free_port,
    make_mail,
    read_maildir,
    text_of,
)


def in_language(subject: str, sender: str, language: str) -> bytes:
    """A mail whose Content-Language is ``language`` (the header written after the
    content: setting the content clears every Content- header)."""
    raw = make_mail(subject, sender=sender)
    head, body = raw.split(b"\r\n\r\n", 1)
    return head + f"\r\nContent-Language: {language}".encode() + b"\r\n\r\n" + body


def chosen_language(mailer: Mailer, userid: str) -> str | None:
    with mailer.db.transaction() as session:
        user = session.scalar(select(User).where(User.key == userid))
        assert user is not None
        prefs = session.get(MailPrefs, user.id)
        return prefs.language if prefs is not None else None


def test_notify_language_chooses_the_language_of_the_mail(mailer: Mailer) -> None:
    mailer.signup("alice")
    english = mailer.reply("notify alice pw-alice")
    assert "alice's mail is written in English (en);" in " ".join(english.split())
    german = mailer.reply("notify alice pw-alice language de")
    assert chosen_language(mailer, "alice") == "de"
    assert "Deutsch (de)" in " ".join(german.split())
    refused = mailer.reply("notify alice pw-alice language xx")
    assert "de (Deutsch)" in refused and "language de" in refused
    assert chosen_language(mailer, "alice") == "de"
    mailer.reply("notify alice pw-alice language en")
    assert chosen_language(mailer, "alice") == "en"


def test_the_signup_mails_content_language_is_the_new_accounts(mailer: Mailer) -> None:
    out = mailer.send_raw(in_language("signup carol pw-carol-long", "carol@example.org",
                                      "ja-JP"), "carol@example.org")
    [reply] = [m for m in out if m.in_reply_to]
    mailer.answer(reply)
    assert chosen_language(mailer, "carol") == "ja"
    mailer.send_raw(in_language("signup dave pw-dave-long", "dave@example.org", "pt-BR"),
                    "dave@example.org")
    assert chosen_language(mailer, "dave") is None


def wait_for(settings: Settings, seen: int, count: int, limit: float = 30.0) -> list[EmailMessage]:
    """The mails delivered after the first ``seen``, once there are ``count`` of them."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        mails = read_maildir(settings.maildir)
        if len(mails) >= seen + count:
            return mails[seen:]
        time.sleep(0.05)
    raise AssertionError(f"expected {count} more mails, got {len(read_maildir(settings.maildir))}")


def by_mail(server: Server, raw: bytes, sender: str) -> None:
    with smtplib.SMTP(server.controller.hostname, server.controller.port, timeout=10) as smtp:
        smtp.sendmail(sender, ["pbmserv@localhost"], raw)


def flat_text(mail: EmailMessage) -> str:
    return " ".join(text_of(mail).split())


#: what each language's mails say, in that language (and what English says instead)
SAID = {
    "ja": {"signup": "ようこそ、alice さん!", "move": "あなたの手 a1-a2 を指しました",
           "turn": "bob さん(Blue)の番です", "summary": "Honey Donuts 盤 101 の概要",
           "by reply": "このメールに返信して", "won": "さん(", "footer": "コマンドの一覧は"},
    "de": {"signup": "Willkommen, alice!", "move": "Dein Zug a1-a2 auf Honey Donuts-Brett 101",
           "turn": "bob ist am Zug (Blue)", "summary": "Übersicht: Honey Donuts-Brett 101",
           "by reply": "Oder antworte einfach auf diese Mail",
           "won": "Sieg für bob", "footer": "schick \"help\" für die Befehle"},
}


@pytest.mark.parametrize("language", ["ja", "de"])
def test_a_game_by_mail_in_a_language_from_signup_to_the_end(
        db: Database, settings: Settings, language: str) -> None:
    """Against the running server (its SMTP listener, workers and Maildir): two players
    sign up from mail programs that mark their mail as Japanese (or German), confirm,
    challenge, move by command and by reply to the board mail, and one resigns; every
    mail they get is in their language, within 76 columns (a wide character counted as
    two), and names the commands as they are written."""
    said = SAID[language]
    server = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    server.start()
    try:
        for uid in ("alice", "bob"):
            by_mail(server, in_language(f"signup {uid} pw-{uid}-long",
                                        f"{uid}@example.org", f"{language}-XX"),
                    f"{uid}@example.org")
        confirmations = wait_for(settings, 0, 2)
        welcome = next(m for m in confirmations if m["To"] == "alice@example.org")
        assert said["signup"] in flat_text(welcome)
        assert "confirm alice" in welcome["Subject"]  # a command: as it is written
        for mail in confirmations:  # each player answers it, as a mail program does
            by_mail(server, make_mail(f"Re: {mail['Subject']}", sender=mail["To"]), mail["To"])
        wait_for(settings, 2, 2)
        seen = 4
        by_mail(server, make_mail("honeydonuts challenge alice bob pw-alice-long",
                                  sender="alice@example.org"), "alice@example.org")
        started = wait_for(settings, seen, 2)
        seen += 2
        board_mail = next(m for m in started if m["To"] == "bob@example.org")
        assert board_mail["Subject"].startswith("New Honey Donuts Board 101")
        by_mail(server, make_mail("honeydonuts move 101 alice pw-alice-long a1-a2#1",
                                  sender="alice@example.org"), "alice@example.org")
        moved = wait_for(settings, seen, 2)
        seen += 2
        reply = next(m for m in moved if m["To"] == "alice@example.org")
        to_bob = next(m for m in moved if m["To"] == "bob@example.org")
        assert said["move"] in flat_text(reply)
        assert said["footer"] in flat_text(reply)
        board = flat_text(to_bob)
        for words in ("turn", "summary", "by reply"):
            assert said[words] in board, (words, board)
        assert "honeydonuts move 101 bob <password> <move>#2" in board  # as it is written
        assert to_bob["Subject"] == "Honey Donuts Board 101 bob"
        # bob answers the board mail with his move alone, from his mail program
        answer = make_mail(f"Re: {to_bob['Subject']}", "e1-e2\n", sender="bob@example.org",
                           To=to_bob["Reply-To"])
        by_mail(server, answer, "bob@example.org")
        wait_for(settings, seen, 2)
        seen += 2
        by_mail(server, make_mail("honeydonuts resign 101 alice pw-alice-long",
                                  sender="alice@example.org"), "alice@example.org")
        ended = wait_for(settings, seen, 2)
        over = next(m for m in ended if m["To"] == "bob@example.org")
        assert said["won"] in flat_text(over)
        everything = read_maildir(settings.maildir)
        for mail in everything:
            for line in text_of(mail).splitlines():
                assert columns(line) <= 76 or LONG_URL_LINE.fullmatch(line), line
        assert any(not text_of(m).isascii() for m in everything) or language == "de"
    finally:
        server.stop()


def test_the_digest_speaks_its_readers_language(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    """Mails the clock or another player's command makes are in their reader's language
    too: a digest (made by the timer, no mail of the reader's in sight)."""
    mailer.signup("alice", "bob")
    mailer.reply("notify alice pw-alice language ja")
    mailer.reply("notify alice pw-alice digest daily 7")
    mailer.reply("honeydonuts challenge bob alice", sender="bob@example.org")
    mailer.send("honeydonuts move 101 bob pw-bob a1-a2", sender="bob@example.org")
    with db.transaction() as session:
        session.execute(update(MailPrefs).values(digest_next_at=datetime(2000, 1, 1, tzinfo=UTC)))
    assert run_digests(db, settings) == 1
    with db.transaction() as session:
        mail = session.scalars(select(OutboxMessage).where(
            OutboxMessage.to_addr == "alice@example.org", OutboxMessage.list_id.is_not(None))
            .order_by(OutboxMessage.id.desc())).first()
        assert mail is not None
        assert mail.subject == "pbmserv digest(まとめ): 1 盤があなたの手番です"
        assert "notify alice <password> digest off" in mail.body
