"""Tournaments by mail: players join, the server pairs them and starts the boards.

- A tournament is created by a player (who joins it at once), takes players while
  open, and starts when its creator says so or when ``max_players`` have joined.
  Seeds: rating in the game (best first; no rating counts as 1500), then the order
  of joining.
- Round robin: every pair meets once (twice with ``double``, once with each player
  first); all its boards start at once, the rounds only group them.
- Swiss: a round is paired (pbmserv.tournaments.pair_swiss) when every board of the
  one before has finished; a bye scores 1.  The number of rounds is fixed at the
  start: as given, or the fewest that can single out a winner (log2 of the players,
  rounded up), and never more than the players can play without meeting twice.
- Tournament boards are started through the game service like any board (clocks,
  events, board mails) but without the players' challenge preferences: joining was
  their consent.  They are rated like any board.
- A player who leaves after the start (or signs off) loses every game of the
  tournament still in play, and is not paired again.  A declined tournament board
  is lost by the player who declined it (and, like any declined board, not rated).
- Every end of a tournament board reaches ``board_finished``, which follows the
  GameFinished events the game service records (listed in
  pbmserv.service.followers): it records the board's score and moves the
  tournament on.

Tournament events (TournamentStarted, RoundStarted, TournamentFinished) are recorded
through the game service; pbmserv.notifications mails the players.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.db.models import (
    Board,
    PlayerRating,
    Tournament,
    TournamentGame,
    TournamentPlayer,
    User,
)
from pbmserv.db.status import BoardStatus, TournamentStatus
from pbmserv.games import AnyEngine, get_engine
from pbmserv.games.base import Outcome, RuleError, Termination
from pbmserv.i18n import N_
from pbmserv.ratings import Rating
from pbmserv.service.clock import check_clock_days
from pbmserv.service.errors import PlayerError
from pbmserv.service.events import (
    GameFinished,
    RoundStarted,
    TournamentFinished,
    TournamentStarted,
)
from pbmserv.service.ratings import first_score
from pbmserv.tournaments import (
    BYE_POINTS,
    Crosstable,
    Pairing,
    PairingError,
    TieBreak,
    TournamentKind,
    crosstable,
    pair_swiss,
    round_robin,
    standings,
    swiss_players,
)

if TYPE_CHECKING:  # the game service calls board_finished (pbmserv.service.followers)
    from pbmserv.service.games import GameService

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}$")
MIN_PLAYERS = 2
#: the most players a tournament takes (a double round robin of 32 is 992 boards)
MAX_PLAYERS = 32
MAX_ROUNDS = 31
#: boards a tournament's start makes in one transaction; the rest are made in steps
#: of as many (``start_waiting_boards``, run by the worker between mails), so that a
#: round robin of 992 boards never holds the database's write lock for long
START_STEP = 16


#: after the name of a player who left, in the standings
LEFT_MARK = " (left)"


@dataclass(frozen=True)
class Setup:
    """How a tournament is to be played, as its creator asked."""

    kind: TournamentKind
    flags: tuple[str, ...] = ()
    rounds: int | None = None
    double: bool = False
    max_players: int | None = None
    nag_days: int = 7
    forfeit_days: int = 21


@dataclass(frozen=True)
class Entry:
    """One board of a round, or a bye."""

    round: int
    board: int | None
    first: str
    second: str | None
    #: the first player's score, None while the board is in play
    score: float | None

    @property
    def result(self) -> str:
        if self.second is None:
            return "bye"
        if self.score is None:
            return "in play"
        return {1.0: "1-0", 0.0: "0-1"}.get(self.score, "1/2-1/2")


@dataclass(frozen=True)
class View:
    """A tournament as players read it."""

    tournament: Tournament
    engine: AnyEngine
    #: userids in seed order (join order while the tournament is open)
    players: tuple[str, ...]
    withdrawn: tuple[str, ...]
    entries: tuple[Entry, ...]
    #: None while the tournament is open
    table: Crosstable | None
    #: the player(s) ranked first (equal in points, tie-break and wins)
    leaders: tuple[str, ...]

    def round(self, number: int) -> list[Entry]:
        return [e for e in self.entries if e.round == number]

    @property
    def rounds(self) -> list[int]:
        return sorted({e.round for e in self.entries})


def tournament_engine(name: str) -> AnyEngine:
    engine = get_engine(name)
    if engine is None:
        raise LookupError(f"game {name!r} is not installed")
    return engine


def find(session: Session, name: str, *, lock: bool = False) -> Tournament:
    query = select(Tournament).where(Tournament.key == name.lower())
    if lock:
        query = query.with_for_update(of=Tournament).execution_options(populate_existing=True)
    found = session.scalar(query) if NAME_RE.match(name) else None
    if found is None:
        raise PlayerError(f"there is no tournament {name[:40]!r}; 'tournament list' lists "
                          "the newest")
    return found


def entrants(session: Session, tournament: Tournament) -> list[TournamentPlayer]:
    """The players, in seed order (join order before the start)."""
    return list(session.scalars(
        select(TournamentPlayer).where(TournamentPlayer.tournament_id == tournament.id)
        .order_by(TournamentPlayer.seed, TournamentPlayer.joined_at, TournamentPlayer.user_id)))


def games_of(session: Session, tournament: Tournament) -> list[TournamentGame]:
    return list(session.scalars(
        select(TournamentGame).where(TournamentGame.tournament_id == tournament.id)
        .order_by(TournamentGame.round, TournamentGame.id)))


def pairings(games: Sequence[TournamentGame]) -> list[Pairing[int]]:
    return [Pairing(g.round, g.first_id, g.second_id,
                    None if g.second_id is None else g.score) for g in games]


def describe(session: Session, tournament: Tournament, *,
             through_round: int | None = None) -> View:
    """The tournament as players read it; ``through_round``: its standings as they
    stood after that round (a round's mail: not with that round's byes yet)."""
    engine = tournament_engine(tournament.game)
    players = entrants(session, tournament)
    names = {p.user_id: p.user.userid for p in players}
    games = games_of(session, tournament)
    numbers = dict(session.execute(
        select(Board.id, Board.number).where(Board.id.in_(
            [g.board_id for g in games if g.board_id is not None]))).tuples().all())
    entries = tuple(Entry(g.round, numbers.get(g.board_id) if g.board_id else None,
                          names[g.first_id], names.get(g.second_id) if g.second_id else None,
                          g.score) for g in games)
    table = None
    leaders: tuple[str, ...] = ()
    if tournament.status is not TournamentStatus.OPEN:
        seats = engine.seats
        keys = [p.user_id for p in players]
        counted = [g for g in games if through_round is None or g.round <= through_round]
        # a player who left is marked in the standings
        left = {p.user_id for p in players if p.withdrawn_at is not None}
        table = crosstable(keys, pairings(counted), tournament.kind,
                           name=lambda uid: names[uid] + (LEFT_MARK if uid in left else ""),
                           seats=(seats[0], seats[1]))
        tiebreak = (TieBreak.SONNEBORN_BERGER if tournament.kind is TournamentKind.ROUND_ROBIN
                    else TieBreak.BUCHHOLZ)
        leaders = tuple(names[s.player] for s in standings(keys, pairings(counted), tiebreak)
                        if s.rank == 1)
    return View(tournament, engine, tuple(p.user.userid for p in players),
                tuple(p.user.userid for p in players if p.withdrawn_at is not None),
                entries, table, leaders)


def tournament_score(board: Board, by: int | None) -> float:
    """The first player's score on a finished tournament board; a decline is lost by
    the player who declined."""
    score = first_score(board)
    if score is not None:
        return score
    if board.termination is Termination.DECLINED and by is not None:
        return 0.0 if by == 0 else 1.0
    return 0.5


class TournamentService:
    """Creating, joining, leaving and starting tournaments; pairing their rounds."""

    def __init__(self, games: GameService) -> None:
        self.games = games
        self.session = games.session

    # -- before the start -----------------------------------------------------------------
    def create(self, user: User, name: str, engine: AnyEngine, setup: Setup) -> Tournament:
        if not NAME_RE.match(name):
            raise PlayerError(f"{name[:40]!r} cannot be a tournament's name: use 1 to 32 "
                              "letters, digits, '.', '_', '+' or '-', starting with a letter "
                              "or digit")
        if self.session.scalar(select(Tournament.id).where(Tournament.key == name.lower())):
            raise PlayerError(f"there is a tournament {name!r} already; choose another name")
        try:
            options = engine.check_options(setup.flags)
        except RuleError as exc:
            raise PlayerError(str(exc)) from None
        check_clock_days(setup.nag_days, setup.forfeit_days)
        swiss = setup.kind is TournamentKind.SWISS
        if setup.double and swiss:
            raise PlayerError(N_("-double is for a round robin; a Swiss tournament sets its "
                              "length with -rounds N"), usage=True)
        if setup.rounds is not None and not swiss:
            raise PlayerError(N_("-rounds is for a Swiss tournament; in a round robin everyone "
                              "meets everyone (-double: twice)"), usage=True)
        if setup.rounds is not None and not 1 <= setup.rounds <= MAX_ROUNDS:
            raise PlayerError(f"a Swiss tournament has 1 to {MAX_ROUNDS} rounds")
        if setup.max_players is not None and not MIN_PLAYERS <= setup.max_players <= MAX_PLAYERS:
            raise PlayerError(f"-max is {MIN_PLAYERS} to {MAX_PLAYERS} players")
        now = self.games.now
        tournament = Tournament(
            key=name.lower(), name=name, game=engine.name, kind=setup.kind,
            double=setup.double, rounds=setup.rounds, max_players=setup.max_players,
            options=" ".join(options), nag_days=setup.nag_days,
            forfeit_days=setup.forfeit_days, creator_id=user.id,
            status=TournamentStatus.OPEN, current_round=0, created_at=now)
        self.session.add(tournament)
        self.session.flush()  # the tournament's id, for its first player
        self.session.add(TournamentPlayer(tournament_id=tournament.id, user_id=user.id,
                                          joined_at=now))
        return tournament

    def join(self, name: str, user: User) -> Tournament:
        """Join an open tournament; it starts at once when that makes ``max_players``."""
        tournament = find(self.session, name, lock=True)
        self._check_open(tournament, "join")
        players = entrants(self.session, tournament)
        if any(p.user_id == user.id for p in players):
            raise PlayerError(f"{user.userid} has joined {tournament.name} already")
        limit = tournament.max_players or MAX_PLAYERS
        if len(players) >= limit:
            raise PlayerError(f"{tournament.name} is full ({limit} players)")
        self.session.add(TournamentPlayer(tournament_id=tournament.id, user_id=user.id,
                                          joined_at=self.games.now))
        if tournament.max_players is not None and len(players) + 1 >= tournament.max_players:
            self._begin(tournament)
        return tournament

    def start(self, name: str, user: User) -> Tournament:
        tournament = find(self.session, name, lock=True)
        self._check_open(tournament, "start")
        creator = tournament.creator
        if creator.id != user.id and creator.closed_at is None:
            raise PlayerError(f"only {creator.userid}, who created {tournament.name}, may "
                              "start it")
        count = len(entrants(self.session, tournament))
        if count < MIN_PLAYERS:
            raise PlayerError(f"{tournament.name} has {count} player(s); it needs at least "
                              f"{MIN_PLAYERS} to start")
        self._begin(tournament)
        return tournament

    def _check_open(self, tournament: Tournament, verb: str) -> None:
        if tournament.status is TournamentStatus.RUNNING:
            raise PlayerError(f"{tournament.name} has started already, so you cannot {verb} "
                              "it now")
        if tournament.status is TournamentStatus.FINISHED:
            raise PlayerError(f"{tournament.name} is over")

    # -- leaving ----------------------------------------------------------------------------
    def leave(self, name: str, user: User, *, comment: str = "") -> Tournament:
        """Leave a tournament: before the start, just that; after it, every game still
        in play is lost and the player is paired no more (``comment``: goes with each
        of those boards' end to the opponent)."""
        tournament = find(self.session, name)
        if tournament.status is TournamentStatus.FINISHED:
            raise PlayerError(f"{tournament.name} is over")
        self._withdraw(tournament, user, "left", comment=comment)
        return tournament

    def leave_all(self, user: User) -> list[Tournament]:
        """Leave every tournament not yet over (a player signing off)."""
        query = (select(Tournament).join(TournamentPlayer)
                 .where(TournamentPlayer.user_id == user.id,
                        TournamentPlayer.withdrawn_at.is_(None),
                        Tournament.status != TournamentStatus.FINISHED)
                 .order_by(Tournament.id))
        left = list(self.session.scalars(query))
        for tournament in left:
            self._withdraw(tournament, user, "signed off, leaving")
        return left

    def _withdraw(self, tournament: Tournament, user: User, how: str, *,
                  comment: str = "") -> None:
        # the boards first, then the tournament: the order a finishing move takes them in
        boards = list(self.session.scalars(
            select(Board).join(TournamentGame, TournamentGame.board_id == Board.id)
            .where(TournamentGame.tournament_id == tournament.id,
                   Board.status == BoardStatus.ACTIVE,
                   (TournamentGame.first_id == user.id) | (TournamentGame.second_id == user.id))
            .order_by(Board.id).with_for_update(of=Board)))
        tournament = find(self.session, tournament.name, lock=True)
        entry = self.session.get(TournamentPlayer, (tournament.id, user.id))
        if entry is None:
            raise PlayerError(f"{user.userid} does not play in {tournament.name}")
        if tournament.status is TournamentStatus.OPEN:
            self.session.delete(entry)
            return
        if entry.withdrawn_at is not None:
            raise PlayerError(f"{user.userid} has left {tournament.name} already")
        entry.withdrawn_at = self.games.now
        for board in boards:
            seat = next(p.seat for p in board.players if p.user_id == user.id)
            self.games.finish(board, Outcome(
                1 - seat, Termination.RESIGNATION,
                f"{user.userid} {how} tournament {tournament.name}, which counts as a "
                "resignation"), by=seat, comment=comment or None)

    # -- running ------------------------------------------------------------------------------
    def _begin(self, tournament: Tournament) -> None:
        players = self._seed(tournament)
        tournament.status = TournamentStatus.RUNNING
        tournament.started_at = self.games.now
        self.games._record(TournamentStarted(board_id=None, tournament_id=tournament.id))
        users = [p.user for p in players]
        if tournament.kind is TournamentKind.ROUND_ROBIN:
            schedule = round_robin(users, double=tournament.double)
            # every game is paired now; the boards come START_STEP at a time
            self.session.add_all(
                TournamentGame(tournament_id=tournament.id, round=number, first_id=first.id,
                               second_id=second.id)
                for number, pairs in enumerate(schedule, start=1) for first, second in pairs)
            tournament.current_round = len(schedule)
            self.start_waiting(tournament, START_STEP)
        else:
            possible = len(users) - 1 + len(users) % 2
            wanted = tournament.rounds or max(1, math.ceil(math.log2(len(users))))
            tournament.rounds = min(wanted, possible)
            self._pair(tournament, 1)

    def _seed(self, tournament: Tournament) -> list[TournamentPlayer]:
        players = entrants(self.session, tournament)
        ratings = dict(self.session.execute(
            select(PlayerRating.user_id, PlayerRating.rating).where(
                PlayerRating.game == tournament.game,
                PlayerRating.user_id.in_([p.user_id for p in players]))).tuples().all())
        start = Rating().rating
        ordered = sorted(players, key=lambda p: -ratings.get(p.user_id, start))  # stable
        for seed, player in enumerate(ordered, start=1):
            player.seed = seed
        return ordered

    def _board(self, tournament: Tournament, number: int, first: User, second: User) -> None:
        game = TournamentGame(tournament_id=tournament.id, round=number, first_id=first.id,
                              second_id=second.id)
        self.session.add(game)
        self._start(tournament, game, first, second)

    def _start(self, tournament: Tournament, game: TournamentGame, first: User,
               second: User) -> None:
        board = self.games.start_agreed(
            tournament_engine(tournament.game), [first, second], tournament.option_flags,
            nag_days=tournament.nag_days, forfeit_days=tournament.forfeit_days,
            tournament=tournament.name, round_=game.round)
        game.board_id = board.id

    def start_waiting(self, tournament: Tournament, limit: int) -> int:
        """Start up to ``limit`` boards of the tournament's games paired but not yet
        started (a round robin's start comes in steps); returns how many games were
        settled.  A game of a player who left meanwhile gets no board: it is lost by
        the one who left (drawn, if both did)."""
        waiting = list(self.session.scalars(
            select(TournamentGame).where(TournamentGame.tournament_id == tournament.id,
                                         TournamentGame.board_id.is_(None),
                                         TournamentGame.second_id.is_not(None),
                                         TournamentGame.score.is_(None))
            .order_by(TournamentGame.round, TournamentGame.id).limit(limit)))
        if not waiting:
            return 0
        entries = {p.user_id: p for p in entrants(self.session, tournament)}
        forfeited = False
        for game in waiting:
            first, second = entries[game.first_id], entries[game.second_id or 0]
            gone = (first.withdrawn_at is not None, second.withdrawn_at is not None)
            if any(gone):
                game.score = 0.5 if all(gone) else (0.0 if gone[0] else 1.0)
                forfeited = True
                continue
            self._start(tournament, game, first.user, second.user)
        if forfeited:
            self.advance(tournament)
        return len(waiting)

    def _pair(self, tournament: Tournament, number: int) -> None:
        """Pair Swiss round ``number`` among the players still in, and start it."""
        active = sorted((p for p in entrants(self.session, tournament)
                         if p.withdrawn_at is None), key=lambda p: p.seed or 0)
        users = {p.user_id: p.user for p in active}
        done = pairings(games_of(self.session, tournament))
        found = pair_swiss(swiss_players([p.user_id for p in active], done))
        tournament.current_round = number
        for first, second in found.pairs:
            self._board(tournament, number, users[first], users[second])
        if found.bye is not None:
            self.session.add(TournamentGame(tournament_id=tournament.id, round=number,
                                            first_id=found.bye, score=BYE_POINTS))

    def advance(self, tournament: Tournament) -> None:
        """After a board of the tournament finished: the next Swiss round, or the end."""
        if tournament.status is not TournamentStatus.RUNNING:
            return
        open_games = self.session.scalars(
            select(TournamentGame.round).where(TournamentGame.tournament_id == tournament.id,
                                               TournamentGame.score.is_(None))).all()
        if open_games:
            return
        if tournament.kind is TournamentKind.ROUND_ROBIN:
            self._finish(tournament)
            return
        if tournament.current_round >= (tournament.rounds or 0):
            self._finish(tournament)
            return
        active = [p for p in entrants(self.session, tournament) if p.withdrawn_at is None]
        if len(active) < MIN_PLAYERS:
            self._finish(tournament, N_("fewer than two players are left in it"))
            return
        number = tournament.current_round + 1
        try:
            self._pair(tournament, number)
        except PairingError:
            self._finish(tournament, f"no pairing for round {number} is possible without "
                                     "two players meeting again")
            return
        self.games._record(RoundStarted(board_id=None, tournament_id=tournament.id,
                                        round=number))

    def _finish(self, tournament: Tournament, note: str | None = None) -> None:
        tournament.status = TournamentStatus.FINISHED
        tournament.finished_at = self.games.now
        self.games._record(TournamentFinished(board_id=None, tournament_id=tournament.id,
                                              note=note))


#: the tournament of the oldest game paired but without its board yet
_WAITING = (select(TournamentGame.tournament_id)
            .where(TournamentGame.board_id.is_(None), TournamentGame.second_id.is_not(None),
                   TournamentGame.score.is_(None))
            .order_by(TournamentGame.id).limit(1))


def boards_waiting(session: Session) -> bool:
    """Whether a tournament's game waits for its board (a start done in steps)."""
    return session.scalar(_WAITING) is not None


def start_waiting_boards(games: GameService, limit: int = START_STEP) -> int:
    """One step of the tournaments' starts: up to ``limit`` boards of games paired but
    not yet started; returns how many games were settled (0: nothing waits)."""
    session = games.session
    ids = list(session.scalars(_WAITING))
    if not ids:
        return 0
    tournament = session.scalar(select(Tournament).where(Tournament.id == ids[0])
                                .with_for_update(of=Tournament)
                                .execution_options(populate_existing=True))
    assert tournament is not None
    return TournamentService(games).start_waiting(tournament, limit)


def board_finished(games: GameService, event: GameFinished) -> None:
    """A board has just finished (the game service recorded it): if it is a
    tournament's, record its score and move the tournament on."""
    session = games.session
    game = session.scalar(select(TournamentGame).where(TournamentGame.board_id == event.board_id))
    if game is None:
        return
    board = session.get(Board, event.board_id)
    assert board is not None
    by = event.by
    tournament = session.scalar(select(Tournament).where(Tournament.id == game.tournament_id)
                                .with_for_update(of=Tournament)
                                .execution_options(populate_existing=True))
    assert tournament is not None
    game.score = tournament_score(board, by)
    TournamentService(games).advance(tournament)
