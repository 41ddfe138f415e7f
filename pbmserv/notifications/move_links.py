"""The links of a board mail to its player's move page, and the ``mailto:`` link that
the page ends with.

A board mail that asks its reader for a move carries a reply address made for them
(``pbmserv+TOKEN@host``, pbmserv.service.reply_tokens).  With web pages (the setting
``web_url``), its HTML part, and its text, link to ``/move/TOKEN``: a page where the
player picks the move by following plain links, and which ends with a ``mailto:`` link
that opens their own mail program with the reply written (the reply address, the
Subject of a reply to the board mail, the move).  Sending it plays the move as any
reply does.  The token is the capability: no login.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from pbmserv.config import Settings
from pbmserv.mail.addresses import subaddress, tag_mark, tag_of

#: where the move pages are
MOVE_PATH = "/move/"
#: the query parameter of the picks made, joined by commas
PICKS = "p"


def move_url(settings: Settings, reply_to: str | None) -> str | None:
    """The move page of the reply address ``reply_to`` (None: no address, or no web
    pages)."""
    if reply_to is None or not settings.web_url:
        return None
    tag = tag_of(reply_to, settings.addresses)
    return f"{settings.web_url}{MOVE_PATH}{tag}" if tag else None


def page_path(tag: str, picks: Sequence[str] = ()) -> str:
    """The address of the move page with ``picks`` made, as a link of the page."""
    path = MOVE_PATH + quote(tag, safe="")
    return path + (f"?{PICKS}=" + quote(",".join(picks), safe=",") if picks else "")


def reply_header(settings: Settings, tag: str, subject: str) -> tuple[str, str]:
    """The To and the Subject of a reply to the address of ``tag``: where the mailbox
    has no sub-addresses (the setting ``subaddressing``), the plain address, and the
    tag in the Subject, as in the board mail's."""
    if settings.subaddressing:
        return subaddress(settings.address, tag), subject
    return settings.address, f"{subject} {tag_mark(tag)}"


def mailto(settings: Settings, tag: str, subject: str, body: str) -> str:
    """A ``mailto:`` link (RFC 6068) of a reply to the address of ``tag``: the
    subject and body written in (``reply_header``)."""
    to, subject = reply_header(settings, tag, subject)
    return (f"mailto:{quote(to, safe='@+')}?subject={quote(subject, safe='')}"
            f"&body={quote(body, safe='')}")
