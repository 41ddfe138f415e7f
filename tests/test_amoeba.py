"""Amoeba, checked against shared/rules/amoeba.md rule by rule."""

from __future__ import annotations

from collections import Counter

import pytest

from pbmserv.games.amoeba import EMPTY, HOLE, Amoeba, Position, geometry
from pbmserv.games.base import IllegalMoveError, MoveSyntaxError, Termination
from tests.test_amoeba_reference import promotable, reference_turns, to_board

E = Amoeba()
NORMAL_HOLES = ("b4", "b5", "b6", "d5", "e5", "g4", "g5", "g6")


def make(pieces: dict[str, str], holes: tuple[str, ...] = NORMAL_HOLES,
         options: tuple[str, ...] = (), turn: int = 0,
         ko: tuple[str, str] | None = None) -> Position:
    geo = geometry("-small" in options)
    cells = [EMPTY] * (geo.width * geo.height)

    def at(name: str) -> int:
        cell = geo.cell(name[0], name[1:])
        assert cell is not None
        return cell

    for name in holes:
        cells[at(name)] = HOLE
    for name, piece in pieces.items():
        cells[at(name)] = piece
    return Position("".join(cells), turn, tuple(sorted(options)),
                    (at(ko[0]), at(ko[1])) if ko else None)


def cell(pos: Position, name: str) -> str:
    geo = pos.geo
    index = geo.cell(name[0], name[1:])
    assert index is not None
    return pos.cells[index]


def moves(pos: Position) -> list[str]:
    return [E.format_move(pos, m) for m in E.legal_moves(pos)]


# -- the start and move counts checked by hand ----------------------------------------
def test_start_has_1098_turns_18_chess_moves_each_with_61_choices() -> None:
    turns = E.legal_moves(E.new())
    assert len(turns) == 1098
    per_move = Counter((t.frm, t.to) for t in turns)
    assert len(per_move) == 18 and set(per_move.values()) == {61}


def test_slide_count_at_the_start_by_hand() -> None:
    # b4-b6 group: a4 a5 a6 c4 c6 b3 b7 (3 each) + c5 (3 + 2) = 26; d5-e5 group: d4 e4
    # d6 e6 (2 each) = 8; g4-g6 group: like b's = 26. 60 in all.
    slides = Counter(E.format_move(E.new(), t).split(",")[1]
                     for t in E.legal_moves(E.new()) if t.slide and t.frm == 12)
    assert len(slides) == 60
    assert sum(1 for s in slides if s.startswith("c5-")) == 5


@pytest.mark.parametrize(("options", "count"), [
    ((), 1098),              # 18 x (1 + 60)
    (("-single",), 414),     # 18 x (1 + 22): only holes next to a square
    (("-promote",), 1098),
    (("-opponent",), 1098),  # no Black square touches a hole at the start
    (("-small",), 369),      # 9 chess moves x (1 + 40 slides)
    (("-small", "-single"), 9 * (1 + 16)),
])
def test_first_turn_counts(options: tuple[str, ...], count: int) -> None:
    assert len(E.legal_moves(E.new(options))) == count


def test_small_board_setup() -> None:
    pos = E.new(["-small"])
    assert [cell(pos, n) for n in ("b1", "c1", "d1", "e1", "f1")] == list("RNKNR")
    assert [cell(pos, n) for n in ("b7", "d7", "b6", "f6")] == ["r", "k", "p", "p"]
    assert cell(pos, "a1") == cell(pos, "d4") == cell(pos, "g7") == HOLE


# -- chess moves with holes ------------------------------------------------------------
def test_sliders_stop_at_holes_and_knights_jump() -> None:
    pos = make({"a4": "R", "a1": "K", "h9": "k", "c3": "N"})
    with pytest.raises(IllegalMoveError, match="a rook cannot pass the hole at b4"):
        E.parse_move(pos, "a4-c4")
    with pytest.raises(IllegalMoveError, match="b5 is a hole"):
        E.parse_move(pos, "c3-b5")
    assert E.parse_move(pos, "c3-a2") and E.parse_move(pos, "Nd1")
    chess = {m.split(",")[0] for m in moves(pos)}
    assert {"a4-b4", "a4-c4"}.isdisjoint(chess) and "a4-a9" in chess


def test_diagonal_step_between_two_holes() -> None:
    pos = make({"d4": "B", "a1": "K", "h9": "k"}, holes=("d5", "e4"))
    assert "d4-e5" in {m.split(",")[0] for m in moves(pos)}


def test_pawn_double_step_and_its_limits() -> None:
    start = E.new()
    chess = {m.split(",")[0] for m in moves(start)}
    assert "e2-e4" in chess and "b2-b3" in chess and "b2-b4" not in chess
    with pytest.raises(IllegalMoveError, match="b4 is a hole"):
        E.parse_move(start, "b2-b4")
    slid_there = make({"c2": "P", "a1": "K", "h9": "k"}, holes=())
    assert "c2-c4" in moves(slid_there)
    with pytest.raises(IllegalMoveError, match="no double step on the small board"):
        E.parse_move(E.new(["-small"]), "b2-b4")


def test_no_en_passant() -> None:
    pos = make({"c6": "P", "d8": "p", "a1": "K", "h9": "k"}, holes=(), turn=1)
    pos, _ = E.play(pos, "d8-d6")
    assert not any(m.startswith("c6-d7") for m in moves(pos))


def test_short_algebraic() -> None:
    pos = E.new()
    assert E.play(pos, "Nf3")[1] == "g1-f3"
    assert E.play(pos, "e4")[1] == "e2-e4"
    assert E.play(pos, "e2e4")[1] == "e2-e4"
    two = make({"a1": "R", "h1": "R", "e3": "K", "h9": "k"}, holes=())
    with pytest.raises(IllegalMoveError, match="ambiguous: write a1-d1 or h1-d1"):
        E.parse_move(two, "Rd1")
    assert E.play(two, "Rad1+")[1] == "a1-d1"
    with pytest.raises(MoveSyntaxError, match="not a chess move"):
        E.parse_move(pos, "castle")


# -- slides ------------------------------------------------------------------------------
def test_empty_square_slides_through_a_chain_of_holes() -> None:
    after, text = E.play(E.new(), "e2-e4,a4-b6")
    assert text == "e2-e4,a4-b6"
    assert cell(after, "a4") == HOLE and cell(after, "b6") == EMPTY
    assert cell(after, "b4") == cell(after, "b5") == HOLE


def test_slide_turns_corners() -> None:
    pos = make({"a1": "K", "h9": "k"}, holes=("b4", "b5", "c5", "d5", "d6"))
    dests = sorted(m.split(",")[1] for m in moves(pos) if m.startswith("a1-a2,a4-"))
    assert dests == ["a4-b4", "a4-b5", "a4-c5", "a4-d5", "a4-d6"]


def test_own_piece_rides_with_its_square() -> None:
    after, _ = E.play(E.new(), "b2-b3,b3-b5")
    assert cell(after, "b5") == "P" and cell(after, "b3") == HOLE


def test_opponents_square_slides_only_with_opponent_option() -> None:
    pos = make({"a1": "K", "h9": "k", "a4": "n"})
    with pytest.raises(IllegalMoveError, match="holds an opponent's piece"):
        E.parse_move(pos, "a1-a2,a4-b4")
    pos = make({"a1": "K", "h9": "k", "a4": "n"}, options=("-opponent",))
    after, _ = E.play(pos, "a1-b1,a4-b4")
    assert cell(after, "b4") == "n"


def test_opponent_option_may_slide_the_enemy_king() -> None:
    pos = make({"a1": "K", "a4": "k"}, options=("-opponent",))
    assert cell(E.play(pos, "a1-b1,a4-b6")[0], "b6") == "k"


def test_single_option_only_adjacent_holes() -> None:
    pos = make({"a1": "K", "h9": "k"}, options=("-single",))
    with pytest.raises(IllegalMoveError, match="only into a hole next to it"):
        E.parse_move(pos, "a1-a2,a4-b6")
    assert E.play(pos, "a1-a2,a4-b4")[1] == "a1-a2,a4-b4"
    assert sorted(m.split(",")[1] for m in moves(pos) if m.startswith("a1-a2,c5-")) == [
        "c5-b5", "c5-d5"]


def test_square_touching_two_groups_reaches_both() -> None:
    pos = E.new()
    assert sorted(m.split(",")[1] for m in moves(pos) if m.startswith("e2-e3,c5-")) == [
        "c5-b4", "c5-b5", "c5-b6", "c5-d5", "c5-e5"]


def test_slide_errors() -> None:
    pos = E.new()
    with pytest.raises(IllegalMoveError, match="c3 is not a hole"):
        E.parse_move(pos, "e2-e4,a3-c3")
    with pytest.raises(IllegalMoveError, match="b4 is a hole: there is no square"):
        E.parse_move(pos, "e2-e4,b4-b5")
    with pytest.raises(IllegalMoveError, match="cannot reach g4 through holes"):
        E.parse_move(pos, "e2-e4,a4-g4")
    with pytest.raises(IllegalMoveError, match="at most one slide"):
        E.parse_move(pos, "e2-e4,a4-b4,a5-b5")


def test_ko_rule() -> None:
    pos, _ = E.play(E.new(), "e2-e4,a4-b4")  # White slides a4 -> b4
    with pytest.raises(IllegalMoveError,
                       match=r"the square at b4 may not slide back to a4 this turn \(ko\)"):
        E.parse_move(pos, "e8-e6,b4-a4")
    assert E.play(pos, "e8-e6,b4-b5")[1] == "e8-e6,b4-b5"  # elsewhere is fine
    assert E.play(pos, "e8-e6,a3-a4")[1] == "e8-e6,a3-a4"  # another square into a4 too
    pos, _ = E.play(pos, "e8-e6")  # Black slides nothing
    pos, _ = E.play(pos, "d2-d3")
    assert E.play(pos, "d8-d6,b4-a4")[1] == "d8-d6,b4-a4"  # a turn later it may


def test_ko_holds_with_the_opponent_option_and_any_path() -> None:
    pos = make({"a1": "K", "h9": "k"}, holes=("b4", "b5", "c5"), options=("-opponent",))
    pos, _ = E.play(pos, "a1-a2,a4-b4")  # the hole group is now a4 b5 c5
    assert not any(m.endswith(",b4-a4") for m in moves(pos))


# -- check at the end of the turn ---------------------------------------------------------
def test_king_may_step_into_check_and_slide_a_blocker_away() -> None:
    pos = make({"d3": "K", "e9": "r", "a9": "k"}, holes=("d6",))
    with pytest.raises(IllegalMoveError, match="your king would be in check at the end"):
        E.parse_move(pos, "d3-e3")
    assert E.play(pos, "d3-e3,e6-d6")[1] == "d3-e3,e6-d6"  # e6 becomes a hole


def test_king_slides_out_of_check() -> None:
    pos = make({"a3": "K", "a9": "r", "h9": "k"}, holes=("b4",))
    assert "a3-a4,a4-b4" in moves(pos)


def test_pawn_attacks_diagonally_whatever_is_ahead() -> None:
    pos = make({"d4": "K", "e5": "p", "h9": "k"}, holes=("e4",))
    assert E.in_check(pos)


# -- promotion ------------------------------------------------------------------------------
def test_moved_pawn_promotes_with_a_choice_and_queen_by_default() -> None:
    pos = make({"c8": "P", "a1": "K", "h7": "k"})
    listed = [m for m in moves(pos) if m.startswith("c8-c9")]
    assert sorted(m.split(",")[0] for m in listed if "," not in m) == [
        "c8-c9=B", "c8-c9=N", "c8-c9=Q", "c8-c9=R"]
    assert cell(E.play(pos, "c8-c9=N")[0], "c9") == "N"
    after, text = E.play(pos, "c8-c9")
    assert text == "c8-c9=Q" and cell(after, "c9") == "Q"


def test_pawn_with_only_holes_ahead_promotes_early() -> None:
    pos = make({"b2": "P", "a1": "K", "h9": "k"},
               holes=("b4", "b5", "b6", "b7", "b8", "b9"))
    after, text = E.play(pos, "b2-b3=R")
    assert text == "b2-b3=R" and cell(after, "b3") == "R"
    with pytest.raises(IllegalMoveError, match="does not promote"):
        E.parse_move(pos, "a1-a2=Q")


def test_promote_option_only_last_rank() -> None:
    pos = make({"b2": "P", "a1": "K", "h9": "k"},
               holes=("b4", "b5", "b6", "b7", "b8", "b9"), options=("-promote",))
    assert cell(E.play(pos, "b2-b3")[0], "b3") == "P"


def test_small_board_has_no_queen_promotion() -> None:
    pos = make({"c6": "P", "d1": "K", "g4": "k"}, holes=(), options=("-small",))
    with pytest.raises(IllegalMoveError, match="promotes to R, B, N here, not Q"):
        E.parse_move(pos, "c6-c7=Q")
    assert cell(E.play(pos, "c6-c7")[0], "c7") == "R"


def test_pawn_slid_away_from_promotion_does_not_promote() -> None:
    # c7-c8 reaches a cell with only a hole (c9) ahead, then the square c8 carries the
    # pawn into the hole d8, where d9 lies ahead of it: no promotion at the end.
    pos = make({"c7": "P", "a1": "K", "h7": "k"}, holes=("c9", "d8"))
    after, text = E.play(pos, "c7-c8,c8-d8")
    assert text == "c7-c8,c8-d8" and cell(after, "d8") == "P"


def test_pawn_slid_into_promotion_takes_the_choice_on_its_move() -> None:
    # c7-c8 has c9 ahead; sliding the square c9 into the hole d9 leaves only a hole ahead
    pos = make({"c7": "P", "a1": "K", "h7": "k"}, holes=("d9",))
    assert "c7-c8=N,c9-d9" in moves(pos)
    assert cell(E.play(pos, "c7-c8=N,c9-d9")[0], "c8") == "N"


def test_own_slide_makes_a_pawn_promotable_this_turn() -> None:
    pos = make({"c7": "P", "a1": "K", "h6": "k"}, holes=("d8",))
    after, _ = E.play(pos, "a1-a2,c8-d8")  # c9 is still a square ahead of c7
    assert cell(after, "c7") == "P"
    pos = make({"c7": "P", "a1": "K", "h6": "k"}, holes=("c9", "d8"))
    after, _ = E.play(pos, "a1-a2,c8-d8")  # now only holes ahead of c7: it promotes
    assert cell(after, "c7") == "Q"
    assert E.play(pos, "a1-a2,c8-d8,c7=N")[1] == "a1-a2,c8-d8,c7=N"


def test_opponents_slide_promotes_only_at_the_owners_next_turn() -> None:
    pos = make({"c7": "P", "a1": "K", "h6": "k"}, holes=("c9", "d8"),
               options=("-opponent",), turn=1)
    after, _ = E.play(pos, "h6-h5,c8-d8")  # Black opens c7's file
    assert cell(after, "c7") == "P"
    after, text = E.play(after, "a1-b1")
    assert cell(after, "c7") == "Q" and text == "a1-b1"


def test_several_pawns_promote_at_once_with_extra_parts() -> None:
    pos = make({"a8": "P", "c8": "P", "e1": "K", "h6": "k"})
    with pytest.raises(IllegalMoveError, match="no pawn of yours promotes on c8"):
        E.parse_move(pos, "a8-a9=R,c8=N")  # c9 is still ahead of c8
    pos = make({"a8": "P", "c8": "P", "e1": "K", "h6": "k"}, holes=("c9",))
    after, _ = E.play(pos, "a8-a9=R,c8=N")
    assert (cell(after, "a9"), cell(after, "c8")) == ("R", "N")
    with pytest.raises(IllegalMoveError, match="write the moved pawn's promotion on its move"):
        E.parse_move(pos, "a8-a9,a9=N")
    with pytest.raises(IllegalMoveError, match="no pawn of yours promotes on b8"):
        E.parse_move(pos, "a8-a9,b8=N")


def test_move_list_shows_other_promotions_once() -> None:
    pos = make({"a2": "P", "c8": "P", "e1": "K", "h6": "k"}, holes=("c9",))
    listed = [m for m in moves(pos) if m.startswith("a2-a3")]
    assert "a2-a3" in listed and not any("=" in m for m in listed)


# -- the end ---------------------------------------------------------------------------------
def test_checkmate_by_a_slide_with_the_ko_rule_sealing_it() -> None:
    pos = make({"a9": "R", "a1": "K", "h9": "k", "g8": "p", "h8": "p"}, holes=("d9",))
    assert E.outcome(pos) is None
    after, _ = E.play(pos, "a1-a2,d8-d9")  # the rank opens: check along rank 9
    assert E.in_check(after)
    outcome = E.outcome(after)
    assert outcome is not None and outcome.winner == 0
    assert outcome.reason == "Black is checkmated"
    assert outcome.termination is Termination.CHECKMATE
    # without the ko rule Black could slide d9 back: with it, no turn remains
    assert E.legal_moves(after) == []


def test_stalemate_by_a_slide_is_a_draw() -> None:
    pos = make({"a9": "k", "h1": "K", "h2": "R"}, holes=("b9", "a8", "c8"))
    after, _ = E.play(pos, "h1-g1,b8-c8")  # b8 becomes a hole: the king cannot move
    outcome = E.outcome(after)
    assert outcome is not None and outcome.winner is None
    assert outcome.reason == "stalemate: Black has no legal turn"
    assert outcome.termination is Termination.STALEMATE


def test_serialisation_round_trips() -> None:
    pos, _ = E.play(E.new(["-opponent", "-small"]), "c2-c3,b4-c4")
    again = E.deserialize(E.serialize(pos))
    assert again == pos and moves(again) == moves(pos)


# -- the perft figure, counted again from the rules text ---------------------------------
def _reference_after(pos: Position, turn: str) -> Position:
    """The position after a turn as test_amoeba_reference writes it (``c2-c3,b4-c4``,
    ``b6-b7=N``), played by hand from the rules text, not by the engine: the chess
    move, the slide (the square and whatever stands on it), then every pawn of the
    mover with no square ahead promotes (the moved one to its written choice, any other
    to the default), and the slide is the opponent's ko."""
    board, w, h = to_board(pos)
    white, small = pos.turn == 0, "-small" in pos.options

    def square(name: str) -> tuple[int, int]:
        return ord(name[0]) - ord("a"), int(name[1:]) - 1

    chess, *slide = turn.split(",")
    move, _, choice = chess.partition("=")
    frm, to = map(square, move.split("-"))
    board[to], board[frm] = board[frm], EMPTY
    end, ko = to, None
    if slide:
        a, dest = map(square, slide[0].split("-"))
        board[dest], board[a] = board[a], HOLE
        end = dest if a == to else to
        ko = (a[1] * w + a[0], dest[1] * w + dest[0])
    pawn = "P" if white else "p"
    for sq, piece in list(board.items()):
        if piece == pawn and promotable(board, sq, white, h, "-promote" in pos.options):
            new = choice if sq == end and choice else "R" if small else "Q"
            board[sq] = new if white else new.lower()
    return Position("".join(board[(i % w, i // w)] for i in range(w * h)), 1 - pos.turn,
                    pos.options, ko)


def test_perft_two() -> None:
    """114,914 pairs of turns from the -small start: counted again here by the slow
    turn generator of test_amoeba_reference (written from the rules text), each first
    turn played by _reference_after, from the setup as the rules text gives it."""
    pawns = {f"{f}2": "P" for f in "bcdef"} | {f"{f}6": "p" for f in "bcdef"}
    pieces = {"b1": "R", "c1": "N", "d1": "K", "e1": "N", "f1": "R"}
    pieces |= {f"{n[0]}7": p.lower() for n, p in pieces.items()} | pawns
    start = make(pieces, ("a1", "a2", "a6", "a7", "c4", "d4", "e4", "g1", "g2", "g6", "g7"),
                 ("-small",))
    assert start == E.new(["-small"])
    first = reference_turns(start)
    assert sum(len(reference_turns(_reference_after(start, t))) for t in first) == 114914
    assert E.perft(start, 2) == 114914
