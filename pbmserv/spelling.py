"""Spelling help for words a person typed: "did you mean ...?".

Pure functions over strings: the commands ask with the verbs, games and userids
they know of.
"""

from __future__ import annotations

from collections.abc import Iterable


def distance(a: str, b: str) -> int:
    """The edit distance of ``a`` and ``b``: letters inserted, deleted, changed, or two
    neighbours swapped (``mvoe`` is one step from ``move``)."""
    if a == b:
        return 0
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, start=1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows = [rows[-1], row]
    return rows[-1][-1]


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known word nearest ``word`` (case ignored), if it is near enough to be
    what was meant: one slip in a short word, two in a word of six letters or more.
    Ties go to the first of ``known``."""
    typed = word.lower()
    allowed = 1 if len(typed) < 6 else 2
    best: tuple[int, str] | None = None
    for candidate in known:
        if abs(len(candidate) - len(typed)) > allowed:
            continue
        steps = distance(typed, candidate.lower())
        if 0 < steps <= allowed and (best is None or steps < best[0]):
            best = (steps, candidate)
    return best[1] if best else None
