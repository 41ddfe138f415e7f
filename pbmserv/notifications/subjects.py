"""The Subject of the server's own mails (not a board's: see views.board_subject)."""

from __future__ import annotations

from pbmserv.config import Settings
from pbmserv.render import render


def our_subject(settings: Settings, what: str, *, colon: bool = True) -> str:
    """The Subject of a mail of the server's own (a reply, an account's news), headed
    by the ``name`` setting: "Club games: error", "Club games help"."""
    return render("subjects/ours.txt.j2", server=settings.server_name, what=what,
                  colon=colon).strip()
