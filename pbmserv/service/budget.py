"""The work one mail may make the server do: a budget, charged before the work is done.

Most commands cost about the same whatever they hold.  The few whose work grows with
what a mail asks for, or with a game's length, charge the mail's budget first: moves
the engine applies (a preview, a queue checked, a position replayed to look back), a
board's legal moves listed, a record written, a history or a board's move list
written out.  A command that no longer fits is refused with a reply naming the limit
and how to ask for less; the commands before it stand, and every later one is
refused the same way (the reply folds them into one).

Work is counted in units: one is about what the engine takes to check and apply one
Amoeba move (some 0.1 ms here).  Each cost below comes from the figures of
bench/attacks.py (docs/benchmarks.md); the setting ``work_per_mail`` is the budget
of one mail (docs/admin.md, "Limits").
"""

from __future__ import annotations

from pbmserv.service.errors import PlayerError

#: what checking and applying one move costs, by game (the others: DEFAULT_MOVE_COST);
#: an Ex nihilo move works out its steps and hostages, and whether the game is over,
#: in some 4 ms on the large board (a move replayed, known legal, costs less: it is
#: charged the same)
MOVE_COSTS = {"exnihilo": 40}
DEFAULT_MOVE_COST = 1
#: listing a board's legal moves (Amoeba's 1,098 opening moves: some 7 ms)
MOVES_LIST_COST = 80
#: a player's history: up to 100 finished boards (some 13 ms; 22 ms of the worker's
#: with PostgreSQL)
HISTORY_COST = 200
#: a game's standings and its rating list, read once a mail: they grow with the
#: server's finished boards (some 20 ms each with 2,000 of them)
STANDINGS_COST = 200
RATINGS_COST = 200
#: the boards waiting for a player's move: up to 100, each with its clock and last move
TURNS_COST = 200
#: moves of a record written for one unit (text or JSON, with times and comments)
RECORD_MOVES_PER_UNIT = 2
#: moves of a board's move list written for one unit ('show' with every move)
LISTED_MOVES_PER_UNIT = 10


def move_cost(game: str) -> int:
    """The units one move of ``game`` costs to check and apply."""
    return MOVE_COSTS.get(game, DEFAULT_MOVE_COST)


def moves_within(game: str, units: int) -> int:
    """How many moves of ``game`` the engine may apply for ``units``."""
    return units // move_cost(game)


class WorkBudget:
    """What one mail may still cost; ``charge`` before the work is done."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    @property
    def left(self) -> int:
        return self.limit - self.spent

    def charge(self, units: int, what: str, *, less: str = "") -> None:
        """Count ``units`` of work for ``what`` (words that begin a sentence: "a
        preview of 55 moves"); a PlayerError if they do not fit, saying the limit and,
        in ``less``, how to ask for less."""
        if units <= self.left:
            self.spent += units
            return
        scale = ("a unit is about the work of one Amoeba move; an Ex nihilo move costs "
                 f"{move_cost('exnihilo')}")
        if units > self.limit:
            raise PlayerError(f"{what} would take {units:,} units of work, more than one "
                              f"mail may make the server do ({self.limit:,} units; "
                              f"{scale}). {less}".rstrip())
        raise PlayerError(f"{what} would take {units:,} units of work, and the commands "
                          f"before it in this mail have used {self.spent:,} of the "
                          f"{self.limit:,} one mail may make the server do ({scale}): "
                          "send it again in a mail of its own, or with fewer commands")

    def moves(self, game: str, count: int, what: str, *, less: str = "") -> None:
        """Charge ``count`` moves of ``game`` applied by the engine."""
        self.charge(count * move_cost(game), what, less=less)
