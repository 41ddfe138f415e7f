"""Waits that grow after each refusal in a row: doubled each time from a first length
up to the longest, each drawn within a fifth of its length either way, so that the
processes (and servers) refused together do not all come back in the same second."""

from __future__ import annotations

import random

#: how far a wait is drawn from its length, either way
JITTER = 0.2


def backoff(refusals: int, first: float, longest: float,
            draw: random.Random | None = None) -> float:
    """The wait after ``refusals`` refusals in a row (1: the first)."""
    length = min(first * 2.0 ** max(refusals - 1, 0), longest)
    low, high = 1 - JITTER, 1 + JITTER
    return length * (draw.uniform(low, high) if draw else random.uniform(low, high))
