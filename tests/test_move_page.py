"""The move page (pbmserv.web.move) over HTTP: reached from the board mail's link
with the reply address's token, a move picked by following links, the ``mailto:``
link it ends with sent as the reply (through the real store and processor: the move
is played), and the pages that no longer play (the board moved on, the token
revoked, forged).  The same in Chromium, through the real SMTP listener:
tests/test_move_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from sqlalchemy import event, select
from starlette.testclient import TestClient

from pbmserv.bounces.scoring import record_bounce
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Move, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.web import create_app
from tests.conftest import Mailer
from tests.test_clocks import clock_mails, time_passes

WEB = "https://games.example.org"
LINK = re.compile(re.escape(WEB) + r"(/move/[a-z0-9-]+)")


@pytest.fixture
def web_settings(settings: Settings) -> Settings:
    return replace(settings, web_url=WEB)


@pytest.fixture
def web_mailer(db: Database, web_settings: Settings) -> Mailer:
    return Mailer(db, web_settings)


@pytest.fixture
def client(db: Database, web_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(db, web_settings)) as test_client:
        yield test_client


def board_mail(out: list[OutboxMessage], to: str) -> OutboxMessage:
    [mail] = [m for m in out if m.to_addr == to]
    return mail


def start(mailer: Mailer, game: str = "honeydonuts") -> OutboxMessage:
    """A board between alice and bob; the board mail that asks alice to move."""
    mailer.signup("alice", "bob")
    return board_mail(mailer.send(f"{game} challenge alice bob", sender="carol@example.org"),
                      "alice@example.org")


def page_of(mail: OutboxMessage) -> str:
    found = LINK.search(mail.body)
    assert found is not None, mail.body
    return found.group(1)


def links(html: str) -> list[tuple[str, str]]:
    """(address, text) of the page's links in the list of options."""
    listed = html.split('<ul class="options"', 1)[1].split("</ul>", 1)[0]
    return [(unescape(a), unescape(t)) for a, t in
            re.findall(r'<li><a href="([^"]*)">([^<]*)</a>', listed)]


def mailto_of(html: str) -> tuple[str, str, str]:
    """(To, Subject, body) of the page's mailto: link."""
    found = re.search(r'<a class="mail" href="(mailto:[^"]*)"', html)
    assert found is not None
    url = urlsplit(unescape(found.group(1)))
    query = parse_qs(url.query)
    return unquote(url.path), query["subject"][0], query["body"][0]


def moves(db: Database) -> list[str]:
    with db.reading() as session:
        return list(session.scalars(select(Move.notation).order_by(Move.ply)))


def test_the_board_mail_links_to_the_move_page_and_its_mail_plays_the_move(
        web_mailer: Mailer, client: TestClient, db: Database) -> None:
    mail = start(web_mailer)
    path = page_of(mail)
    # the text part: one line of words and the address; the HTML part: a link
    assert f"clicking, on a page that writes the reply for you:\n{WEB}{path}\n" in mail.body
    assert mail.html_body is not None and f'<a href="{WEB}{path}"' in mail.html_body
    assert mail.reply_to is not None and path.endswith(mail.reply_to.split("+")[1].split("@")[0])
    # bob, not to move, gets no link
    assert "/move/" not in [m for m in _outbox(db) if m.to_addr == "bob@example.org"][-1].body
    first = client.get(path)
    assert first.status_code == 200 and first.headers["x-robots-tag"] == "noindex, nofollow"
    assert first.headers["referrer-policy"] == "no-referrer"  # the token stays here
    assert "<h2 id=\"ask\">Pick the end of the line to push from</h2>" in first.text
    ends = links(first.text)
    assert [t for _, t in ends][:3] == ["a1: Red piece", "a2: Red king", "a3: Red piece"]
    # the cells to pick are links on the board too, labelled for a screen reader
    assert 'aria-label="a1, Red piece: push the line from here"' in first.text
    target = dict((t, a) for a, t in ends)["a1: Red piece"]
    second = client.get(target)
    assert "Your move so far: push the line from a1." in second.text
    way = dict((t, a) for a, t in links(second.text))["b1: white piece"]
    done = client.get(way)
    assert "Your move: <code>a1-b1</code>" in done.text
    to, subject, body = mailto_of(done.text)
    assert to == mail.reply_to and subject == "Re: Honey Donuts Board 101 alice"
    assert body == "a1-b1\r\n\r\n"
    # the mail program sends what the link holds: the move is played
    out = web_mailer.send(subject, body.replace("\r\n", "\n") + "Your turn!\n",
                          sender="alice@example.org", To=to)
    assert "Your move a1-b1 on Honey Donuts board 101 has been played." in out[0].body
    assert moves(db) == ["a1-b1"]
    assert "alice writes:\n  Your turn!" in board_mail(out, "bob@example.org").body
    # the page has had its day: it says so, and links to the board
    stale = client.get(path)
    assert stale.status_code == 410
    assert "it has moved on since the board mail with this link was sent" in stale.text
    assert '<a href="/boards/honeydonuts/101">The board as it stands now</a>' in stale.text
    assert "mailto:" not in stale.text.split("<footer>")[0]


def _outbox(db: Database) -> list[OutboxMessage]:
    with db.reading() as session:
        return list(session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))


def test_a_reminder_links_to_the_move_page_too(web_mailer: Mailer, db: Database,
                                               client: TestClient) -> None:
    path = page_of(start(web_mailer))
    time_passes(db, 8)
    [nag] = [m for m in clock_mails(db, web_mailer.settings) if m.subject.startswith("Nag")]
    assert page_of(nag) == path  # the same move asked: the same page
    assert nag.html_body is not None and f'<a href="{WEB}{path}">Pick your move by clicking' \
        in nag.html_body
    assert client.get(path).status_code == 200


def test_a_new_password_revokes_the_page(web_mailer: Mailer, client: TestClient) -> None:
    path = page_of(start(web_mailer))
    assert client.get(path).status_code == 200
    web_mailer.send("change password alice pw-alice pw-alice-new")
    revoked = client.get(path)
    assert revoked.status_code == 410
    assert "made before alice's password or mail address changed" in revoked.text


def test_forged_tokens_and_wrong_picks(web_mailer: Mailer, client: TestClient) -> None:
    path = page_of(start(web_mailer))
    forged = path[:-3] + ("aaa" if not path.endswith("aaa") else "bbb")
    assert client.get(forged).status_code == 404
    assert client.get("/move/b1u1m1t0-aaaaaaaaaaaaaaaa").status_code == 404
    assert client.get("/move/nonsense").status_code == 404
    wrong = client.get(path + "?p=e3")
    assert wrong.status_code == 400 and "make no legal move" in wrong.text
    assert client.get(path + "?p=a1;drop").status_code == 400
    assert client.get(path + "?p=" + "a1," * 400).status_code == 400


def test_amoeba_asks_for_a_slide_and_a_preview_shows_the_board_after(
        web_mailer: Mailer, client: TestClient) -> None:
    path = page_of(start(web_mailer, "amoeba"))
    slide = client.get(path + "?p=e2,e4")
    assert "Slide a square after the move? Pick the square, or no slide" in slide.text
    options = [t for _, t in links(slide.text)]
    assert options[0] == "No slide" and "b3: empty" in options
    hole = client.get(path + "?p=e2,e4,b3")
    assert [t for _, t in links(hole.text)] == ["b4: a hole"] or "Pick the hole" in hole.text
    done = client.get(path + "?p=e2,e4,b3,b4")
    assert "Your move: <code>e2-e4,b3-b4</code>" in done.text
    # the preview: the board after the move, its changed cells marked
    assert sorted(re.findall(r'class="sq [a-z ]*touched[a-z ]*" title="([a-z]\d)',
                             done.text)) == ["b3", "b4", "e2", "e4"]
    assert 'aria-label="b3, a hole"' in done.text and 'aria-label="e4, White pawn"' in done.text


def click_a_move(client: TestClient, path: str) -> tuple[str, str, str]:
    """Follow the first option of every step of the move page at ``path`` to its
    mailto: link: (To, Subject, body)."""
    html = client.get(path).text
    while 'class="mail"' not in html:
        html = client.get(links(html)[0][0]).text
    return mailto_of(html)


def test_a_page_costs_the_same_reads_at_any_move(web_mailer: Mailer, client: TestClient,
                                                 db: Database) -> None:
    """The page reads the player, the board and the latest moves: so many statements
    whatever the game's length; and a whole game can be played by clicking."""
    counted: list[int] = []

    def count(*_: object) -> None:
        counted[-1] += 1

    mail = start(web_mailer, "hexamoeba")
    players = {"alice@example.org": "bob@example.org", "bob@example.org": "alice@example.org"}
    mover = "alice@example.org"
    while True:
        counted.append(0)
        event.listen(db.engine, "before_cursor_execute", count)
        try:
            assert client.get(page_of(mail)).status_code == 200
        finally:
            event.remove(db.engine, "before_cursor_execute", count)
        to, subject, body = click_a_move(client, page_of(mail))
        out = web_mailer.send(subject, body, sender=mover, To=to)
        assert "has been played" in out[0].body, out[0].body
        mover = players[mover]
        mail = board_mail(out, mover)
        if mail.reply_to is None or len(counted) == 30:
            break
    assert len(moves(db)) == len(counted) >= 5
    assert max(counted) <= 12 and max(counted[1:]) == min(counted[1:]), counted


def test_the_board_page_opened_from_the_move_page_leads_back(
        web_mailer: Mailer, client: TestClient) -> None:
    path = page_of(start(web_mailer))
    tag = path.rsplit("/", 1)[1]
    page = client.get(f"/boards/honeydonuts/101?move={tag}")
    assert f'<a href="/move/{tag}">Back to your move</a>' in page.text
    assert "Back to your move" not in client.get("/boards/honeydonuts/101").text
    assert "Back to your move" not in client.get(
        "/boards/honeydonuts/101?move=b1u1m1t0-aaaaaaaaaaaaaaaa").text


def test_a_page_for_an_answer_offers_accept_and_reject(web_mailer: Mailer,
                                                       client: TestClient,
                                                       tmp_path: Path) -> None:
    start(web_mailer)
    offer = board_mail(web_mailer.send("honeydonuts move 101 alice pw-alice propose"),
                       "bob@example.org")
    assert offer.reply_to is not None and "/move/" not in offer.body
    tag = offer.reply_to.split("+")[1].split("@")[0]
    page = client.get(f"/move/{tag}")
    assert page.status_code == 200
    accept = re.search(r'<a href="(mailto:[^"]*)">Accept</a>', page.text)
    assert accept is not None
    url = urlsplit(unescape(accept.group(1)))
    assert parse_qs(url.query)["body"] == ["accept\r\n"]
    out = web_mailer.send(parse_qs(url.query)["subject"][0], "accept\n",
                          sender="bob@example.org", To=unquote(url.path))
    assert "You accepted the offer to end Honey Donuts board 101" in out[0].body


def test_without_sub_addresses_the_tag_goes_in_the_subject(
        db: Database, web_settings: Settings) -> None:
    settings = replace(web_settings, subaddressing=False)
    mailer = Mailer(db, settings)
    path = page_of(start(mailer))
    with TestClient(create_app(db, settings)) as plain:
        done = plain.get(path + "?p=a1,b1")
    to, subject, body = mailto_of(done.text)
    tag = path.rsplit("/", 1)[1]
    assert to == "pbmserv@localhost" and subject == f"Re: Honey Donuts Board 101 alice [{tag}]"
    out = mailer.send(subject, body, sender="alice@example.org", To=to)
    assert "Your move a1-b1 on Honey Donuts board 101 has been played." in out[0].body


def test_a_player_whose_mail_bounces_is_told_on_the_move_page(
        web_mailer: Mailer, db: Database, client: TestClient) -> None:
    """The move page is the player's other channel: mail to them is held back while
    their address bounces, and the page they open from an older board mail says so."""
    path = page_of(start(web_mailer))
    assert "come back undelivered" not in client.get(path).text
    with db.transaction() as s:
        for _ in range(3):  # three hard bounces of mails to alice
            record_bounce(s, web_mailer.settings, "alice@example.org", utcnow(),
                          source="relay", status="5.1.1", detail="550 5.1.1 unknown",
                          outbox_id=None)
    page = client.get(path)
    assert page.status_code == 200
    text = " ".join(page.text.split())
    assert ("Mail to alice's address has come back undelivered, so since "
            f"{utcnow():%Y-%m-%d} the server sends it nothing") in text
    assert "change address alice &lt;password&gt; &lt;new address&gt;" in text
