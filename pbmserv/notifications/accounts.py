"""Who is told what of an account: the codes that prove an address (a signup's, a
new address's, a password reset's) and the notices that an address changed or is to
change.  A command (pbmserv.commands.account) or the administrator (pbmserv.
operations) makes the change; the mail is decided here.

``cause``: the key of the sender whose mail makes this one for someone who did not
ask for it (see queue_mail); ``inbound_id``: the mail that asked, if one did.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.notifications.outbox import queue_mail
from pbmserv.notifications.subjects import our_subject
from pbmserv.render import render


def mail_signup_code(session: Session, settings: Settings, *, to: str, userid: str,
                     code: str, sender: str, lapses: datetime, inbound_id: int | None,
                     cause: str | None) -> None:
    """The one mail to a new account's address until it answers: its code."""
    queue_mail(session, settings, to=to, subject=f"confirm {userid} {code}",
               inbound_id=inbound_id, secret=True, cause=cause,
               body=render("confirm_mail.txt.j2", userid=userid, code=code, sender=sender,
                           lapses=lapses))


def mail_address_code(session: Session, settings: Settings, *, to: str, userid: str,
                      code: str, sender: str, lapses: datetime | None, inbound_id: int | None,
                      cause: str | None) -> None:
    """The code that confirms a new address, to that address."""
    queue_mail(session, settings, to=to, subject=f"confirm {userid} {code}",
               inbound_id=inbound_id, secret=True, cause=cause,
               body=render("new_address_mail.txt.j2", settings=settings, userid=userid,
                           code=code, sender=sender, lapses=lapses))


def tell_address_change_asked(session: Session, settings: Settings, *, to: str,
                              userid: str, new: str, requester: str, lapses: datetime | None,
                              inbound_id: int | None) -> None:
    """The account's address is told a change to ``new`` was asked for."""
    queue_mail(session, settings, to=to,
               subject=our_subject(settings, f"{userid}'s address is to change"),
               inbound_id=inbound_id,
               body=render("address_change_asked.txt.j2", settings=settings, userid=userid,
                           new=new, requester=requester, lapses=lapses))


def tell_address_changed(session: Session, settings: Settings, *, old: str, userid: str,
                         new: str, requester: str, inbound_id: int | None) -> None:
    """The old address is told the account's mail goes elsewhere now: were this not
    its owner's doing, they know."""
    queue_mail(session, settings, to=old,
               subject=our_subject(settings, f"{userid}'s address changed"),
               inbound_id=inbound_id,
               body=render("address_changed.txt.j2", settings=settings, userid=userid,
                           new=new, requester=requester))


def mail_reset_code(session: Session, settings: Settings, *, to: str, userid: str,
                    code: str, expires: datetime, requester: str | None = None,
                    inbound_id: int | None = None, cause: str | None = None) -> None:
    """A password reset code, to the account's own address and nowhere else, linked
    to the mail that asked for it (``requester`` None: the administrator did)."""
    queue_mail(session, settings, to=to,
               subject=our_subject(settings, f"a code to reset {userid}'s password"),
               body=render("reset_code.txt.j2", settings=settings, userid=userid, code=code,
                           expires=expires, requester=requester,
                           by_admin=requester is None),
               secret=True, inbound_id=inbound_id, cause=cause)
