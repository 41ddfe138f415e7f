"""The sender's address comes from the raw From (and Reply-To) header: an encoded word,
a quoted display name, a comment or a group name never supplies it, so a forger who
writes a victim's address there is answered at his own address, the one an upstream
SPF/DMARC check saw."""

from __future__ import annotations

import smtplib
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from pbmserv.commands import is_command
from pbmserv.config import Settings
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.mail.mailboxes import first_mailbox
from pbmserv.mail.parse import parse_message
from pbmserv.server import Server
from tests.conftest import Mailer, free_port, read_maildir, wait_until_settled


def raw_mail(from_value: str, *, reply_to: str | None = None, subject: str = "help",
             message_id: str = "<forged@example.org>") -> bytes:
    head = [f"From: {from_value}", "To: pbmserv@localhost", f"Subject: {subject}",
            f"Message-ID: {message_id}", "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8"]
    if reply_to is not None:
        head.append(f"Reply-To: {reply_to}")
    return ("\r\n".join(head) + "\r\n\r\nhi\r\n").encode()


#: (From as written, the address the reply must go to)
FORGED = [
    # an encoded display name holding <victim>: the brief's own example
    ("=?utf-8?q?=3Cvictim@example.net=3E?= <mallory@evil.example>", "mallory@evil.example"),
    # the same in base64, and in a charset other than UTF-8
    ("=?utf-8?b?PHZpY3RpbUBleGFtcGxlLm5ldD4=?= <mallory@evil.example>",
     "mallory@evil.example"),
    ("=?iso-8859-1?q?Victim_=3Cvictim=40example=2Enet=3E?= <mallory@evil.example>",
     "mallory@evil.example"),
    # a quoted display name that looks like an address, or holds one in angles
    ('"victim@example.net" <mallory@evil.example>', "mallory@evil.example"),
    ('"Victim <victim@example.net>" <Mallory@Evil.Example>', "mallory@evil.example"),
    # comments, before, after and nested, some holding encoded words
    ("mallory@evil.example (victim@example.net)", "mallory@evil.example"),
    ("(victim@example.net) mallory@evil.example", "mallory@evil.example"),
    ("(a (nested <victim@example.net>) one) <mallory@evil.example>", "mallory@evil.example"),
    ("mallory@evil.example (=?utf-8?q?=3Cvictim@example.net=3E?=)", "mallory@evil.example"),
    # group syntax: the group's name is display text, its first member is the address
    ("=?utf-8?q?victim@example.net?=: <mallory@evil.example>;", "mallory@evil.example"),
    ('"victim@example.net": mallory@evil.example, victim@example.net;',
     "mallory@evil.example"),
    # an encoded word in the addr-spec itself supplies nothing: the envelope is used
    ("=?utf-8?q?victim?=@example.net", "mallory@evil.example"),
    ("<=?utf-8?q?victim?=@example.net>", "mallory@evil.example"),
    ("Victim <=?utf-8?q?victim=40example.net?=>", "mallory@evil.example"),
    # two addresses in one mailbox leave it in doubt: the envelope again
    ("victim@example.net <mallory@evil.example> <victim@example.net>", "mallory@evil.example"),
    ("victim@example.net mallory@evil.example", "mallory@evil.example"),
    # a group with no members names nobody
    ("undisclosed-recipients:;", "mallory@evil.example"),
]


@pytest.mark.parametrize(("from_value", "answered"), FORGED)
def test_a_forged_from_is_answered_at_the_forgers_address(
        mailer: Mailer, db: Database, from_value: str, answered: str) -> None:
    [reply] = mailer.send_raw(raw_mail(from_value), envelope_from="mallory@evil.example")
    assert reply.to_addr == answered
    assert reply.subject == "pbmserv help"
    with db.transaction() as s:  # the mail is filed under that sender too
        assert s.scalar(select(InboundMessage.sender)) == answered


@pytest.mark.parametrize(("reply_to", "named"), [
    ("=?utf-8?q?=3Cvictim@example.net=3E?= <other@evil.example>", "other@evil.example"),
    ('"victim@example.net" <other@evil.example>', "other@evil.example"),
    ("list: =?utf-8?q?victim?= <other@evil.example>, victim@example.net;",
     "other@evil.example"),
    # a Reply-To that names no address names nobody
    ("=?utf-8?q?=3Cvictim@example.net=3E?=", ""),
    ("<=?utf-8?q?victim?=@example.net>", ""),
])
def test_reply_to_is_read_the_same_way(mailer: Mailer, reply_to: str, named: str) -> None:
    """The Reply-To's address is read by the same rules; a third party it names is
    never answered (the mail proves no account of that address): the From is."""
    raw = raw_mail("Mallory <mallory@evil.example>", reply_to=reply_to)
    assert parse_message(raw, ("pbmserv@localhost",), "mallory@evil.example",
                         is_command).named_reply_to == named
    [reply] = mailer.send_raw(raw, envelope_from="mallory@evil.example")
    assert reply.to_addr == "mallory@evil.example"


@pytest.mark.parametrize(("value", "address"), [
    ("alice@example.org", "alice@example.org"),
    ("Alice <Alice@Example.ORG>", "alice@example.org"),
    ('"Smith, Alice" <alice@example.org>', "alice@example.org"),
    ("=?utf-8?q?J=C3=B6rg?= <joerg@example.de>", "joerg@example.de"),
    ("Jörg Müller <joerg@example.de>", "joerg@example.de"),
    ("alice@example.org (Alice)", "alice@example.org"),
    ("<@relay.example:alice@example.org>", "alice@example.org"),
    ("alice@example.org, bob@example.org", "alice@example.org"),
    ('"a \\" quote" <alice@example.org>', "alice@example.org"),
    ('"unclosed <victim@example.net>', ""),
    ("(unclosed victim@example.net", ""),
    ("<victim@example.net", ""),
    ("(" * 5000 + "a@b.org", ""),
])
def test_honest_senders_are_read_as_before(value: str, address: str) -> None:
    assert first_mailbox(value) == address


@pytest.fixture
def server(db: Database, settings: Settings) -> Iterator[Server]:
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    yield srv
    srv.stop()


def test_the_forgery_over_a_real_smtp_session(server: Server, settings: Settings,
                                               db: Database) -> None:
    """The brief's example through the listener: the reply goes to mallory only."""
    raw = raw_mail("=?utf-8?q?=3Cvictim@example.net=3E?= <mallory@evil.example>")
    with smtplib.SMTP(server.controller.hostname, server.controller.port, timeout=10) as c:
        c.sendmail("mallory@evil.example", ["pbmserv@localhost"], raw)
    deadline = time.monotonic() + 20
    while not read_maildir(settings.maildir) and time.monotonic() < deadline:
        time.sleep(0.05)
    wait_until_settled(db)  # and no other mail comes (to the victim)
    [reply] = read_maildir(settings.maildir)
    assert reply["To"] == "mallory@evil.example"
    assert "victim" not in reply.as_string()
