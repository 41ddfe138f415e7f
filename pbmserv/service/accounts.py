"""Accounts: opening and closing them, finding users, checking their passwords."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import Select, bindparam, delete, func, or_, select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import (
    Board,
    BoardPlayer,
    GameNotify,
    PasswordReset,
    Seek,
    Subscription,
    User,
)
from pbmserv.db.status import BoardStatus, SeekStatus
from pbmserv.i18n import N_
from pbmserv.mail.addresses import MAX_ADDRESS
from pbmserv.service.errors import PlayerError
from pbmserv.service.passwords import check_password, hash_password
from pbmserv.service.throttle import account_key, record_success, sender_key, throttled
from pbmserv.spelling import allowed_slips, closest

USERID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}$")
EMAIL_RE = re.compile(r"^[^@\s<>\"',;:]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$")
PASSWORD_RE = re.compile(r"^[^\s\"':]{1,128}$")
#: the fewest characters of a new password (older, shorter ones still open their account)
MIN_PASSWORD = 8
#: the password hash of an account made by an import: no password matches it
DISABLED_PASSWORD = "!imported"
#: the domain of the address of an account made by an import: it reaches nobody
IMPORTED_DOMAIN = "imported.invalid"


_BY_KEY = select(User).where(User.key == bindparam("key"), User.closed_at.is_(None))


def find_user(session: Session, userid: str, loaded: Iterable[User] = ()) -> User | None:
    """The open account ``userid``; one of the ``loaded`` accounts (a board's players,
    loaded with it) if it is one of them, without asking the database again."""
    key = userid.lower()
    for user in loaded:
        if user.key == key and user.closed_at is None:
            return user
    return session.scalar(_BY_KEY, {"key": key})


def is_confirmed(user: User) -> bool:
    """Whether the account's address has answered its confirmation mail (the bots
    have no address and need none).  Until it has, the account is shown nowhere."""
    return user.confirmed_at is not None or user.bot is not None


def shown_user(session: Session, userid: str) -> User | None:
    """The account a page shows as ``userid``: the open, confirmed one, else the one
    that signed off last (their finished boards still name them); None if neither."""
    user = find_user(session, userid) if USERID_RE.match(userid) else None
    if user is not None and is_confirmed(user):
        return user
    return closed_account(session, userid)


def has_account(session: Session, address: str) -> bool:
    """Whether ``address`` is the mail address of an open, confirmed account (a signup
    in someone's name does not make their address an account's)."""
    return session.scalar(select(User.id).where(User.email == address.lower(),
                                                User.closed_at.is_(None),
                                                User.confirmed_at.is_not(None))
                          .limit(1)) is not None


def accounts_at(session: Session, address: str) -> list[User]:
    """The open, confirmed accounts whose mail goes to ``address`` (one, mostly)."""
    return list(session.scalars(
        select(User).where(User.email == address.lower(), User.closed_at.is_(None),
                           User.confirmed_at.is_not(None), User.bot.is_(None))
        .order_by(User.key)))


def existing_user(session: Session, userid: str) -> User:
    user = find_user(session, userid) if USERID_RE.match(userid) else None
    if user is None:
        guess = similar_userid(session, userid)
        meant = f" (did you mean {guess}?)" if guess else ""
        raise PlayerError(f"there is no user {userid[:40]!r}{meant}; players sign up with "
                          "'signup'")
    return user


#: the most accounts a "did you mean" compares a userid with: the nearest in the
#: order of userids, half on either side
SUGGESTION_CANDIDATES = 20


def _near(after: bool) -> Select[tuple[str]]:
    """The userids of the confirmed open accounts (and the bots) with a key from
    ``low`` up to ``high`` and a length a slip away: the first ones ``after`` the low
    end, or the last ones before the high end (one bound each way, so that the look-up
    starts where the typed userid would be in the index)."""
    length = func.length(User.key)
    query = select(User.userid).where(
        User.key >= bindparam("low"), User.key < bindparam("high"),
        User.closed_at.is_(None), or_(User.confirmed_at.is_not(None), User.bot.is_not(None)),
        length >= bindparam("shortest"), length <= bindparam("longest"))
    query = query.order_by(User.key if after else User.key.desc())
    return query.limit(SUGGESTION_CANDIDATES // 2)


_NEAR = (_near(after=True), _near(after=False))


def similar_userid(session: Session, userid: str) -> str | None:
    """The confirmed open account whose userid is nearest ``userid``, if one is a slip
    away.  (Userids are public: the ratings and the web pages list them; an
    unconfirmed account is shown nowhere.)

    Its cost is bounded whatever the accounts: two look-ups along the index of userids,
    of at most SUGGESTION_CANDIDATES // 2 rows each (those of the same first letter and
    a length a slip away, nearest the typed one in the order of userids), so at most
    SUGGESTION_CANDIDATES comparisons, each of bounded cost (see pbmserv.spelling).
    A slip in the first letter is not looked for."""
    if not USERID_RE.match(userid):
        return None
    typed = userid.lower()
    slips = allowed_slips(typed)
    first, past = typed[0], chr(ord(typed[0]) + 1)
    lengths = {"shortest": len(typed) - slips, "longest": len(typed) + slips}
    after, before = _NEAR
    near = [*session.scalars(after, {"low": typed, "high": past, **lengths}),
            *session.scalars(before, {"low": first, "high": typed, **lengths})]
    return closest(userid, near)


def authenticate(session: Session, userid: str, password: str, sender: str,
                 now: datetime | None = None, loaded: Iterable[User] = ()) -> User:
    """The account, if the password is right and no throttle holds its checks
    (``loaded``: accounts in the session already, see find_user).

    A wrong password raises a PlayerError naming the throttle keys to charge; the
    caller records the failure outside the command's savepoint, so it sticks.  The
    account's lock does not hold up mail from the account's own address: strangers'
    wrong passwords pause the strangers, not the owner (see pbmserv.service.throttle).
    """
    now = now or utcnow()
    user = find_user(session, userid, loaded) if USERID_RE.match(userid) else None
    keys = (account_key(userid), sender_key(sender))
    own = user is not None and user.email == sender.lower()
    counted = check_not_locked(session, keys, now, exempt=keys[0] if own else None)
    if user is not None and user.disabled_at is not None:
        raise PlayerError(disabled_message(user))
    if user is not None and not is_confirmed(user):
        raise PlayerError(not_confirmed_message(user), owner=(user.userid, user.email))
    if user is None or not check_password(user.password_hash, password):
        # neither word is quoted: in a command written out of order either may be
        # the password
        raise PlayerError(N_(
            "the userid and password do not match (passwords are case-sensitive; the "
            "userid comes first, then the password)"),
            failed_keys=keys,
        )
    if keys[0] in counted and not locked(counted.get(keys[0]), now):
        # the owner's slips are forgiven; a lock stays until its time is up, so that
        # the owner's right password gives no stranger fresh guesses
        record_success(session, keys[0])
    return user


def locked(until: datetime | None, now: datetime) -> bool:
    return until is not None and until > now


#: what each kind of throttled check is called in a refusal, why it is paused, and
#: what the player can do meanwhile
PAUSED = {
    "passwords": (
        "too many wrong passwords have been tried for this account or from your "
        "address, so password checks are paused",
        "Mail from the account's own address is not held up by others' wrong passwords. "
        "If you forgot your password, send 'reset <userid>' for a code; a code still "
        "works while password checks are paused."),
    "reset codes": (
        "too many wrong reset codes have been tried for this account from your "
        "address, so its reset codes are paused",
        "Copy the code from the newest reset mail exactly."),
    "confirmation codes": (
        "too many wrong confirmation codes have been tried for this account from your "
        "address, so its confirmation codes are paused",
        "Reply to the confirmation mail as it is: its Subject is the command."),
}


def check_not_locked(session: Session, keys: tuple[str, str], now: datetime, *,
                     what: str = "passwords", exempt: str | None = None,
                     ) -> dict[str, datetime | None]:
    """The throttle's counts of two keys (the same key twice for a code's); a
    PlayerError saying until when, if either is locked (but ``exempt``).  ``what``
    names the checks: a key of PAUSED."""
    counted = throttled(session, *keys)
    until = max((u for k, u in counted.items() if k != exempt and u is not None
                 and locked(u, now)), default=None)
    if until is not None:
        minutes = max(1, math.ceil((until - now).total_seconds() / 60))
        why, after = PAUSED[what]
        raise PlayerError(
            f"{why} until {until:%Y-%m-%d %H:%M} UTC (about {minutes} "
            f"minute{'s' if minutes != 1 else ''} from now); try again then. {after}")
    return counted


def disabled_message(user: User) -> str:
    return (f"the account {user.userid} is disabled by the server's administrator; "
            "write to them to have it enabled")


def check_enabled(user: User) -> User:
    """``user``, unless the administrator disabled the account, or its address has not
    answered its confirmation mail yet."""
    if user.disabled_at is not None:
        raise PlayerError(disabled_message(user))
    if not is_confirmed(user):
        raise PlayerError(not_confirmed_message(user), owner=(user.userid, user.email))
    return user


def not_confirmed_message(user: User) -> str:
    return (f"the account {user.userid} is not confirmed yet: it works once its address "
            "answers the confirmation mail sent there when it was opened (a reply will do: "
            "its Subject is the command that confirms it)")


def check_userid(userid: str) -> None:
    if not USERID_RE.match(userid):
        raise PlayerError(
            f"{userid!r} cannot be a userid: use 1 to 32 letters, digits, '.', '_', '+' "
            "or '-', starting with a letter or digit"
        )


def check_new_password(password: str) -> None:
    """A PlayerError unless ``password`` may be a new password (it is never quoted)."""
    if not PASSWORD_RE.match(password):
        raise PlayerError(N_("a password may not contain spaces, quotes or colons"))
    if len(password) < MIN_PASSWORD:
        raise PlayerError(f"a new password needs at least {MIN_PASSWORD} characters (the "
                          f"one given has {len(password)}); a few words joined by dashes "
                          "are easy to remember, like 'blue-kettle-seven'")


def check_email(email: str) -> str:
    if len(email) > MAX_ADDRESS:
        raise PlayerError(f"the address {email[:40]}... is {len(email)} characters long; "
                          f"a mail address has at most {MAX_ADDRESS}")
    if not EMAIL_RE.match(email):
        raise PlayerError(f"{email!r} is not a mail address like name@example.org")
    return email.lower()


def closed_account(session: Session, userid: str) -> User | None:
    """The account of ``userid`` closed last, if one was (see ``close_account``)."""
    if not USERID_RE.match(userid):
        return None
    # the keys "userid#closedN", as a range: it follows the index of users.key
    prefix = f"{userid.lower()}#closed"
    return session.scalar(
        select(User).where(User.key >= prefix, User.key < prefix[:-1] + "e",
                           User.closed_at.is_not(None))
        .order_by(User.closed_at.desc(), User.id.desc()).limit(1))


def returning_account(session: Session, userid: str, email: str) -> User | None:
    """The account of ``userid`` that signed off while its mail went to ``email``, if
    one did: a signup of that userid from that address opens it again once confirmed
    (``reopen``)."""
    closed = closed_account(session, userid)
    return closed if closed is not None and closed.email == email.lower() else None


def reopen(session: Session, pending: User, now: datetime) -> User | None:
    """A signup just confirmed (``pending``) of a userid whose account signed off from
    the same address: that account opens again, its finished games, ratings, history
    and page as they were, with the signup's password; the signup's own row is closed
    (it never held anything).  Returns the account opened again, None if there is
    none."""
    old = returning_account(session, pending.userid, pending.email)
    if old is None:
        return None
    key = pending.key
    pending.key = f"{key}#merged{pending.id}"
    pending.closed_at = now
    session.flush()  # the userid is free for the old account again
    old.key, old.userid = key, pending.userid
    old.closed_at = None
    old.password_hash = pending.password_hash
    old.confirmed_at, old.confirm_code_hash = now, None
    old.credential_changes += 1  # reply addresses from before the signoff stay void
    return old


def open_account(session: Session, userid: str, password: str, email: str, *,
                 reserve_days: int = 0, now: datetime | None = None) -> User:
    """A new account.  A userid whose account closed less than ``reserve_days`` ago is
    kept for that account's address: its old boards still name that player."""
    check_userid(userid)
    email = check_email(email)
    if session.scalar(select(User.id).where(User.key == userid.lower())) is not None:
        raise PlayerError(f"the userid {userid!r} is taken; choose another")
    closed = closed_account(session, userid) if reserve_days else None
    if closed is not None and closed.closed_at is not None and closed.email != email:
        free_from = closed.closed_at + timedelta(days=reserve_days)
        if (now or utcnow()) < free_from:
            raise PlayerError(
                f"the userid {userid!r} belonged to a player who signed off on "
                f"{closed.closed_at:%Y-%m-%d}; it stays theirs until {free_from:%Y-%m-%d} "
                "(their finished games still name them): choose another")
    check_new_password(password)
    user = User(key=userid.lower(), userid=userid, password_hash=hash_password(password),
                email=email)
    session.add(user)
    return user


def has_no_password(user: User) -> bool:
    """Whether no password opens the account (one made by an import)."""
    return user.password_hash.startswith("!")


def has_no_address(user: User) -> bool:
    """Whether the account's address reaches nobody (one made by an import)."""
    return user.email.endswith("@" + IMPORTED_DOMAIN)


def set_password(session: Session, user: User, password: str) -> None:
    """A new password; every older way into the account is void (see ``revoke``)."""
    check_new_password(password)
    user.password_hash = hash_password(password)
    revoke(session, user)


def set_address(session: Session, user: User, email: str) -> str:
    """A new address; returns the old one.  Every older way into the account is void
    (see ``revoke``)."""
    old, user.email = user.email, check_email(email)
    if old != user.email:
        revoke(session, user)
    return old


def revoke(session: Session, user: User) -> None:
    """The password or address changed: the account's pending reset code, a new
    address waiting for its confirmation, and every move-by-reply address made for it
    before are void."""
    user.credential_changes += 1
    session.execute(delete(PasswordReset).where(PasswordReset.user_id == user.id))
    if user.new_email is not None:
        user.new_email = user.new_email_at = user.confirm_code_hash = None


def active_boards(session: Session, user: User) -> list[tuple[str, int]]:
    """(game, number) of every board the user still plays, each once."""
    return list(session.execute(
        select(Board.game, Board.number).join(BoardPlayer)
        .where(BoardPlayer.user_id == user.id, Board.status == BoardStatus.ACTIVE)
        .distinct().order_by(Board.game, Board.number)
    ).tuples())


def close_account(session: Session, user: User, now: datetime | None = None) -> None:
    """Close an account that plays no board; its finished games keep their records."""
    active = active_boards(session, user)
    if active:
        names = ", ".join(f"{g} {n}" for g, n in active)
        game, number = active[0]
        raise PlayerError(
            f"{user.userid} still plays {names}; finish or resign them first (to resign "
            f"one: {game} resign {number} {user.userid} <password>; a board you have not "
            f"moved on yet: {game} decline {number} {user.userid} <password>)")
    for seek in session.scalars(select(Seek).where(Seek.user_id == user.id,
                                                   Seek.status == SeekStatus.OPEN)):
        seek.status = SeekStatus.WITHDRAWN
    for watching in session.scalars(select(Subscription).where(Subscription.user_id == user.id)):
        board = session.get(Board, watching.board_id)
        if board is not None:
            board.watchers -= 1
        session.delete(watching)
    session.execute(delete(GameNotify).where(GameNotify.user_id == user.id))
    user.closed_at = now or utcnow()
    # free the userid for someone new; the closed account keeps its games
    user.key = f"{user.key}#closed{user.id}"
