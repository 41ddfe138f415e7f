"""Mail commands: one small class each, found by name through the registry built
from the one list of them (pbmserv.commands.registry).

A command parses its words, logs the player in, calls the game service and
describes the result; it never changes a board itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.orm import Session

from pbmserv.commands.args import attach_numbers, is_board_ref
from pbmserv.config import Settings
from pbmserv.db.models import Board, User
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.i18n import N_
from pbmserv.mail.addresses import address_key
from pbmserv.mail.quotes import mask_addresses
from pbmserv.notifications.replies import BoardAnswer
from pbmserv.service.accounts import authenticate
from pbmserv.service.budget import WorkBudget
from pbmserv.service.errors import PlayerError
from pbmserv.service.events import Event
from pbmserv.service.games import GameService
from pbmserv.service.limits import MailsToOthers
from pbmserv.spelling import closest

MASK = "*****"


@dataclass
class Result:
    """What one command did: reply text, and the subject it suggests for the reply."""

    text: str
    subject: str | None = None
    #: the board the reply shows, if one: a reader to move on it may answer by reply
    board: Board | None = None
    #: a command that changed ``board`` says so in plain values, in place of ``text``:
    #: its reply is rendered from the board's view, with the board's mails
    answer: BoardAnswer | None = None


@dataclass
class Context:
    session: Session
    settings: Settings
    sender: str
    service: GameService
    #: every mail command (``help`` lists them)
    commands: Registry
    #: the stored mail being run (its outbox rows say so), if any
    inbound_id: int | None = None
    #: the mail's comment as written (read ``comment``: passwords masked)
    raw_comment: str = ""
    #: passwords given in this mail's commands: never shown to anyone
    passwords: set[str] = field(default_factory=set)
    #: successful logins so far: a command that logged in had its words in order
    logins: int = 0
    #: where the running command's events begin in ``service.events``
    events_mark: int = 0
    #: whether the sender's address is no open account's (None: not asked yet)
    stranger: bool | None = None
    #: the reply carries a live one-time code: its outbox copy is blanked once sent
    secret_reply: bool = False
    #: the mails to others than the sender this mail may make (None: no limit)
    others: MailsToOthers | None = None
    #: the accounts this mail proved to be, by a password or a reply address, in the
    #: order it did: their address_key -> their address (the reply may go there)
    proved: dict[str, str] = field(default_factory=dict)
    #: the mail's Reply-To when it names another mailbox than the sender's (the reply
    #: goes there if the mail proves it is an account's): "" for none
    named_reply_to: str = ""
    #: the work the mail may still make the server do (pbmserv.service.budget)
    budget: WorkBudget = field(init=False)
    #: the language the mail's Content-Language names (pbmserv.i18n), if one is shipped:
    #: a new account's (signup), and the reply's where the sender chose none
    language: str | None = None
    #: a game's tables this mail has read (standings, ratings): read once a mail
    looked_up: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: the tag of the move-by-reply address the mail was sent to, if any: it stands
    #: for the password of its player where a command takes it so ('challenge')
    reply_tag: str | None = None

    def __post_init__(self) -> None:
        self.budget = WorkBudget(self.settings.work_per_mail)

    def mail_others(self, addresses: Iterable[str]) -> str | None:
        """Count the unasked mails a command is about to make to ``addresses`` (but to
        the sender, or to an account the mail proved it speaks for); a PlayerError
        (before it acts) when that is more than the mail may make.  Returns the
        sender's key for the outbox (its ``cause``) if any of them counts."""
        if self.others is None:
            return None
        counted = [a for a in addresses if address_key(a) not in self.proved]
        self.others.take(self.session, counted, self.service.now)
        return self.others.sender if self.others.others(counted) else None

    def replies_to(self, address: str) -> bool:
        """Whether the reply surely goes to ``address``: the sender's, with no Reply-To
        naming another mailbox (what is for an account's eyes alone may go in it)."""
        return not self.named_reply_to and address_key(address) == address_key(self.sender)

    def logged_in(self, user: User) -> None:
        """``user``'s password (or reply address) was right: the command's words were
        in order, and the mail is that account's."""
        self.logins += 1
        self.proved.setdefault(address_key(user.email), user.email)

    @property
    def comment(self) -> str:
        """The comment for others to read: the writer's passwords and every e-mail
        address masked (it goes to the opponent, the web pages and the records)."""
        return mask_addresses(mask_words(self.raw_comment, self.passwords))

    def new_events(self) -> list[Event]:
        """The events of the command that is running."""
        return self.service.events[self.events_mark:]


def mask_words(text: str, secrets: set[str]) -> str:
    """``text`` with every whole-word occurrence of a secret replaced by *****."""
    for secret in sorted(secrets, key=len, reverse=True):
        # a secret that is not in the text at all cannot be a word of it (the common
        # case: every mail's subject, text and HTML part is scrubbed)
        if secret and secret in text:
            text = re.sub(rf"(?<!\S){re.escape(secret)}(?!\S)", MASK, text)
    return text


def login(ctx: Context, userid: str, password: str, loaded: Iterable[User] = ()) -> User:
    """The account of ``userid``, if ``password`` is right (see accounts.authenticate;
    ``loaded``: accounts the command has loaded already)."""
    ctx.passwords.add(password)
    user = authenticate(ctx.session, userid, password, ctx.sender, loaded=loaded)
    ctx.logged_in(user)
    return user


@dataclass(frozen=True)
class Invocation:
    """One command line, split: ``game`` is set for game commands (``amoeba move ...``)."""

    line: str
    verb: str
    args: list[str]
    game: AnyEngine | None = None

    @property
    def engine(self) -> AnyEngine:
        assert self.game is not None, "a per-game command always has its game"
        return self.game


class Command:
    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    #: the arguments after the verb, as shown in usage lines
    arguments: ClassVar[str] = ""
    summary: ClassVar[str]
    #: written after a game name: ``<game> <verb> ...``
    per_game: ClassVar[bool] = False
    #: indexes (into args) of passwords, masked whenever a command is quoted
    secret_args: ClassVar[tuple[int, ...]] = ()
    #: the fewest and most arguments accepted (None: no upper bound)
    min_args: ClassVar[int] = 0
    max_args: ClassVar[int | None] = None
    #: indexes (into args) of words that take a ``#n``, which may be written apart
    numbered_args: ClassVar[tuple[int, ...]] = ()

    def usage(self, game: str = "game") -> str:
        head = f"{game} {self.name}" if self.per_game else self.name
        return f"{head} {self.arguments}".strip()

    def secrets(self, inv: Invocation) -> tuple[int, ...]:
        return self.secret_args

    def masked(self, inv: Invocation) -> str:
        hidden = self.secrets(inv)
        args = [MASK if i in hidden else a for i, a in enumerate(inv.args)]
        head = [inv.game.name, inv.verb] if inv.game else [inv.verb]
        return " ".join(head + args)

    def check_arity(self, inv: Invocation) -> None:
        n = len(inv.args)
        if self.arguments.startswith("board ") and not (
                inv.args and (is_board_ref(inv.args[0]) or inv.args[0][:1].isdigit())):
            # no word is quoted: in a command out of order any may be a password
            game = inv.game.name if inv.game else "game"
            raise PlayerError(
                f"the board number is missing: it comes right after {inv.verb!r}, like "
                f"'{game} {inv.verb} 101 ...'; '{game} games <userid>' lists your boards",
                usage=True, verb_only=True)
        if n < self.min_args:
            more = "" if self.max_args == self.min_args else " or more"
            raise PlayerError(f"too few words after {inv.verb!r}: it needs "
                              f"{self.min_args}{more}, this has {n}", usage=True, verb_only=True)
        if self.max_args is not None and n > self.max_args:
            raise PlayerError(f"too many words after {inv.verb!r}: it takes at most "
                              f"{self.max_args}, this has {n}", usage=True, verb_only=True)

    def run(self, ctx: Context, inv: Invocation) -> Result:
        raise NotImplementedError


class Registry:
    """The mail commands by name: built once from the one list of them
    (pbmserv.commands.registry)."""

    def __init__(self, commands: Iterable[type[Command]]) -> None:
        self.by_name: dict[tuple[bool, str], Command] = {}
        #: one instance of each command, in the list's order (help lists them so)
        self.commands: list[Command] = []
        for cls in commands:
            instance = cls()
            for word in (cls.name, *cls.aliases):
                key = (cls.per_game, word)
                if key in self.by_name:
                    raise ValueError(f"command {word!r} registered twice")
                self.by_name[key] = instance
            self.commands.append(instance)

    def get(self, word: str) -> Command | None:
        """The command a help topic names: a plain command first, else a game's."""
        return self.by_name.get((False, word)) or self.by_name.get((True, word))

    def per_game(self) -> list[Command]:
        return [c for c in self.commands if c.per_game]

    def lookup(self, line: str) -> tuple[Command, Invocation]:
        """The command a line names; raises PlayerError saying what is unknown."""
        words = line.split()
        if not words:
            raise PlayerError(N_("the command line is empty"))
        first = words[0].lower()
        engine = get_engine(first)
        if engine is not None:
            verb = words[1].lower() if len(words) > 1 else "help"
            found = self.by_name.get((True, verb))
            if found is None:
                names = [c.name for c in self.per_game()]
                guess = closest(verb, names)
                meant = f" (did you mean '{engine.name} {guess}'?)" if guess else ""
                raise PlayerError(f"{engine.name} has no command {words[1][:40]!r}{meant}; "
                                  f"its commands are: {', '.join(names)}")
            return found, Invocation(line, verb, attach_numbers(words[2:], found.numbered_args),
                                     engine)
        found = self.by_name.get((False, first))
        if found is None:
            raise PlayerError(f"{words[0][:40]!r} is neither a command nor a game"
                              f"{self._did_you_mean(words)}; send 'help' for the list")
        return found, Invocation(line, first, attach_numbers(words[1:], found.numbered_args))

    def _did_you_mean(self, words: list[str]) -> str:
        """A guess at what an unknown first word meant: a game (``amoebe``), a command
        (``sigup``), or a game's command written without the game (``mvoe``)."""
        plain = [c.name for c in self.commands if not c.per_game]
        guess = closest(words[0], [*ENGINES, *plain])
        if guess is not None:
            return f" (did you mean {guess!r}?)"
        per_game = [c.name for c in self.per_game()]
        guess = words[0].lower() if words[0].lower() in per_game else closest(words[0], per_game)
        if guess is not None:
            return (f" (did you mean '<game> {guess}'? a game's commands begin with its name, "
                    f"like '{next(iter(ENGINES))} {guess}')")
        return ""

    def is_command(self, line: str) -> bool:
        words = line.split()
        return bool(words) and (
            get_engine(words[0]) is not None or (False, words[0].lower()) in self.by_name
        )
