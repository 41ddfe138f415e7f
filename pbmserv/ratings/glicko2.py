"""Glicko-2, step by step as in Mark Glickman's paper "Example of the Glicko-2 system".

A rating is a value, never changed in place.  ``rate`` runs one rating period for
one player (steps 2 to 8 of the paper); the server rates every finished game at once
as a period of one game for each player (``rate_game``), and grows the deviation of a
player who has been idle (``age``, the paper's step 6 once per 30 idle days).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: the system constant: how much the volatility may change (the paper's example uses 0.5)
TAU = 0.5
#: the convergence tolerance of the volatility iteration (step 5)
EPSILON = 0.000001
#: the factor between the Glicko scale and the Glicko-2 scale (step 2)
SCALE = 173.7178
START_RATING = 1500.0
START_RD = 350.0
START_VOLATILITY = 0.06
#: a rating whose deviation is above this is provisional (shown with a "?")
PROVISIONAL_RD = 110.0
#: the idle time that grows the deviation once (step 6)
AGING_DAYS = 30
#: idle growth never takes the deviation past that of a new player
MAX_RD = START_RD


@dataclass(frozen=True)
class Rating:
    """A rating on the Glicko scale: value, deviation (RD) and volatility."""

    rating: float = START_RATING
    rd: float = START_RD
    volatility: float = START_VOLATILITY


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _expected(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def _new_volatility(phi: float, sigma: float, delta: float, v: float) -> float:
    """Step 5: the root of f by the Illinois algorithm, exactly as the paper gives it."""
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return (ex * (delta * delta - phi * phi - v - ex)
                / (2.0 * (phi * phi + v + ex) ** 2)) - (x - a) / (TAU * TAU)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * TAU) < 0:
            k += 1
        big_b = a - k * TAU
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > EPSILON:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


def _check_score(score: float) -> None:
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a score is between 0 and 1, not {score}")


def rate(player: Rating, games: Sequence[tuple[Rating, float]]) -> Rating:
    """One rating period: ``games`` are (opponent's rating before the period, score).

    A score is 1 for a win, 1/2 for a draw, 0 for a loss.  An empty period applies
    step 6 alone (the deviation grows, nothing else changes; no cap here).
    """
    # step 2: to the Glicko-2 scale
    mu = (player.rating - START_RATING) / SCALE
    phi = player.rd / SCALE
    sigma = player.volatility
    if not games:
        return Rating(player.rating, math.sqrt(phi * phi + sigma * sigma) * SCALE, sigma)
    opponents = []
    for opponent, score in games:
        _check_score(score)
        mu_j = (opponent.rating - START_RATING) / SCALE
        phi_j = opponent.rd / SCALE
        opponents.append((_g(phi_j), _expected(mu, mu_j, phi_j), score))
    # step 3: the estimated variance of the rating from the game outcomes alone
    v = 1.0 / sum(g * g * e * (1.0 - e) for g, e, _ in opponents)
    # step 4: the estimated improvement
    improvement = sum(g * (s - e) for g, e, s in opponents)
    delta = v * improvement
    # step 5: the new volatility
    sigma_new = _new_volatility(phi, sigma, delta, v)
    # step 6: the pre-period deviation
    phi_star = math.sqrt(phi * phi + sigma_new * sigma_new)
    # step 7: the new deviation and rating
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * improvement
    # step 8: back to the Glicko scale
    return Rating(SCALE * mu_new + START_RATING, SCALE * phi_new, sigma_new)


def rate_game(a: Rating, b: Rating, score_a: float) -> tuple[Rating, Rating]:
    """Both players after one game, each rated against the other's rating before it."""
    _check_score(score_a)
    return rate(a, [(b, score_a)]), rate(b, [(a, 1.0 - score_a)])


def age(rating: Rating, idle_days: float) -> Rating:
    """The rating after ``idle_days`` without a game: step 6 once per full 30 days.

    The deviation never grows past 350 (a deviation already above it is kept).
    """
    periods = int(idle_days // AGING_DAYS) if idle_days > 0 else 0
    rd = rating.rd
    for _ in range(periods):
        if rd >= MAX_RD:
            break
        phi = rd / SCALE
        rd = min(MAX_RD, math.sqrt(phi * phi + rating.volatility ** 2) * SCALE)
    if rd == rating.rd:
        return rating
    return Rating(rating.rating, rd, rating.volatility)


def is_provisional(rating: Rating) -> bool:
    """Whether the rating is still uncertain (RD above 110): shown with a "?"."""
    return rating.rd > PROVISIONAL_RD


def format_rating(rating: Rating) -> str:
    """The rating as players read it: whole points, "?" when provisional ("1662?")."""
    return f"{round(rating.rating)}{'?' if is_provisional(rating) else ''}"


def format_change(name: str, before: Rating, after: Rating) -> str:
    """One line of a result mail: "alice 1500? -> 1662? (+162)".

    The difference is that of the shown (rounded) values, so the line adds up.
    """
    diff = round(after.rating) - round(before.rating)
    return f"{name} {format_rating(before)} -> {format_rating(after)} ({diff:+d})"
