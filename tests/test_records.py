"""Game records: exact round trips (text and JSON) for every game, replay, refusals."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from pbmserv.games import get_engine
from pbmserv.games.base import RuleError, Termination
from pbmserv.records import (
    GameRecord,
    RatingChange,
    RecordError,
    RecordMove,
    ReplayError,
    check,
    dump_json,
    dump_text,
    from_json,
    parse_json,
    parse_records,
    parse_text,
    replay,
    to_json,
    to_text,
)

START = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
COMMENTS = (None, None, "Your move!", "", "braces {like this} and } alone",
            "two\nlines\r\nand a\ttab", "back\\slash \\n not a newline", "ünïcödé ♞ 日本 🎲",
            "  spaced  out  ", "[%ts 2024-01-01T00:00:00Z] looks like a time",
            "percent % and [Event \"x\"] inside", "\x07bell and \u2028separator")
#: a checkmate on the small Amoeba board, found by a search and replayed here
SMALL_MATE = ("e1-f3,e5-e4", "c7-d5,f6-g7", "c1-b3,e4-e5", "b7-c7,f4-c4", "b3-a5,f5-g6",
              "e7-g6,g4-f6", "d1-c1,g5-e4", "d5-f6,e4-f5", "f1-e1,d3-e4", "b6-b5,g3-g2",
              "c2-c3,f5-g5", "g6-e7,b6-a7", "c1-c2,a5-b6")


def playout(game: str, options: tuple[str, ...], seed: int, plies: int) -> GameRecord:
    """A real game: random legal moves through the engine, until the end or ``plies``."""
    engine = get_engine(game)
    assert engine is not None
    rng = random.Random(seed)
    pos = engine.new(engine.check_options(options))
    moves = []
    when = START
    for _ in range(plies):
        if engine.outcome(pos) is not None:
            break
        move = rng.choice(engine.legal_moves(pos))
        text = engine.format_move(pos, move)
        pos = engine.apply(pos, move)
        when += timedelta(minutes=rng.randint(1, 4000), seconds=rng.choice((0, 17)))
        moves.append(RecordMove(text, when, rng.choice(COMMENTS)))
    outcome = engine.outcome(pos)
    return GameRecord(
        game=game, options=engine.check_options(options), board=seed + 1,
        players=("alice", "bob"), started=START, ended=when if outcome else None,
        moves=tuple(moves), winner=outcome.winner if outcome else None,
        termination=outcome.termination if outcome else None,
        reason=outcome.reason if outcome else "", site="pbmserv test",
        ratings=((RatingChange("alice", 1500, 1662.31), RatingChange("bob", 1500, 1337.69))
                 if outcome else ()),
    )


def mate_record() -> GameRecord:
    moves = tuple(RecordMove(m, START + timedelta(hours=n + 1)) for n, m in enumerate(SMALL_MATE))
    return GameRecord(game="amoeba", options=("-small",), players=("alice", "bob"),
                      started=START, ended=START + timedelta(hours=13), moves=moves, winner=0,
                      termination=Termination.CHECKMATE, reason="Black is checkmated",
                      event="Spring Amoeba", round=2)


GAMES = [
    ("amoeba", (), 1, 40),
    ("amoeba", ("-small", "-single"), 2, 40),
    ("amoeba", ("-opponent", "-promote"), 3, 30),
    ("hexamoeba", (), 4, 200),
    ("honeydonuts", (), 5, 200),
    ("honeydonuts", ("-simple",), 6, 200),
    ("exnihilo", ("-small",), 7, 200),
    ("exnihilo", (), 8, 16),
]


@pytest.fixture(scope="module", params=GAMES, ids=lambda g: f"{g[0]}{''.join(g[1])}-{g[2]}")
def record(request: pytest.FixtureRequest) -> GameRecord:
    game, options, seed, plies = request.param
    return playout(game, options, seed, plies)


def test_text_round_trip(record: GameRecord) -> None:
    text = to_text(record)
    back = parse_text(text)
    assert back == [record]
    assert to_text(back[0]) == text


def test_json_round_trip(record: GameRecord) -> None:
    data = to_json(record)
    assert from_json(data) == record
    assert to_json(from_json(data)) == data
    again = json.loads(json.dumps(data))
    assert from_json(again) == record
    assert parse_json(dump_json([record])) == [record]


def test_replay_accepts_real_games(record: GameRecord) -> None:
    done = replay(record)
    assert done.notations == tuple(m.notation for m in record.moves)
    assert (done.outcome is None) == (record.termination is None)
    assert check(record) is None


def test_text_lines_fit_in_a_mail() -> None:
    record = playout("amoeba", (), 11, 30)
    long_comment = " ".join(["word"] * 60)
    record = replace(record, moves=tuple(replace(m, comment=long_comment)
                                         for m in record.moves))
    text = to_text(record)
    assert all(len(line) <= 76 for line in text.splitlines() if not line.startswith("["))
    assert parse_text(text) == [record]


def test_every_engine_has_a_rule_ending_among_the_playouts() -> None:
    ends = {playout(g, o, s, p).termination for g, o, s, p in GAMES if g != "amoeba"}
    assert {Termination.KERNEL, Termination.KING_OFF, Termination.NO_MOVES} <= ends


def test_checkmate_record() -> None:
    record = mate_record()
    done = replay(record)
    assert done.outcome is not None and done.outcome.termination is Termination.CHECKMATE
    text = to_text(record)
    assert '[Event "Spring Amoeba"]' in text and '[Round "2"]' in text
    assert "6. c2-c3 {[%ts 2024-05-01T20:30:00Z] [%then f5-g5]} 6... g6-e7" in " ".join(
        text.split())
    assert text.rstrip().endswith("1-0")
    assert parse_text(text) == [record]


def test_several_records_in_one_file() -> None:
    records = [playout("honeydonuts", (), 21, 10), mate_record(), playout("exnihilo", (), 22, 4)]
    text = dump_text(records)
    assert "\n\n[Event" in text
    assert parse_text(text) == records
    assert parse_text(text.replace("\n", "\r\n")) == records
    assert parse_records(text) == records
    assert parse_records(dump_json(records)) == records
    assert parse_records(dump_json(records[:1])) == records[:1]
    assert parse_records("\ufeff" + text) == records


def test_an_unfinished_game_without_moves() -> None:
    record = GameRecord(game="hexamoeba", players=("a", "b"), started=START)
    text = to_text(record)
    assert text.endswith('[Termination "unterminated"]\n\n*\n')
    assert parse_text(text) == [record]
    assert from_json(to_json(record)) == record
    assert record.result == "*"


def test_times_are_kept_in_utc() -> None:
    plus2 = timezone(timedelta(hours=2))
    local = GameRecord(game="amoeba", players=("a", "b"),
                       started=datetime(2024, 5, 1, 12, 0, tzinfo=plus2))
    naive = GameRecord(game="amoeba", players=("a", "b"), started=datetime(2024, 5, 1, 10, 0))
    assert local.started == naive.started == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert local.started.tzinfo is UTC
    assert '[Started "2024-05-01T10:00:00Z"]' in to_text(local)


def test_odd_characters_in_tags_round_trip() -> None:
    record = replace(mate_record(), event='The "Big" one \\ {x}', site="café\nnext line",
                     reason="ended ] oddly")
    text = to_text(record)
    assert '[Event "The \\"Big\\" one \\\\ {x}"]' in text
    assert '[Site "café\\nnext line"]' in text
    assert parse_text(text) == [record]
    assert from_json(to_json(record)) == record


def test_honeydonuts_seats_name_the_player_tags() -> None:
    text = to_text(playout("honeydonuts", (), 5, 200))
    assert '[Red "alice"]\n[Blue "bob"]' in text


# -- replay refusals --------------------------------------------------------------------


def test_an_illegal_move_is_refused_with_its_number_and_reason() -> None:
    record = playout("amoeba", (), 31, 12)
    moves = list(record.moves)
    moves[6] = replace(moves[6], notation="e2-e5")  # White's 4th move
    bad = replace(record, moves=tuple(moves))
    engine = get_engine("amoeba")
    assert engine is not None
    pos = engine.play_all(engine.new(), [m.notation for m in moves[:6]])
    with pytest.raises(RuleError) as expected:
        engine.play(pos, "e2-e5")
    with pytest.raises(ReplayError) as refused:
        replay(bad)
    assert refused.value.ply == 7
    assert refused.value.reason == str(expected.value)
    assert str(refused.value) == f"move 7 (4. e2-e5) is illegal: {expected.value}"
    found = check(bad)
    assert found is not None and found.ply == 7


def test_a_second_players_move_is_named_with_dots() -> None:
    record = playout("exnihilo", ("-small",), 32, 6)
    moves = list(record.moves)
    moves[3] = replace(moves[3], notation="zz9-a1")
    with pytest.raises(ReplayError, match=r"^move 4 \(2\.\.\. zz9-a1\) is illegal: "):
        replay(replace(record, moves=tuple(moves)))


def test_a_move_after_the_end_is_refused() -> None:
    record = mate_record()
    extra = RecordMove("c6-c5", START + timedelta(days=2))
    with pytest.raises(ReplayError, match=r"move 14 \(7\.\.\. c6-c5\).*already over"):
        replay(replace(record, moves=(*record.moves, extra)))


def test_the_result_must_match_a_rule_ending() -> None:
    record = mate_record()
    with pytest.raises(ReplayError, match=r"over by the rules.*record says resignation"):
        replay(replace(record, termination=Termination.RESIGNATION, winner=0))
    with pytest.raises(ReplayError, match="over by the rules"):
        replay(replace(record, winner=1))
    with pytest.raises(ReplayError, match=r"over by the rules.*still running"):
        replay(replace(record, termination=None, winner=None))


def test_a_rule_ending_needs_the_position() -> None:
    record = playout("amoeba", (), 41, 6)
    with pytest.raises(ReplayError, match="not over by the rules"):
        replay(replace(record, termination=Termination.CHECKMATE, winner=0))
    assert check(replace(record, termination=Termination.RESIGNATION, winner=1)) is None
    assert check(replace(record, termination=Termination.AGREEMENT, winner=None)) is None
    assert check(replace(record, termination=Termination.ABANDONED, winner=0)) is None
    with pytest.raises(ReplayError, match="has a winner"):
        replay(replace(record, termination=Termination.RESIGNATION, winner=None))
    with pytest.raises(ReplayError, match="agreement"):
        replay(replace(record, termination=Termination.AGREEMENT, winner=0))
    with pytest.raises(ReplayError, match="declined"):
        replay(replace(record, termination=Termination.DECLINED, winner=None))
    declined = GameRecord(game="amoeba", players=("a", "b"), started=START,
                          termination=Termination.DECLINED)
    assert check(declined) is None


def test_hexamoeba_agreement_counts_the_stacks() -> None:
    record = playout("hexamoeba", (), 42, 10)
    done = replay(record)
    engine = get_engine("hexamoeba")
    assert engine is not None
    agreed = engine.agreed_outcome(done.position)
    assert check(replace(record, termination=Termination.AGREEMENT,
                         winner=agreed.winner)) is None
    wrong = 1 if agreed.winner == 0 else 0
    with pytest.raises(ReplayError, match="ended by agreement here"):
        replay(replace(record, termination=Termination.AGREEMENT, winner=wrong))


def test_bad_options_and_seats_are_refused() -> None:
    record = GameRecord(game="amoeba", options=("-huge",), players=("a", "b"), started=START)
    with pytest.raises(ReplayError, match="unknown option"):
        replay(record)
    with pytest.raises(ReplayError, match="2 seats"):
        replay(GameRecord(game="amoeba", players=("a", "b", "c"), started=START))
    with pytest.raises(RecordError, match="2 seats"):
        to_text(GameRecord(game="amoeba", players=("a",), started=START))


def test_short_algebraic_replays_to_the_canonical_notation() -> None:
    record = GameRecord(game="amoeba", players=("a", "b"), started=START,
                        moves=(RecordMove("Nf3", START), RecordMove("e8-e6", START)))
    assert replay(record).notations == ("g1-f3", "e8-e6")


# -- values that cannot be a record ----------------------------------------------------


@pytest.mark.parametrize("fields, message", [
    ({"game": "Amoeba!"}, "cannot be a game"),
    ({"players": ()}, "needs its players"),
    ({"players": ("al ice", "bob")}, "cannot be a userid"),
    ({"winner": 0}, "still running has no winner"),
    ({"winner": 2, "termination": Termination.TIME}, "no seat 2"),
    ({"ratings": (RatingChange("eve", 1, 2),)}, "did not play"),
    ({"event": "?"}, "event has a name"),
    ({"round": 0}, "from 1"),
    ({"options": ("-a b",)}, "cannot be a game option"),
])
def test_invalid_records(fields: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"game": "amoeba", "players": ("a", "b"), "started": START}
    with pytest.raises(RecordError, match=message):
        GameRecord(**(base | fields))


def test_invalid_moves_and_ratings() -> None:
    with pytest.raises(RecordError, match="notation"):
        RecordMove("e2 e4", START)
    with pytest.raises(RecordError, match="notation"):
        RecordMove("{x}", START)
    with pytest.raises(RecordError, match="not a number"):
        RatingChange("a", float("nan"), 1500)
