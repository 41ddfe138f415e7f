"""Tournament pairing: round robins, the Swiss pairer, standings and tie-breaks."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest

from pbmserv.tournaments import (
    Pairing,
    PairingError,
    SwissPlayer,
    TieBreak,
    pair_swiss,
    round_robin,
    standings,
    swiss_players,
)

# -- round robin ----------------------------------------------------------------------


@pytest.mark.parametrize("n", range(2, 15))
def test_round_robin_every_pair_once_balanced(n: int) -> None:
    players = [f"p{i}" for i in range(n)]
    rounds = round_robin(players, double=False)
    assert len(rounds) == (n if n % 2 else n - 1)
    games = [pair for rnd in rounds for pair in rnd]
    assert Counter(frozenset(g) for g in games) == Counter(
        frozenset(c) for c in combinations(players, 2))
    for rnd in rounds:
        seated = [p for pair in rnd for p in pair]
        assert len(seated) == len(set(seated)) == n - n % 2  # one rests when odd
    for p in players:
        firsts = sum(a == p for a, _ in games)
        seconds = sum(b == p for _, b in games)
        assert abs(firsts - seconds) <= 1
        seats = "".join("F" if a == p else "S" for rnd in rounds for a, b in rnd if p in (a, b))
        assert "FFF" not in seats and "SSS" not in seats


def test_round_robin_odd_count_everyone_rests_once() -> None:
    players = ["a", "b", "c", "d", "e"]
    rounds = round_robin(players)
    resting = [next(p for p in players if all(p not in pair for pair in rnd)) for rnd in rounds]
    assert sorted(resting) == players


def test_double_round_robin_four_players() -> None:
    players = ["ann", "ben", "cat", "dan"]
    rounds = round_robin(players, double=True)
    assert len(rounds) == 6
    games = [pair for rnd in rounds for pair in rnd]
    assert len(games) == 12
    # every ordered pair exactly once: each pair twice, once with each player first
    assert sorted(games) == sorted((a, b) for a in players for b in players if a != b)
    assert rounds[3:] == [[(b, a) for a, b in rnd] for rnd in rounds[:3]]
    assert rounds[:3] == [
        [("ann", "dan"), ("ben", "cat")],
        [("dan", "cat"), ("ann", "ben")],
        [("ben", "dan"), ("cat", "ann")],
    ]


def test_round_robin_refuses_bad_fields() -> None:
    with pytest.raises(ValueError):
        round_robin(["solo"])
    with pytest.raises(ValueError):
        round_robin(["a", "b", "a"])


def test_double_round_robin_standings_with_sonneborn_berger() -> None:
    players = ["ann", "ben", "cat", "dan"]
    rounds = round_robin(players, double=True)
    # ann beats everyone in the first cycle and draws the second; ben beats cat and
    # dan twice; cat and dan draw both of their games
    result: dict[frozenset[str], list[str | None]] = {
        frozenset({"ann", "ben"}): ["ann", None],
        frozenset({"ann", "cat"}): ["ann", None],
        frozenset({"ann", "dan"}): ["ann", None],
        frozenset({"ben", "cat"}): ["ben", "ben"],
        frozenset({"ben", "dan"}): ["ben", "ben"],
        frozenset({"cat", "dan"}): [None, None],
    }
    games = []
    for number, rnd in enumerate(rounds, start=1):
        for a, b in rnd:
            winner = result[frozenset({a, b})][0 if number <= 3 else 1]
            games.append(Pairing(number, a, b, 0.5 if winner is None else float(winner == a)))
    table = standings(players, games, TieBreak.SONNEBORN_BERGER)
    # points: ann 3 + 1.5 = 4.5; ben 0 + 0.5 + 4 = 4.5; cat 0 + 0.5 + 1 = 1.5; dan 1.5
    assert [(s.player, s.points) for s in table] == [
        ("ann", 4.5), ("ben", 4.5), ("cat", 1.5), ("dan", 1.5)]
    # SB ann: beat ben, cat, dan once (4.5 + 1.5 + 1.5) + drew each once (half of it)
    #   = 7.5 + 3.75 = 11.25
    # SB ben: drew ann once (2.25) + beat cat twice (3) + beat dan twice (3) = 8.25
    # SB cat: drew ann once (2.25) + drew dan twice (0.75 * 2) = 3.75; dan likewise
    assert [s.tiebreak for s in table] == [11.25, 8.25, 3.75, 3.75]
    assert [s.rank for s in table] == [1, 2, 3, 3]
    assert [s.wins for s in table] == [3, 4, 0, 0]


# -- Swiss ------------------------------------------------------------------------------


def _play(players: list[str], results: dict[tuple[int, frozenset[str]], str | None],
          rounds: int) -> tuple[list[Pairing[str]], list[tuple[tuple[tuple[str, str], ...],
                                                              str | None]]]:
    games: list[Pairing[str]] = []
    seen = []
    for number in range(1, rounds + 1):
        rnd = pair_swiss(swiss_players(players, games))
        seen.append((rnd.pairs, rnd.bye))
        for a, b in rnd.pairs:
            winner = results[(number, frozenset({a, b}))]
            games.append(Pairing(number, a, b, 0.5 if winner is None else float(winner == a)))
        if rnd.bye is not None:
            games.append(Pairing(number, rnd.bye))
    return games, seen


def test_five_player_swiss_over_four_rounds() -> None:
    players = ["ann", "ben", "cat", "dan", "eve"]  # seed order
    results: dict[tuple[int, frozenset[str]], str | None] = {
        (1, frozenset({"ann", "cat"})): "ann",
        (1, frozenset({"ben", "dan"})): "dan",
        (2, frozenset({"ann", "dan"})): None,
        (2, frozenset({"ben", "eve"})): "ben",
        (3, frozenset({"ann", "eve"})): "ann",
        (3, frozenset({"cat", "dan"})): "cat",
        (4, frozenset({"ann", "ben"})): "ann",
        (4, frozenset({"cat", "eve"})): "cat",
    }
    games, seen = _play(players, results, 4)
    assert seen == [
        # all on 0: the bye to the last seed; the Dutch halves 1-3, 2-4 with the
        # higher seed first on board 1 and second on board 2
        ((("ann", "cat"), ("dan", "ben")), "eve"),
        # ann, dan and eve on 1: ann meets dan (both were first: ann, placed higher,
        # gets to be second); dan-ben would repeat so eve floats to ben; cat the bye
        ((("dan", "ann"), ("ben", "eve")), "cat"),
        # ben is the lowest without a bye; ann has met dan and cat, so ann-eve with
        # eve first (a colour difference of one beats alternation); dan was first
        # twice and must be second
        ((("eve", "ann"), ("cat", "dan")), "ben"),
        # dan the only one left without a bye; ann has met all but ben and was
        # second twice; cat and eve both want to be second: cat is placed higher
        ((("ann", "ben"), ("eve", "cat")), "dan"),
    ]
    table = standings(players, games, TieBreak.BUCHHOLZ)
    assert [(s.player, s.points, s.tiebreak) for s in table] == [
        ("ann", 3.5, 8.5),  # met cat 3 + dan 2.5 + eve 1 + ben 2
        ("cat", 3.0, 7.0),  # ann 3.5 + dan 2.5 + eve 1; the bye adds nothing
        ("dan", 2.5, 8.5),  # ben 2 + ann 3.5 + cat 3
        ("ben", 2.0, 7.0),  # dan 2.5 + eve 1 + ann 3.5
        ("eve", 1.0, 8.5),  # ben 2 + ann 3.5 + cat 3
    ]
    assert [s.byes for s in table] == [0, 1, 1, 1, 1]
    assert [s.played for s in table] == [4, 3, 3, 3, 3]


def test_swiss_ties_order_by_tiebreak_then_wins_then_seed() -> None:
    games = [Pairing(1, "a", "b", 0.5), Pairing(1, "c", "d", 0.5)]
    table = standings(["d", "c", "b", "a"], games, TieBreak.BUCHHOLZ)
    assert [s.player for s in table] == ["d", "c", "b", "a"]
    assert {s.rank for s in table} == {1}


def test_unfinished_games_count_for_nothing_yet() -> None:
    games = [Pairing(1, "a", "b", 1.0), Pairing(2, "a", "c")]
    table = standings(["a", "b", "c"], games, TieBreak.BUCHHOLZ)
    assert [(s.player, s.points, s.played) for s in table] == [
        ("a", 1.0, 1), ("b", 0.0, 1), ("c", 0.0, 0)]


def test_standings_refuse_strangers() -> None:
    with pytest.raises(ValueError, match="not one of its players"):
        standings(["a", "b"], [Pairing(1, "a", "z", 1.0)], TieBreak.BUCHHOLZ)


def test_pairings_refuse_bad_scores_and_self_play() -> None:
    with pytest.raises(ValueError):
        Pairing(1, "a", "b", 0.3)
    with pytest.raises(ValueError):
        Pairing(1, "a", "a")


def test_everyone_has_met_fails_clearly() -> None:
    players = ["a", "b", "c", "d"]
    games = [Pairing(r, a, b, 1.0) for r, rnd in enumerate(round_robin(players), 1)
             for a, b in rnd]
    with pytest.raises(PairingError, match="repeats a game"):
        pair_swiss(swiss_players(players, games))


def test_no_pairing_left_even_though_not_everyone_met() -> None:
    # a has met b and c, and d has met b and c: a-d would leave b-c, who met too
    met = {"a": {"b", "c"}, "b": {"a", "d", "c"}, "c": {"a", "d", "b"}, "d": {"b", "c"}}
    players = [SwissPlayer(k, opponents=frozenset(v)) for k, v in met.items()]
    with pytest.raises(PairingError):
        pair_swiss(players)


def test_second_bye_only_when_unavoidable() -> None:
    players = ["a", "b", "c"]
    games: list[Pairing[str]] = []
    byes = []
    for number in range(1, 4):
        rnd = pair_swiss(swiss_players(players, games))
        byes.append(rnd.bye)
        (a, b), = rnd.pairs
        games += [Pairing(number, a, b, 1.0), Pairing(number, rnd.bye or "")]
    assert sorted(b or "" for b in byes) == players
    # in the fourth round everyone has had a bye and met everyone: nothing is legal
    with pytest.raises(PairingError):
        pair_swiss(swiss_players(players, games))
    fresh = [SwissPlayer("a", 1, had_bye=True), SwissPlayer("b", 1, had_bye=True),
             SwissPlayer("c", 1, had_bye=True)]
    assert pair_swiss(fresh).bye == "c"  # all had one: the lowest gets another


def test_bye_goes_past_a_player_who_cannot_be_left_out() -> None:
    # e is the lowest and has had no bye, but a has met b, c and d, so without e
    # nobody is left for a: the bye moves up to d, and a meets e
    opp = {"a": "bcd", "b": "a", "c": "a", "d": "a", "e": ""}
    players = [SwissPlayer(k, 0, frozenset(v)) for k, v in opp.items()]
    rnd = pair_swiss(players)
    assert rnd.bye == "d"
    assert {frozenset(p) for p in rnd.pairs} == {frozenset("ae"), frozenset("bc")}


def test_float_down_to_the_top_of_the_next_group() -> None:
    players = [SwissPlayer("a", 2, colours=(0, 1)), SwissPlayer("b", 2, colours=(1, 0)),
               SwissPlayer("c", 2, colours=(0, 1)), SwissPlayer("d", 1, colours=(1, 0)),
               SwissPlayer("e", 1, colours=(0, 1)), SwissPlayer("f", 1, colours=(1, 0))]
    rnd = pair_swiss(players)
    pairs = [frozenset(p) for p in rnd.pairs]
    assert pairs[0] in (frozenset("ab"), frozenset("ac"))
    assert frozenset("cd") in pairs or frozenset("bd") in pairs  # the floater meets d


# -- random fields: properties -------------------------------------------------------------


def _exists_pairing(keys: list[str], met: dict[str, set[str]], byes: set[str],
                    fresh_bye_only: bool, diff: dict[str, int] | None = None) -> bool:
    """Independent check: is there any pairing without repeats (and a fresh bye)?

    With ``diff`` (colour differences), also no two players meet who both have a
    difference of 2 or more the same way (one of them would go to 3)."""
    def fits(a: str, b: str) -> bool:
        if b in met[a]:
            return False
        return diff is None or not (abs(diff[a]) >= 2 and abs(diff[b]) >= 2
                                    and (diff[a] > 0) == (diff[b] > 0))

    def can(rest: tuple[str, ...]) -> bool:
        if not rest:
            return True
        a, others = rest[0], rest[1:]
        return any(can(tuple(x for x in others if x != b)) for b in others if fits(a, b))
    if len(keys) % 2 == 0:
        return can(tuple(keys))
    return any(can(tuple(k for k in keys if k != bye)) for bye in keys
               if not (fresh_bye_only and bye in byes))


@pytest.mark.parametrize("seed", range(12))
def test_random_swiss_fields(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(3, 20)
    players = [f"p{i:02d}" for i in range(n)]
    rounds = min(n - 1 if n % 2 == 0 else n, rng.randint(3, 9))
    games: list[Pairing[str]] = []
    met: dict[str, set[str]] = {p: set() for p in players}
    byes: set[str] = set()
    for number in range(1, rounds + 1):
        before = swiss_players(players, games)
        fresh_possible = _exists_pairing(players, met, byes, True)
        diff = {p.key: p.colour_difference for p in before}
        colours_possible = _exists_pairing(players, met, byes, fresh_possible, diff)
        try:
            rnd = pair_swiss(before)
        except PairingError:
            assert not _exists_pairing(players, met, byes, False)
            return
        seated = [p for pair in rnd.pairs for p in pair] + ([rnd.bye] if rnd.bye else [])
        assert sorted(seated) == players
        if rnd.bye in byes:  # a second bye: only when no fresh player could take it
            assert not fresh_possible
        for a, b in rnd.pairs:
            assert b not in met[a], f"round {number}: {a}-{b} meet twice"
            met[a].add(b)
            met[b].add(a)
            games.append(Pairing(number, a, b, rng.choice((0.0, 0.5, 1.0))))
        if rnd.bye is not None:
            byes.add(rnd.bye)
            games.append(Pairing(number, rnd.bye))
        if colours_possible:  # late in a long event the pairing may be forced
            for p in swiss_players(players, games):
                assert abs(p.colour_difference) <= 2, (number, p)
        table = standings(players, games, TieBreak.BUCHHOLZ)
        assert sum(s.points for s in table) == number * (n // 2) + (n % 2) * number
