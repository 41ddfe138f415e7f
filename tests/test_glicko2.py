"""Glicko-2: the paper's worked example, draws, symmetry, idle aging, and a cross-check."""

from __future__ import annotations

import math
import random

import pytest

from pbmserv.ratings import (
    Rating,
    age,
    format_change,
    format_rating,
    is_provisional,
    rate,
    rate_game,
)


def test_papers_example() -> None:
    player = Rating(1500, 200, 0.06)
    games = [(Rating(1400, 30), 1.0), (Rating(1550, 100), 0.0), (Rating(1700, 300), 0.0)]
    after = rate(player, games)
    assert after.rating == pytest.approx(1464.06, abs=0.02)
    assert after.rd == pytest.approx(151.52, abs=0.02)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)


def test_new_players_start_at_1500_350_006() -> None:
    assert Rating() == Rating(1500, 350, 0.06)
    assert is_provisional(Rating())


def test_a_draw_between_equals_moves_no_rating_but_shrinks_rd() -> None:
    a, b = rate_game(Rating(), Rating(), 0.5)
    assert a == b
    assert a.rating == pytest.approx(1500, abs=1e-9)
    assert a.rd < 350


def test_a_draw_moves_the_stronger_down_and_the_weaker_up() -> None:
    strong, weak = rate_game(Rating(1800, 80), Rating(1500, 80), 0.5)
    assert strong.rating < 1800 < weak.rating + 300
    assert weak.rating > 1500


def test_one_game_period_is_symmetric() -> None:
    a, b = Rating(1600, 120, 0.06), Rating(1600, 120, 0.06)
    win, loss = rate_game(a, b, 1.0)
    assert win.rating - 1600 == pytest.approx(1600 - loss.rating, abs=1e-9)
    assert win.rd == pytest.approx(loss.rd, abs=1e-9)
    # swapping the seats swaps the results
    loss2, win2 = rate_game(b, a, 0.0)
    assert (win2, loss2) == (win, loss)


def test_each_player_is_rated_against_the_others_value_before_the_game() -> None:
    a, b = Rating(1700, 60, 0.06), Rating(1400, 200, 0.06)
    new_a, new_b = rate_game(a, b, 0.0)
    assert new_a == rate(a, [(b, 0.0)])
    assert new_b == rate(b, [(a, 1.0)])


def test_empty_period_is_step_6_only() -> None:
    r = Rating(1600, 100, 0.06)
    after = rate(r, [])
    assert after.rating == 1600 and after.volatility == 0.06
    assert after.rd == pytest.approx(math.sqrt((100 / 173.7178) ** 2 + 0.06**2) * 173.7178)


def test_aging_once_per_full_30_days() -> None:
    r = Rating(1600, 50, 0.06)
    assert age(r, 0) == r
    assert age(r, 29.9) == r
    once = age(r, 30)
    assert once == rate(r, [])
    assert age(r, 59) == once
    assert age(r, 60) == rate(rate(r, []), [])
    assert age(r, 95).rd == pytest.approx(rate(rate(rate(r, []), []), []).rd)


def test_aging_never_passes_350() -> None:
    r = Rating(1600, 349.9, 0.06)
    assert age(r, 30).rd == 350
    assert 345 < age(Rating(1600, 345, 0.06), 30).rd < 350
    assert age(Rating(1600, 345, 0.06), 3000).rd == 350
    assert age(Rating(1600, 340, 0.2), 10_000).rd == 350
    high = Rating(1600, 360, 0.06)  # already past the cap: kept as it is
    assert age(high, 300) == high


def test_scores_outside_0_to_1_are_refused() -> None:
    with pytest.raises(ValueError):
        rate_game(Rating(), Rating(), 2.0)


def test_provisional_and_formatting() -> None:
    assert format_rating(Rating(1661.6, 200)) == "1662?"
    assert format_rating(Rating(1661.4, 110)) == "1661"
    assert not is_provisional(Rating(1500, 110))
    line = format_change("alice", Rating(1500, 350), Rating(1662.2, 290))
    assert line == "alice 1500? -> 1662? (+162)"
    assert format_change("bob", Rating(1500.4, 60), Rating(1489.6, 59)) == "bob 1500 -> 1490 (-10)"
    assert format_change("eve", Rating(1500, 60), Rating(1500.2, 59)) == "eve 1500 -> 1500 (+0)"


# -- an independent second implementation ---------------------------------------------
# Written separately from the module: the volatility root is found by plain bisection
# on a wide bracket instead of the paper's Illinois iteration, and the sums are spelled
# out over the Glicko scale's q = ln(10)/400 form of g and E.

Q = math.log(10) / 400


def _reference(r: float, rd: float, vol: float, games: list[tuple[float, float, float]],
               tau: float = 0.5) -> tuple[float, float, float]:
    def g_glicko(dev: float) -> float:
        return 1 / math.sqrt(1 + 3 * (Q * dev) ** 2 / math.pi**2)

    def e_glicko(r_j: float, rd_j: float) -> float:
        return 1 / (1 + 10 ** (-g_glicko(rd_j) * (r - r_j) / 400))

    scale = 400 / math.log(10)
    phi2 = (rd / scale) ** 2
    v_inv = 0.0
    total = 0.0
    for r_j, rd_j, s in games:
        e = e_glicko(r_j, rd_j)
        v_inv += g_glicko(rd_j) ** 2 * e * (1 - e)
        total += g_glicko(rd_j) * (s - e)
    v = 1 / v_inv
    d2 = (v * total) ** 2
    a = math.log(vol**2)

    def f(x: float) -> float:
        return (math.exp(x) * (d2 - phi2 - v - math.exp(x)) / (2 * (phi2 + v + math.exp(x)) ** 2)
                - (x - a) / tau**2)

    lo, hi = a - 60.0, a + 60.0  # f is decreasing: positive at lo, negative at hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    new_vol = math.exp(lo / 2)
    pre = phi2 + new_vol**2
    new_phi = 1 / math.sqrt(1 / pre + 1 / v)
    new_r = r + scale * new_phi**2 * total
    return new_r, scale * new_phi, new_vol


def test_reference_reproduces_the_paper_too() -> None:
    r, rd, vol = _reference(1500, 200, 0.06, [(1400, 30, 1), (1550, 100, 0), (1700, 300, 0)])
    assert (r, rd, vol) == pytest.approx((1464.06, 151.52, 0.05999), abs=0.02)


def test_cross_check_against_the_reference_on_random_cases() -> None:
    rng = random.Random(20240501)
    for _ in range(400):
        player = Rating(rng.uniform(800, 2600), rng.uniform(30, 350), rng.uniform(0.03, 0.12))
        games = [(Rating(rng.uniform(800, 2600), rng.uniform(30, 350), 0.06),
                  rng.choice((0.0, 0.5, 1.0))) for _ in range(rng.randint(1, 6))]
        ours = rate(player, games)
        ref = _reference(player.rating, player.rd, player.volatility,
                         [(o.rating, o.rd, s) for o, s in games])
        assert ours.rating == pytest.approx(ref[0], abs=1e-3)
        assert ours.rd == pytest.approx(ref[1], abs=1e-3)
        assert ours.volatility == pytest.approx(ref[2], abs=1e-6)
