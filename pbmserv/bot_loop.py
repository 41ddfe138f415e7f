"""The bots' worker: it finds boards waiting for a bot, lets the bot think (outside
any transaction, for at most its level's budget of CPU seconds), then plays the move
(or the answer to an offer) and has the notifications mail the board, in one
transaction.  ``pbmserv serve`` runs it in a process of its own at a low priority,
so a bot thinking never delays the intake or the processing of mail; ``pbmserv bots
--loop`` runs it alone.  Nothing of a thought is kept: a restart in the middle of
one thinks again from the board as stored (with the same seed, derived from the
board and the move number), and the move is played only if the board still waits
for it, so it is neither lost nor played twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pbmserv import wakeups
from pbmserv.backoff import backoff
from pbmserv.bots import get_bot
from pbmserv.config import Settings
from pbmserv.db.migrate import SchemaError
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.db.status import RequestKind
from pbmserv.games import get_engine
from pbmserv.notifications import Notifier
from pbmserv.service.bot_turns import BotTurn, due_turns, play_turn
from pbmserv.service.games import GameService

log = logging.getLogger(__name__)
#: a board whose turn failed is tried again after this many seconds, then twice as
#: long after each further failure, up to RETRY_MOST: it never keeps the others waiting
RETRY_FIRST = 10.0
RETRY_MOST = 3600.0
#: while the database does not answer, the first wait and the longest, in seconds
DOWN_FIRST = 1.0
DOWN_MOST = 60.0


def seed_of(turn: BotTurn) -> int:
    """The bot's seed for a turn: the same board and move always give the same one."""
    return turn.board_id * 100_003 + turn.ply


def take_turn(db: Database, settings: Settings, turn: BotTurn) -> bool:
    """Think about one turn and play it; False if the board moved on meanwhile."""
    engine = get_engine(turn.game)
    bot = get_bot(turn.bot)
    if engine is None or bot is None:
        log.error("board %s waits for bot %r in game %r, which is unknown", turn.board_id,
                  turn.bot, turn.game)
        return False
    position = engine.load(turn.position, turn.position_version)
    move: str | None = None
    accept: bool | None = None
    if turn.request is RequestKind.DRAW:
        accept = bot.accepts_draw(engine, position, turn.seat, plies=turn.ply)
    elif turn.request is RequestKind.UNDO:
        accept = bot.accepts_undo(engine, position, turn.seat)
    else:
        move = bot.choose(engine, position, seed=seed_of(turn))
    with db.transaction(lazy=True) as session:
        service = GameService(session)
        played = play_turn(service, turn, move=move, accept=accept)
        if played:
            # the bot answers its person's move: their board mail is never held
            Notifier(session, settings, asked=True).notify(service.events)
    return played


class BotLoop:
    def __init__(self, db: Database, settings: Settings, *, interval: float = 1.0) -> None:
        self.db = db
        self.settings = settings
        self.interval = interval
        self.stopping = wakeups.Stop()
        #: boards whose turn failed: (failures in a row, when to try again)
        self.failing: dict[int, tuple[int, float]] = {}

    def once(self) -> int:
        """Every turn due now; returns how many were played."""
        now = time.monotonic()
        waiting = {board for board, (_, when) in self.failing.items() if when > now}
        with self.db.reading() as session:
            turns = due_turns(session, skip=waiting)
        played = 0
        for turn in turns:
            if self.stopping.is_set():
                break
            try:
                if take_turn(self.db, self.settings, turn):
                    played += 1
                    wakeups.ring(self.db.url, wakeups.WORKER)  # its mail goes out now
                self.failing.pop(turn.board_id, None)
            except Exception:
                failures = self.failing.get(turn.board_id, (0, 0.0))[0] + 1
                delay = min(RETRY_FIRST * 2 ** (failures - 1), RETRY_MOST)
                self.failing[turn.board_id] = (failures, time.monotonic() + delay)
                log.exception("bot turn on board id %s failed (%d time(s) in a row); tried "
                              "again in %.0f s", turn.board_id, failures, delay)
        return played

    def run(self, before: Callable[[], object] | None = None) -> None:
        """Turns as they come: woken by the doorbell when a board turns to a bot (see
        pbmserv.wakeups), and every ``interval`` seconds anyway; ``before`` first (the
        schema made sure of).  A database that does not answer is said once, at
        WARNING, and tried again after a wait that grows (RETRY_FIRST to DOWN_MOST): the
        process neither ends nor fills the log while it is down."""
        bell = wakeups.Doorbell(self.db.url, wakeups.BOTS)
        if not bell.listening:
            log.info("bots: another process listens for bot turns; looking every %ss",
                     self.interval)
        ready = before is None
        down = 0
        try:
            while not self.stopping.is_set():
                try:
                    if not ready and before is not None:
                        before()
                        ready = True
                    played = self.once()
                except SchemaError:
                    raise  # not something a wait mends
                except Exception as exc:
                    down += 1
                    wait = backoff(down, DOWN_FIRST, DOWN_MOST)
                    (log.warning if down == 1 else log.debug)(
                        "bots: %s; trying again in %.0f s, then less often (said once)",
                        describe(exc, self.db.url), wait)
                    self.stopping.wait(wait)
                    continue
                if down:
                    log.warning("bots: the database answers again; answering the games")
                    down = 0
                if not played and not self.stopping.is_set():
                    self._wait(bell)
        finally:
            bell.close()

    def _wait(self, bell: wakeups.Doorbell) -> None:
        fds = [fd for fd in (bell.fileno(), self.stopping.fileno()) if fd is not None]
        ready = wakeups.readable(fds, self.interval)
        if bell.fileno() in ready:
            bell.drain()

    def stop(self) -> None:
        self.stopping.set()
        wakeups.ring(self.db.url, wakeups.BOTS)  # out of its wait at once
