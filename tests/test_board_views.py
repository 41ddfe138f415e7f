"""A board mail is built once (issue 35): one view of the board per change, and the
reply, every board mail (text and HTML), their subject and the web page rendered
from it, each piece once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import jinja2
import pytest
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.notifications import views
from pbmserv.notifications.views import BoardView
from pbmserv.web import create_app
from tests.conftest import Mailer


def move(mailer: Mailer, uid: str, text: str, body: str = "") -> list[OutboxMessage]:
    return mailer.send(f"honeydonuts move 101 {uid} pw-{uid} {text}", body,
                       sender=f"{uid}@example.org")


def to(out: list[OutboxMessage], uid: str) -> OutboxMessage:
    [mail] = [m for m in out if m.to_addr == f"{uid}@example.org"]
    return mail


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The templates rendered from here on, by name (those included not counted)."""
    seen: Counter[str] = Counter()
    original = jinja2.Template.render

    def render(self: jinja2.Template, *args: Any, **kwargs: Any) -> str:
        seen[str(self.name)] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(jinja2.Template, "render", render)
    return seen


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[BoardView]:
    """The board views built from here on."""
    made: list[BoardView] = []

    def counted(**fields: Any) -> BoardView:
        made.append(BoardView(**fields))
        return made[-1]

    monkeypatch.setattr(views, "BoardView", counted)
    return made


def test_a_move_builds_one_view_and_renders_each_piece_of_its_mails_once(
        mailer: Mailer, rendered: Counter[str], built: list[BoardView]) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    move(mailer, "alice", "a1-a2#1")
    rendered.clear()
    built.clear()
    out = move(mailer, "bob", "e1-e2#2")
    reply, board_mail = to(out, "bob"), to(out, "alice")
    assert [(v.number, v.ply) for v in built] == [(101, 2)]
    pieces = ["status.txt.j2", "summary.txt.j2", "summary.html.j2", "subjects/board.txt.j2",
              "boards/honeydonuts.txt.j2", "boards/honeydonuts.html.j2"]
    assert {name: rendered[name] for name in pieces} == dict.fromkeys(pieces, 1)
    # the reply and the board mail show the one summary, under the one subject
    body = board_mail.body
    end = "lost on time after 21.\n"
    summary = body[body.index("Summary of"):body.index(end) + len(end)]
    assert "Summary of Honey Donuts Board 101" in summary and "a1-a2" in summary
    assert summary in reply.body
    assert reply.subject == board_mail.subject == "Honey Donuts Board 101 alice"
    assert board_mail.html_body is not None and "touched" in board_mail.html_body


def test_each_command_of_a_mail_shows_the_board_as_that_command_left_it(
        mailer: Mailer) -> None:
    """The sections of a reply are rendered once the mail's commands ran, each from
    the view of its board kept before the next command could change it."""
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    body = mailer.reply("multiple", "honeydonuts move 101 alice pw-alice a1-a2#1\n"
                        "honeydonuts move 101 alice pw-alice propose")
    first, second = body.split("\n-------------")[:2]
    assert "Your move a1-a2 on Honey Donuts board 101 has been played" in first
    assert "Open offer" not in " ".join(first.split())
    assert "Open offer: alice offers to end the game by agreement" in " ".join(second.split())


def test_the_web_page_shows_the_view_the_board_mail_shows(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    out = move(mailer, "alice", "a1-a2#1", body="Good luck")
    html = to(out, "bob").html_body
    assert html is not None
    with TestClient(create_app(db, settings)) as client:
        page = client.get("/boards/honeydonuts/101").text
    # the board drawn from the one view: the same cells, the last move's marked
    cells = [c for c in html.split("<td") if " touched" in c]
    assert cells and len(cells) == page.count(" touched")
    assert "It is bob&#39;s turn (Blue), move 2." in page
    assert "It is bob&#39;s turn (Blue), move 2." in html
