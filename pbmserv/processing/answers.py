"""Whether a mail is answered, and where: strangers' noise, the daily limit of answers.

What is *answered* is decided apart from what is *run*: a mail whose commands are
carried out may still get no reply (the daily limit below), and the silence of one
kind of mail never decides whether another kind's commands run.

- Noise from a stranger (an address with no open, confirmed account) is neither run
  nor answered: mail that our own mail server marked as spam or as failing SPF, DKIM
  or DMARC (``ParsedMail.suspect``), and mail with the signs of a program that set
  none of RFC 3834's marks (``ParsedMail.robot``: a noreply sender, an out-of-office
  Subject...).  An account's own mail is never judged by such signs.
- A stranger's mail that holds no command the server knows ("hello, how do I
  play?") is answered with how to begin, once a day per address; the others get
  nothing.
- One address gets at most ``refusals_per_address_day`` answers a day that carried
  nothing out (every command refused, or no command) or that went to a stranger
  (Mailman's autoresponse limit): a program that answers every mail, marking none,
  cannot keep an exchange going.  The last one says so.  A reply that carries a live
  code (a signup's confirmation) is always sent.

- Mail that came through a mailing list (``ParsedMail.via_list``: List-Id,
  List-Post, List-Unsubscribe or Precedence: list) is never answered to its sender
  or the list (RFC 3834 forbids that, not acting on it): each of its command lines
  is carried out only if it proves its account, by the account's password or a
  reply address the server gave out; any other line is not carried out at all (not
  even ``help``: its answer could go nowhere).  If a line proved an account, one
  reply goes to that account's own address, privately; if none did, the mail is
  neither run nor answered, and kept as ignored with the reason.

Every count is of the address in one form, lower case and without its ``+tag``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from pbmserv.commands import is_command
from pbmserv.config import Settings
from pbmserv.db.status import AnswerKind
from pbmserv.mail.addresses import address_key
from pbmserv.mail.parse import ParsedMail
from pbmserv.notifications.answered import Answered, answered
from pbmserv.service.accounts import has_account

DAY = timedelta(days=1)


def holds_command(mail: ParsedMail) -> bool:
    """Whether the mail holds something the server knows: a command line (its first
    word a verb or a game), a move by reply, or a reply to a board mail."""
    return (mail.reply_move is not None or mail.board_reply is not None
            or any(is_command(line) for line in mail.commands))


def strangers_noise(session: Session, mail: ParsedMail) -> str:
    """Why the mail is neither run nor answered, being a stranger's noise ("" when it
    is not): the account look-up is made only for a mail that shows such signs."""
    sign = mail.suspect or mail.robot
    if not sign or has_account(session, mail.reply_to):
        return ""
    return f"from an address with no account: {sign}"


def welcome_refused(session: Session, settings: Settings, mail: ParsedMail,
                    now: datetime) -> str:
    """Why a stranger's mail with no command gets no welcome ("" when it gets one):
    one went to the address today already, or the daily limit of answers is met."""
    done = answered(session, mail.reply_to, now - DAY)
    if done.welcomes:
        return ("no command, from an address with no account: answered once in the "
                "last 24 hours already")
    return over_limit(settings, done)


def over_limit(settings: Settings, done: Answered) -> str:
    """Why one more counted answer is not sent ("" when it may be)."""
    if done.count < settings.refusals_per_address_day:
        return ""
    return (f"not answered: {done.count} answers in the last 24 hours to mails that "
            "carried nothing out or came from an address with no account "
            "(refusals_per_address_day)")


def is_last(settings: Settings, done: Answered) -> bool:
    """Whether one more counted answer is the last the address gets for now."""
    return done.count + 1 >= settings.refusals_per_address_day


def kind_of(refused: bool, stranger: bool) -> AnswerKind | None:
    """How a reply is counted: every command refused, else to a stranger, else not."""
    if refused:
        return AnswerKind.REFUSAL
    return AnswerKind.STRANGER if stranger else None


def answer_address(mail: ParsedMail, proved: Mapping[str, str]) -> str:
    """Where the reply goes: the sender (the From's address, or a Reply-To of the
    same mailbox); a Reply-To that names another mailbox only if the mail proved it
    is that account's (its password or reply address): never a third party."""
    named = mail.named_reply_to
    return named if named and address_key(named) in proved else mail.reply_to


def account_address(mail: ParsedMail, proved: Mapping[str, str]) -> str:
    """Where the reply to a list's mail goes: the address of the account it proved
    (the sender's own, if it proved that one; else the first it proved), never the
    list's; "" when it proved none."""
    own = proved.get(address_key(mail.reply_to))
    return own or next(iter(proved.values()), "")
