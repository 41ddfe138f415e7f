"""Every template in every language: a broad session of mail (accounts, help on every
topic and game, challenges, moves good and bad, chat, clocks, ratings, tournaments,
settings, then the web pages) is played with its players writing in one language, and
each template the server renders on the way is rendered again in every other language,
with the same values, on the spot.  Every mail each session sends keeps its text within 76 columns,
an East Asian wide character counted as two (the Mailer checks every mail's shape)."""

from __future__ import annotations

from typing import Any

import jinja2
import pytest
from starlette.testclient import TestClient

from pbmserv import i18n
from pbmserv.web.app import create_app
from tests.conftest import Mailer

HELP = ["help", "help amoeba", "help hexamoeba", "help honeydonuts", "help exnihilo",
        "help reply", "help clocks", "help multiple", "help ratings", "help tournament",
        "help bots", "help move", "help notify", "help nosuchthing"]


def session(mailer: Mailer, language: str) -> None:
    mailer.signup("alice", "bob", "carol")
    for uid in ("alice", "bob", "carol"):
        mailer.reply(f"notify {uid} pw-{uid} language {language}", sender=f"{uid}@example.org")
    for line in HELP:
        mailer.reply(line)
    for line in ("list", "list amoeba honeydonuts", "no such command", "amoeba show 999",
                 "notify alice pw-alice", "notify alice pw-alice words on",
                 "notify alice pw-alice digest daily 9", "notify alice pw-alice digest off",
                 "notify alice pw-alice language xx", "vacation alice pw-alice",
                 "change password alice wrong-one new-password-1",
                 "honeydonuts move 101 alice pw-alice"):
        mailer.send(line)
    mailer.send("honeydonuts challenge alice bob pw-alice")
    mailer.send("amoeba challenge alice carol --nagtime=3 --forfeittime=7 pw-alice")
    mailer.send("exnihilo seek bob pw-bob", sender="bob@example.org")
    mailer.send("exnihilo join 1 carol pw-carol", sender="carol@example.org")
    for line in ("honeydonuts moves 101", "honeydonuts show 101",
                 "honeydonuts preview 101 a1-a2", "honeydonuts move 101 alice pw-alice zz9",
                 "honeydonuts move 101 alice pw-alice a1-a2#1", "amoeba show 101 -words",
                 "amoeba move 101 alice pw-alice e3-d3", "honeydonuts games alice",
                 "honeydonuts queue 101 alice pw-alice", "honeydonuts history alice",
                 "honeydonuts ratings", "honeydonuts standings",
                 "honeydonuts subscribe 101 carol pw-carol"):
        mailer.send(line, sender="carol@example.org" if " carol " in line else
                    "alice@example.org")
    mailer.send("honeydonuts chat 101 alice pw-alice", "good luck")
    mailer.send("honeydonuts move 101 bob pw-bob e1-e2#2", "a comment for alice",
                sender="bob@example.org")
    mailer.send("honeydonuts move 101 alice pw-alice propose", sender="alice@example.org")
    mailer.send("honeydonuts move 101 bob pw-bob reject", sender="bob@example.org")
    mailer.send("honeydonuts resign 101 bob pw-bob", sender="bob@example.org")
    mailer.send("honeydonuts record 101")
    mailer.send("tournament create Spring amoeba alice pw-alice -roundrobin")
    mailer.send("tournament join Spring bob pw-bob", sender="bob@example.org")
    mailer.send("tournament start Spring alice pw-alice")
    mailer.send("tournament show Spring")
    mailer.send("tournament list")
    mailer.send("multiple", "help\nlist\nnonsense line\n")
    # the web pages, asked for in the language
    with TestClient(create_app(mailer.db, mailer.settings)) as client:
        for path in ("/", "/play", "/games/honeydonuts", "/games/amoeba", "/boards/amoeba/101",
                     "/boards/honeydonuts/101", "/boards/honeydonuts/101?ply=1",
                     "/players/alice", "/tournaments", "/tournaments/Spring", "/no-such-page"):
            client.get(path, headers={"Accept-Language": language})


@pytest.mark.parametrize("language", ["de", "fr", "ja"])
def test_every_template_reached_renders_in_every_language(
        mailer: Mailer, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    original = jinja2.Template.render
    reached: set[str] = set()

    def render(self: jinja2.Template, *args: Any, **kwargs: Any) -> str:
        out = original(self, *args, **kwargs)
        reached.add(str(self.name))
        for other in i18n.LANGUAGES:  # the same values, said in each language
            with i18n.speaking(other):
                said = original(self, *args, **kwargs)
            assert said.strip() or not out.strip(), (self.name, other)
        return out

    monkeypatch.setattr(jinja2.Template, "render", render)
    session(mailer, language)
    # the session reaches the mail a game is played by
    for name in ("reply.txt.j2", "board_mail.txt.j2", "board_mail.html.j2",
                 "summary.txt.j2", "status.txt.j2", "error.txt.j2", "help/overview.txt.j2",
                 "commands/move.txt.j2", "subjects/board.txt.j2", "chat.txt.j2",
                 "help/amoeba.txt.j2", "help/reply.txt.j2", "commands/mail_prefs.txt.j2",
                 "tournament/show.txt.j2", "words/board.txt.j2", "web/board.html.j2",
                 "web/home.html.j2", "web/player.html.j2", "web/tournament.html.j2",
                 "web/error.html.j2"):
        assert name in reached, name
    assert len(reached) >= 69, sorted(reached)
