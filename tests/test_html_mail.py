"""Board mails as multipart/alternative: the text part as ever, an HTML part with
the board drawn (no scripts, no remote images, CSS inlined); text only on request."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage
from html import unescape

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.sender.message import message_bytes
from tests.conftest import Mailer


def as_mail(settings: Settings, row: OutboxMessage) -> EmailMessage:
    mail = message_from_bytes(message_bytes(settings, row), policy=policy.default)
    assert isinstance(mail, EmailMessage)
    return mail


def test_board_mail_has_an_html_part(mailer: Mailer, settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2",
                      "Look <b>here</b> & there")
    [row] = [m for m in out if m.to_addr == "bob@example.org"]
    assert row.html_body is not None
    mail = as_mail(settings, row)
    assert mail.get_content_type() == "multipart/alternative"
    text, html = mail.get_body(("plain",)), mail.get_body(("html",))
    assert text is not None and html is not None
    assert text.get_content() == row.body  # the text part is the canonical form
    page = html.get_content()
    assert "<table" in page and "Summary of Honey Donuts Board 101" in page
    assert "<script" not in page and "<svg" not in page and "http" not in page.lower()
    assert "<style" not in page and 'style="' in page  # the CSS is inlined
    assert "Look &lt;b&gt;here&lt;/b&gt; &amp; there" in page  # the comment escaped
    assert "touched" in page  # the last move marked


@pytest.mark.parametrize("game", ["amoeba", "hexamoeba", "honeydonuts", "exnihilo"])
def test_a_board_mails_html_is_ascii_and_7bit(mailer: Mailer, settings: Settings,
                                               game: str) -> None:
    """The HTML part of every game's board mail is ASCII, each character beyond it (a
    piece, a comment's) written as a character reference, in lines SMTP carries as
    they are: 7bit, no quoted-printable to make or read."""
    engine = get_engine(game)
    assert engine is not None
    start = engine.new()
    first = engine.format_move(start, engine.legal_moves(start)[0])
    mailer.signup("alice", "bob")
    mailer.reply(f"{game} challenge alice bob")
    out = mailer.send(f"{game} move 101 alice pw-alice {first}", "Grüße ●")
    [row] = [m for m in out if m.to_addr == "bob@example.org"]
    assert row.html_body is not None
    raw = message_bytes(settings, row)
    html = as_mail(settings, row).get_body(("html",))
    assert html is not None and html["Content-Transfer-Encoding"] == "7bit"
    page = html.get_content()
    assert page.isascii() and max(map(len, page.split("\n"))) <= 998
    assert "Gr&#252;&#223;e &#9679;" in page and "Grüße ●" in unescape(page)
    # every character of the HTML as rendered, read back
    assert unescape(page) == unescape(row.html_body)
    assert page.encode() in raw  # as it is on the wire


def test_text_only_on_request(mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("notify bob pw-bob html off", sender="bob@example.org")
    mailer.reply("honeydonuts challenge alice bob")
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2")
    [row] = [m for m in out if m.to_addr == "bob@example.org"]
    assert row.html_body is None
    assert as_mail(settings, row).get_content_type() == "text/plain"
    with db.transaction() as s:
        replies = list(s.scalars(select(OutboxMessage.html_body)
                                 .where(OutboxMessage.in_reply_to.is_not(None))))
    assert replies and all(h is None for h in replies)  # replies to commands: text only
