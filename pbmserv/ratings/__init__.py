"""Player ratings: Glicko-2, one rating per player per game."""

from __future__ import annotations

from pbmserv.ratings.glicko2 import (
    AGING_DAYS,
    PROVISIONAL_RD,
    Rating,
    age,
    format_change,
    format_rating,
    is_provisional,
    rate,
    rate_game,
)

__all__ = [
    "AGING_DAYS",
    "PROVISIONAL_RD",
    "Rating",
    "age",
    "format_change",
    "format_rating",
    "is_provisional",
    "rate",
    "rate_game",
]
