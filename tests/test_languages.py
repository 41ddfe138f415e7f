"""A player's language: chosen with 'notify <userid> <password> language xx', or hinted
by the Content-Language of the signup mail; the replies and board mails speak it,
commands stay English."""

from __future__ import annotations

from sqlalchemy import select

from pbmserv.db.models import MailPrefs, User
from tests.conftest import Mailer, make_mail


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
