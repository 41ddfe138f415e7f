"""Spelling help for words a person typed: "did you mean ...?".

Pure functions over strings: the commands ask with the verbs, games and userids
they know of.  A comparison costs at most ``len(word) * (2 * allowed + 1)`` steps
(only the cells of the edit table within ``allowed`` slips of the diagonal are
worked out, and it stops as soon as no cell is near enough), so the caller bounds
the cost by how many words it offers (see accounts.similar_userid).
"""

from __future__ import annotations

from collections.abc import Iterable


def allowed_slips(word: str) -> int:
    """How many slips a word may hold and still be taken for another: one in a short
    word, two in a word of six letters or more."""
    return 1 if len(word) < 6 else 2


def distance(a: str, b: str, limit: int | None = None) -> int:
    """The edit distance of ``a`` and ``b``: letters inserted, deleted, changed, or two
    neighbours swapped (``mvoe`` is one step from ``move``).  With ``limit``, any
    distance beyond it is given as ``limit + 1``, found in at most
    ``len(a) * (2 * limit + 1)`` steps."""
    if a == b:
        return 0
    bound = max(len(a), len(b)) if limit is None else limit
    far = bound + 1
    if abs(len(a) - len(b)) > bound:
        return far
    before: list[int] = []
    last = [j if j <= bound else far for j in range(len(b) + 1)]
    last_near = True
    for i, ca in enumerate(a, start=1):
        row = [far] * (len(b) + 1)
        near = i <= bound
        if near:
            row[0] = i
        # a cell further than ``bound`` from the diagonal is further than that anyway
        for j in range(max(1, i - bound), min(len(b), i + bound) + 1):
            cb = b[j - 1]
            steps = last[j - 1] if ca == cb else last[j - 1] + 1
            steps = min(steps, last[j] + 1, row[j - 1] + 1)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb \
                    and before[j - 2] + 1 < steps:
                steps = before[j - 2] + 1
            if steps < far:
                row[j] = steps
                near = True
        if not (near or last_near):
            return far  # two rows beyond the bound: so is every row after them
        before, last, last_near = last, row, near
    return last[-1]


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known word nearest ``word`` (case ignored), if it is near enough to be
    what was meant (``allowed_slips``).  Ties go to the first of ``known``."""
    typed = word.lower()
    allowed = allowed_slips(typed)
    best: tuple[int, str] | None = None
    for candidate in known:
        if abs(len(candidate) - len(typed)) > allowed:
            continue
        steps = distance(typed, candidate.lower(), allowed)
        if 0 < steps <= allowed and (best is None or steps < best[0]):
            best = (steps, candidate)
    return best[1] if best else None
