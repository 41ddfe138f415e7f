"""Mails people subscribe to carry List-Id and List-Unsubscribe (RFC 2369, RFC 8058);
a player's own board mails do not; unsubscribing works by mail and by the one-click
web link."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage

from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import GameNotify, MailPrefs, OutboxMessage, Subscription
from pbmserv.db.session import Database
from pbmserv.db.status import DigestMode
from pbmserv.sender.message import message_bytes
from pbmserv.timers import run_digests
from pbmserv.web.app import create_app
from tests.conftest import Mailer, make_mail

WEB = "https://games.example.org"


def headers_of(settings: Settings, row: OutboxMessage) -> EmailMessage:
    msg = message_from_bytes(message_bytes(settings, row), policy=policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


def unsubscribe_ways(msg: EmailMessage) -> tuple[str, str]:
    """The mailto address and the web link of a List-Unsubscribe."""
    found = re.fullmatch(r"<mailto:([^?>]+)\?subject=unsubscribe>, <(https://[^>]+)>",
                         str(msg["List-Unsubscribe"]))
    assert found is not None, msg["List-Unsubscribe"]
    return found.group(1), found.group(2)


def game(mailer: Mailer) -> list[OutboxMessage]:
    """alice and bob play board 101; carol watches it, dave hears of finished games;
    the mails of alice's move."""
    mailer.signup("alice", "bob", "carol", "dave")
    mailer.send("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts subscribe 101 carol pw-carol", sender="carol@example.org")
    mailer.reply("honeydonuts notify dave pw-dave on", sender="dave@example.org")
    return mailer.send("honeydonuts move 101 alice pw-alice a1-b1#1")


def test_a_spectator_leaves_by_mail_and_a_player_has_no_list_headers(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    settings = replace(settings, web_url=WEB)
    out = {m.to_addr: m for m in game(mailer)}
    player = headers_of(settings, out["bob@example.org"])
    assert player["List-Id"] is None and player["List-Unsubscribe"] is None
    spectator = headers_of(settings, out["carol@example.org"])
    assert spectator["List-Id"] == '"Honey Donuts board 101" <honeydonuts-101.boards.localhost>'
    address, link = unsubscribe_ways(spectator)
    assert re.fullmatch(r"pbmserv\+unsub-s\d+u\d+-[a-z2-7]{16}@localhost", address)
    assert link == f"{WEB}/unsubscribe/{address.split('+')[1].split('@')[0]}"
    assert spectator["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # what a mail program sends for its "unsubscribe" button: any words, to the address
    replies = mailer.send_raw(make_mail("unsubscribe", sender="carol@example.org",
                                        To=address), "carol@example.org")
    assert [(m.to_addr, m.subject) for m in replies] == [
        ("carol@example.org", "Honey Donuts Board 101 unsubscribed")]
    assert "carol no longer watches Honey Donuts board 101" in " ".join(replies[0].body.split())
    with db.reading() as s:
        assert s.scalar(select(Subscription)) is None
    # carol gets no more of board 101; twice is harmless
    again = mailer.send_raw(make_mail("unsubscribe", sender="carol@example.org", To=address),
                            "carol@example.org")
    assert "carol was not watching Honey Donuts board 101" in " ".join(again[0].body.split())
    later = mailer.send("honeydonuts move 101 bob pw-bob e3-d3#2", sender="bob@example.org")
    assert "carol@example.org" not in {m.to_addr for m in later}
    # an address that was changed on the way unsubscribes nobody, and says so
    forged = address.replace("-s", "-s9", 1)
    refused = mailer.send_raw(make_mail("unsubscribe", sender="eve@example.org", To=forged),
                              "eve@example.org")
    assert [(m.to_addr, m.subject) for m in refused] == [
        ("eve@example.org", "pbmserv: not unsubscribed")]


def test_result_notices_and_the_digest_leave_by_one_click_on_the_web(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    settings = replace(settings, web_url=WEB)
    game(mailer)
    finished = {m.to_addr: m for m in mailer.send("honeydonuts resign 101 bob pw-bob",
                                                   sender="bob@example.org")}
    notice = headers_of(settings, finished["dave@example.org"])
    assert notice["List-Id"] == '"Honey Donuts results" <honeydonuts.results.localhost>'
    _, link = unsubscribe_ways(notice)
    path = link.removeprefix(WEB)
    with TestClient(create_app(db, settings)) as client:
        asked = client.get(path)  # a link checker's visit changes nothing
        assert asked.status_code == 200
        assert "This stops the notices of finished Honey Donuts games for dave." in asked.text
        assert "form-action 'self'" in asked.headers["Content-Security-Policy"]
        with db.reading() as s:
            assert s.scalar(select(GameNotify)) is not None
        done = client.post(path, content=b"List-Unsubscribe=One-Click",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert done.status_code == 200
        assert "dave no longer gets the notices of finished Honey Donuts games" in done.text
        with db.reading() as s:
            assert s.scalar(select(GameNotify)) is None
        assert client.post(path[:-1] + ("a" if path[-1] != "a" else "b")).status_code == 404

        # the digest: alice's comes with its own list and link
        mailer.reply("notify alice pw-alice digest daily 7")
        mailer.send("honeydonuts challenge alice bob")
        run_digests(db, settings, utcnow() + timedelta(days=1))
        with db.reading() as s:
            digest = s.scalars(select(OutboxMessage).where(
                OutboxMessage.to_addr == "alice@example.org",
                OutboxMessage.list_id.is_not(None))).one()
        assert headers_of(settings, digest)["List-Id"] == '"pbmserv digest" <digest.localhost>'
        _, link = unsubscribe_ways(headers_of(settings, digest))
        assert client.post(link.removeprefix(WEB)).status_code == 200
        with db.reading() as s:
            prefs = s.scalar(select(MailPrefs))
            assert prefs is not None and prefs.digest == DigestMode.OFF


def test_without_web_pages_the_mailto_alone(mailer: Mailer, settings: Settings) -> None:
    out = {m.to_addr: m for m in game(mailer)}
    spectator = headers_of(settings, out["carol@example.org"])
    assert re.fullmatch(r"<mailto:pbmserv\+unsub-[^>]+@localhost\?subject=unsubscribe>",
                        str(spectator["List-Unsubscribe"]))
    assert spectator["List-Unsubscribe-Post"] is None
