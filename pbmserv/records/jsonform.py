"""Records as JSON: the same content as the text form, as plain data.

One record is an object::

    {"format": "pbmserv-record", "version": 1,
     "game": "amoeba", "options": ["-small"], "board": 12,
     "event": null, "round": null, "site": "pbmserv",
     "players": [{"seat": "White", "userid": "alice"}, {"seat": "Black", "userid": "bob"}],
     "started": "2024-05-01T10:00:00Z", "ended": "2024-05-03T18:30:00Z",
     "result": "1-0", "winner": 0, "termination": "resignation",
     "reason": "Black resigned",
     "moves": [{"notation": "e2-e4,b3-b4", "played_at": "2024-05-01T10:05:00Z",
                "comment": null}],
     "ratings": [{"userid": "alice", "before": 1500.0, "after": 1662.31}]}

``winner`` is a seat number (0 first) or null; ``termination`` null while the game
runs.  ``result`` and the seat names repeat what the other fields say; on reading
they must agree.  A file holds one record or a list of them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pbmserv.games.base import Termination, is_no_result
from pbmserv.records.model import (
    GameRecord,
    RatingChange,
    RecordError,
    RecordMove,
    engine_of,
    format_time,
    parse_time,
)

FORMAT = "pbmserv-record"
VERSION = 1
_KEYS = ("format", "version", "game", "options", "board", "event", "round", "site", "players",
         "started", "ended", "result", "winner", "termination", "reason", "moves", "ratings")


def to_json(record: GameRecord) -> dict[str, Any]:
    """The record as JSON-ready data (``json.dumps`` it as it is)."""
    engine = engine_of(record.game)
    if len(record.players) != len(engine.seats):
        raise RecordError(f"{engine.title} has {len(engine.seats)} seats, "
                          f"not {len(record.players)}")
    return {
        "format": FORMAT,
        "version": VERSION,
        "game": record.game,
        "options": list(record.options),
        "board": record.board,
        "event": record.event,
        "round": record.round,
        "site": record.site,
        "players": [{"seat": seat, "userid": userid}
                    for seat, userid in zip(engine.seats, record.players, strict=True)],
        "started": format_time(record.started),
        "ended": None if record.ended is None else format_time(record.ended),
        "result": record.result,
        "winner": record.winner,
        "termination": None if record.termination is None else record.termination.value,
        "reason": record.reason,
        "moves": [{"notation": m.notation, "played_at": format_time(m.played_at),
                   "comment": m.comment} for m in record.moves],
        "ratings": [{"userid": c.userid, "before": c.before, "after": c.after}
                    for c in record.ratings],
    }


def _get(data: dict[str, Any], key: str, kinds: tuple[type, ...], where: str,
         nullable: bool = False) -> Any:
    if key not in data:
        raise RecordError(f"{where}: the key {key!r} is missing")
    value = data[key]
    if value is None and nullable:
        return None
    # bool is an int to Python but not a number to a record
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds) + (" or null" if nullable else "")
        raise RecordError(f"{where}: {key!r} must be {names}, not {json.dumps(value)}")
    return value


def _exact_keys(data: Any, keys: Sequence[str], where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected an object, not {type(data).__name__}")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise RecordError(f"{where}: unknown key {unknown[0]!r}")
    return data


def _within(where: str, exc: RecordError) -> RecordError:
    """The error with ``where`` in front, unless it already names it."""
    text = str(exc)
    return RecordError(text if text.startswith(where) else f"{where}: {text}")


def _strings(values: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise RecordError(f"{where}: {key!r} must be a list of strings")
    return tuple(values)


def from_json(data: Any, where: str = "record") -> GameRecord:
    """The record from ``to_json``'s data; raises RecordError saying what is wrong
    (``where`` names the record in the messages)."""
    data = _exact_keys(data, _KEYS, where)
    if _get(data, "format", (str,), where) != FORMAT:
        raise RecordError(f"{where}: 'format' must be {FORMAT!r}")
    if _get(data, "version", (int,), where) != VERSION:
        raise RecordError(f"{where}: this server reads version {VERSION} records, "
                          f"not version {data['version']}")
    engine = engine_of(_get(data, "game", (str,), where))
    seats = []
    players = []
    for n, entry in enumerate(_get(data, "players", (list,), where), start=1):
        w = f"{where}, player {n}"
        entry = _exact_keys(entry, ("seat", "userid"), w)
        seats.append(_get(entry, "seat", (str,), w))
        players.append(_get(entry, "userid", (str,), w))
    if tuple(seats) != engine.seats:
        raise RecordError(f"{where}: the seats of {engine.title} are "
                          f"{', '.join(engine.seats)}, not {', '.join(seats) or 'none'}")
    moves = []
    for n, entry in enumerate(_get(data, "moves", (list,), where), start=1):
        w = f"{where}, move {n}"
        entry = _exact_keys(entry, ("notation", "played_at", "comment"), w)
        try:
            moves.append(RecordMove(_get(entry, "notation", (str,), w),
                                    parse_time(_get(entry, "played_at", (str,), w), w),
                                    _get(entry, "comment", (str,), w, nullable=True)))
        except RecordError as exc:
            raise _within(w, exc) from None
    ratings = []
    for n, entry in enumerate(_get(data, "ratings", (list,), where), start=1):
        w = f"{where}, rating change {n}"
        entry = _exact_keys(entry, ("userid", "before", "after"), w)
        try:
            ratings.append(RatingChange(_get(entry, "userid", (str,), w),
                                        _get(entry, "before", (int, float), w),
                                        _get(entry, "after", (int, float), w)))
        except RecordError as exc:
            raise _within(w, exc) from None
    kind = _get(data, "termination", (str,), where, nullable=True)
    try:
        termination = None if kind is None else Termination(kind)
    except ValueError:
        raise RecordError(f"{where}: 'termination' {kind!r} is none of "
                          f"{', '.join(t.value for t in Termination)}") from None
    try:
        record = _record(data, players, moves, ratings, termination, where)
    except RecordError as exc:
        raise _within(where, exc) from None
    given = _get(data, "result", (str,), where)
    legacy = given == "1/2-1/2" and is_no_result(record.termination, record.winner)
    if given != record.result and not legacy:  # older records gave no result as a draw
        raise RecordError(f"{where}: 'result' {data['result']!r} disagrees with 'winner' and "
                          f"'termination' (they make it {record.result!r})")
    return record


def _record(data: dict[str, Any], players: list[str], moves: list[RecordMove],
            ratings: list[RatingChange], termination: Termination | None,
            where: str) -> GameRecord:
    ended = _get(data, "ended", (str,), where, nullable=True)
    return GameRecord(
        game=data["game"],
        options=_strings(_get(data, "options", (list,), where), "options", where),
        board=_get(data, "board", (int,), where, nullable=True),
        players=tuple(players),
        started=parse_time(_get(data, "started", (str,), where), f"{where}, started"),
        ended=None if ended is None else parse_time(ended, f"{where}, ended"),
        moves=tuple(moves),
        winner=_get(data, "winner", (int,), where, nullable=True),
        termination=termination,
        reason=_get(data, "reason", (str,), where),
        ratings=tuple(ratings),
        event=_get(data, "event", (str,), where, nullable=True),
        round=_get(data, "round", (int,), where, nullable=True),
        site=_get(data, "site", (str,), where),
    )


def dump_json(records: Sequence[GameRecord]) -> str:
    """A JSON text: one record as an object, several as a list."""
    data: Any = [to_json(r) for r in records]
    if len(records) == 1:
        data = data[0]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def parse_json(text: str) -> list[GameRecord]:
    """The records of a JSON text (one object or a list of them)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not JSON: {exc}") from None
    items = data if isinstance(data, list) else [data]
    out = [from_json(item, f"record {n}") for n, item in enumerate(items, start=1)]
    if not out:
        raise RecordError("no record found")
    return out
