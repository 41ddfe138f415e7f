"""Built-in opponents: bots that see a game only through its engine.

    bot = get_bot("bot2")
    text = bot.choose(engine, pos, seed=42)          # canonical move notation
    bot.accepts_draw(engine, pos, seat, plies=n)      # agree to end the game now?
    bot.accepts_undo(engine, pos, seat)               # let the opponent take back?

``random`` plays any legal move; ``bot1``..``bot3`` search (Monte Carlo tree search,
or alpha-beta in Amoeba) with the game's own knowledge, on growing budgets
(``LEVELS``).  The package is pure: it imports only the standard library and ``pbmserv.games``.
"""

from __future__ import annotations

from pbmserv.bots.match import (
    DEFAULT_MAX_PLIES,
    GameRecord,
    MatchResult,
    MoveTimes,
    play_game,
    play_match,
)
from pbmserv.bots.players import (
    DRAW_MARGIN,
    DRAW_PLIES,
    LEVELS,
    Bot,
    Decision,
    Level,
    RandomBot,
    SearchBot,
)

BOTS: dict[str, Bot] = {"random": RandomBot(), **{lv.name: SearchBot(lv) for lv in LEVELS}}
BOT_NAMES: tuple[str, ...] = tuple(BOTS)


def get_bot(name: str) -> Bot | None:
    """The bot called ``name`` (case does not matter), or None."""
    return BOTS.get(name.strip().lower())


__all__ = [
    "BOTS",
    "BOT_NAMES",
    "DEFAULT_MAX_PLIES",
    "DRAW_MARGIN",
    "DRAW_PLIES",
    "LEVELS",
    "Bot",
    "Decision",
    "GameRecord",
    "Level",
    "MatchResult",
    "MoveTimes",
    "RandomBot",
    "SearchBot",
    "get_bot",
    "play_game",
    "play_match",
]
