"""Records as text in the manner of PGN, the chess game format.

A record is a tag section then the moves::

    [Event "?"]
    [Site "pbmserv"]
    [Date "2024.05.01"]
    [Round "-"]
    [White "alice"]
    [Black "bob"]
    [Result "1-0"]
    [Game "amoeba"]
    [Variant "Amoeba"]
    [Options "-small"]
    [Board "12"]
    [Started "2024-05-01T10:00:00Z"]
    [Ended "2024-05-03T18:30:00Z"]
    [Termination "resignation"]
    [Reason "Black resigned"]
    [Ratings "alice 1500.00 1662.31; bob 1500.00 1337.69"]

    1. e2-e4 {[%ts 2024-05-01T10:05:00Z]} 1... e8-e6 {[%ts 2024-05-01T11:00:00Z]}
    {Your move!} 2. g1-f3 {[%ts 2024-05-02T09:00:00Z] [%then b3-b4]} 1-0

- The first seven tags are PGN's seven tag roster in its order, with the players
  under their seat names (``engine.seats``: White and Black, Red and Blue).  Event is
  "?" outside a tournament, Round "-".  Date, Variant (the game's title) and Result
  repeat what other tags say, for PGN readers; on reading they must agree.
- Board, Ended, Reason and Ratings appear only when there is something to say.
  Termination is the kind of end (``Termination`` values) or "unterminated".
  Ratings are "userid before after" joined by "; ", the numbers to hundredths (as
  they are kept in records).
- Every move is its number ("3." before the first seat's move, "3..." before the
  second's), the first part of its notation as the move, and a comment with the
  time it was played (``[%ts ...]``, in the manner of PGN's ``[%clk ...]``) and the
  other parts of the notation if any (``[%then ...]``: Amoeba's slide and extra
  promotions, Ex nihilo's hostage steps).  A player's comment follows in a second
  pair of braces.  So an Amoeba record is PGN that chess programs can split into
  tags, moves and comments (they cannot play the moves: the board is not chess's).
- In comments and tag values a backslash starts an escape: ``\\\\`` ``\\n``
  ``\\t`` ``\\r``, ``\\"`` in tag values, and ``\\uXXXX`` (four hex digits) for
  ``}`` in comments and for other control characters; everything else, any Unicode
  character, stands as it is.  The moves are wrapped at 76 columns, between tokens,
  and inside a player's comment only at a single space between two other characters
  (never before "%" or "["); a line break inside a comment is read back as that
  space, so the text reads back exactly.
- Records in one file follow each other, separated by a blank line.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from pbmserv.games.base import NO_RESULT, Termination
from pbmserv.records.model import (
    GameRecord,
    RatingChange,
    RecordError,
    RecordMove,
    engine_of,
    format_time,
    parse_time,
    winner_of,
)

LINE_WIDTH = 76
UNTERMINATED = "unterminated"
ROSTER = ("Event", "Site", "Date", "Round")
EXTRA = ("Result", "Game", "Variant", "Options", "Board", "Started", "Ended", "Termination",
         "Reason", "Ratings")
REQUIRED = ("Event", "Site", "Round", "Result", "Game", "Options", "Started", "Termination")

_TAG = re.compile(r'\[[ \t]*([A-Za-z0-9_]+)[ \t]+"((?:[^"\\\n]|\\.)*)"[ \t]*\]')
_WORD = re.compile(r'[^\s{}\[\]();"]+')
_NUMBER = re.compile(r"(\d+)\.(\.\.)?")
_RESULTS = ("1-0", "0-1", "1/2-1/2")
_META = re.compile(r"^\[%ts ([^\s\]]+)\](?: \[%then ([^\s\]]+)\])?$")
_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


# -- escapes ----------------------------------------------------------------------------


def escape(text: str, special: str) -> str:
    """Text safe inside a comment (``special`` "}") or a tag value (``special`` '"')."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"' and special == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == special or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def unescape(text: str, where: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        code = text[i + 1: i + 2]
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            i += 2
        elif code == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2: i + 6]):
            value = int(text[i + 2: i + 6], 16)
            if 0xD800 <= value <= 0xDFFF:
                raise RecordError(f"{where}: \\u{text[i + 2: i + 6]} is not a character")
            out.append(chr(value))
            i += 6
        else:
            raise RecordError(f"{where}: a backslash must start an escape "
                              f"(\\\\, \\n, \\t, \\r, \\\" or \\uXXXX), not {text[i: i + 2]!r}")
    return "".join(out)


# -- writing ----------------------------------------------------------------------------


def _tags(record: GameRecord) -> list[tuple[str, str]]:
    engine = engine_of(record.game)
    if len(record.players) != len(engine.seats):
        raise RecordError(f"{engine.title} has {len(engine.seats)} seats, "
                          f"not {len(record.players)}")
    tags = [
        ("Event", record.event or "?"),
        ("Site", record.site),
        ("Date", record.started.strftime("%Y.%m.%d")),
        ("Round", "-" if record.round is None else str(record.round)),
        *zip(engine.seats, record.players, strict=True),
        ("Result", record.result),
        ("Game", record.game),
        ("Variant", engine.title),
        ("Options", " ".join(record.options)),
    ]
    if record.board is not None:
        tags.append(("Board", str(record.board)))
    tags.append(("Started", format_time(record.started)))
    if record.ended is not None:
        tags.append(("Ended", format_time(record.ended)))
    tags.append(("Termination", record.termination.value if record.termination else UNTERMINATED))
    if record.reason:
        tags.append(("Reason", record.reason))
    if record.ratings:
        tags.append(("Ratings", "; ".join(f"{c.userid} {c.before:.2f} {c.after:.2f}"
                                          for c in record.ratings)))
    return tags


def _move_tokens(record: GameRecord, seats: int) -> list[str]:
    out = []
    for ply, move in enumerate(record.moves):
        number, seat = divmod(ply, seats)
        out.append(f"{number + 1}." if seat == 0 else f"{number + 1}...")
        first, _, rest = move.notation.partition(",")
        out.append(first)
        meta = f"[%ts {format_time(move.played_at)}]"
        if rest:
            meta += f" [%then {rest}]"
        out.append("{" + meta + "}")
        if move.comment is not None:
            out.append("{" + escape(move.comment, "}") + "}")
    out.append(record.result)
    return out


def _pieces(token: str) -> list[str]:
    """A token cut at the spaces where a line may break (only in players' comments)."""
    if not token.startswith("{") or token.startswith("{[%ts "):
        return [token]
    pieces, start = [], 0
    for i in range(1, len(token) - 1):
        if token[i] == " " and token[i - 1] != " " and token[i + 1] not in " %[":
            pieces.append(token[start:i])
            start = i + 1
    pieces.append(token[start:])
    return pieces


def _wrap(tokens: Sequence[str], width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for token in tokens:
        for piece in _pieces(token):
            if line and len(line) + 1 + len(piece) > width:
                lines.append(line)
                line = piece
            else:
                line = f"{line} {piece}" if line else piece
    lines.append(line)
    return lines


def to_text(record: GameRecord) -> str:
    """The record as text, ending in a newline."""
    tags = _tags(record)
    head = [f'[{name} "{escape(value, chr(34))}"]' for name, value in tags]
    seats = len(record.players)
    return "\n".join([*head, "", *_wrap(_move_tokens(record, seats), LINE_WIDTH)]) + "\n"


def dump_text(records: Sequence[GameRecord]) -> str:
    """Several records in one text, a blank line between them."""
    return "\n".join(to_text(r) for r in records)


# -- reading ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # tag, number, move, comment, result
    text: str
    line: int
    value: str = ""


def _tokens(text: str) -> Iterator[_Token]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    i, line, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch.isspace():
            i += 1
        elif ch == "%" and (i == 0 or text[i - 1] == "\n"):
            raise RecordError(f"line {line}: escape lines (starting with %) are not read")
        elif ch == "[":
            m = _TAG.match(text, i)
            if not m:
                raise RecordError(f'line {line}: a tag is written [Name "value"]')
            yield _Token("tag", m.group(1), line, unescape(m.group(2), f"line {line}"))
            i = m.end()
        elif ch == "{":
            end = text.find("}", i + 1)
            if end < 0:
                raise RecordError(f"line {line}: a comment opened with {{ is never closed")
            body = text[i + 1: end]
            yield _Token("comment", body.replace("\n", " "), line)
            line += body.count("\n")
            i = end + 1
        elif ch == "*":
            yield _Token("result", "*", line)
            i += 1
        else:
            m = _WORD.match(text, i)
            if not m:
                hint = {";": ": comments are written in braces { }",
                        "(": ": variations are not part of a record"}.get(ch, "")
                raise RecordError(f"line {line}: unexpected {ch!r}{hint}")
            word = m.group(0)
            number = _NUMBER.match(word)
            if word in _RESULTS:
                yield _Token("result", word, line)
                i = m.end()
            elif number:
                yield _Token("number", number.group(0), line)
                i += number.end()
            elif word[0].isalpha():
                yield _Token("move", word, line)
                i = m.end()
            else:
                raise RecordError(f"line {line}: {word!r} is neither a move nor a move number")


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens = list(_tokens(text))
        self.at = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token


def parse_text(text: str) -> list[GameRecord]:
    """Every record in ``text``; raises RecordError saying which record and line is wrong."""
    reader = _Reader(text)
    records: list[GameRecord] = []
    while reader.peek() is not None:
        try:
            records.append(_read_record(reader))
        except RecordError as exc:
            raise RecordError(f"record {len(records) + 1}: {exc}") from None
    if not records:
        raise RecordError("no record found: a record starts with its tags, like [Event \"?\"]")
    return records


def _read_record(reader: _Reader) -> GameRecord:
    first = reader.peek()
    assert first is not None
    if first.kind != "tag":
        raise RecordError(f"line {first.line}: a record starts with its tags, like "
                          f"[Event \"?\"], not {first.text!r}")
    tags: dict[str, str] = {}
    while (token := reader.peek()) is not None and token.kind == "tag":
        reader.take()
        if token.text in tags:
            raise RecordError(f"line {token.line}: the tag {token.text} is given twice")
        tags[token.text] = token.value
    record = _header(tags, first.line)
    seats = len(record.players)
    moves: list[RecordMove] = []
    while True:
        token = reader.peek()
        if token is None:
            raise RecordError(f"the moves of the record starting on line {first.line} "
                              f"do not end in a result (1-0, 0-1, 1/2-1/2 or *)")
        if token.kind == "result":
            reader.take()
            if token.text != record.result:
                raise RecordError(f"line {token.line}: the moves end in {token.text}, but "
                                  f"the Result tag says {record.result}")
            break
        moves.append(_read_move(reader, len(moves), seats))
    return replace(record, moves=tuple(moves))


def _read_move(reader: _Reader, ply: int, seats: int) -> RecordMove:
    number, seat = divmod(ply, seats)
    expected = f"{number + 1}." if seat == 0 else f"{number + 1}..."
    token = reader.take()
    if token.kind != "number" or token.text != expected:
        raise RecordError(f"line {token.line}: expected the move number {expected} "
                          f"before move {ply + 1}, found {token.text!r}")
    move = reader.peek()
    if move is None or move.kind != "move":
        raise RecordError(f"line {token.line}: move {expected} is missing")
    reader.take()
    meta = reader.peek()
    found = _META.match(meta.text) if meta is not None and meta.kind == "comment" else None
    if meta is None or found is None:
        raise RecordError(f"line {move.line}: move {expected} {move.text} must be followed by "
                          "its time, like {[%ts 2024-05-01T10:00:00Z]}")
    reader.take()
    played = parse_time(found.group(1), f"line {meta.line}")
    notation = move.text + ("," + found.group(2) if found.group(2) else "")
    comment = None
    extra = reader.peek()
    if extra is not None and extra.kind == "comment":
        reader.take()
        comment = unescape(extra.text, f"line {extra.line}")
        after = reader.peek()
        if after is not None and after.kind == "comment":
            raise RecordError(f"line {after.line}: a move has at most one comment after "
                              "its time")
    try:
        return RecordMove(notation, played, comment)
    except RecordError as exc:
        raise RecordError(f"line {move.line}: {exc}") from None


def _header(tags: dict[str, str], line: int) -> GameRecord:
    """The record the tags describe, without its moves (checked later with them)."""
    where = f"the tags from line {line}"
    if "Game" not in tags:
        raise RecordError(f"{where}: the Game tag is missing")
    engine = engine_of(tags["Game"])
    known = set(ROSTER) | set(EXTRA) | set(engine.seats)
    unknown = sorted(set(tags) - known)
    if unknown:
        raise RecordError(f"{where}: unknown tag {unknown[0]}; a {engine.title} record has "
                          f"the tags {', '.join([*ROSTER, *engine.seats, *EXTRA])}")
    missing = [t for t in (*REQUIRED, *engine.seats) if t not in tags]
    if missing:
        raise RecordError(f"{where}: the tag {missing[0]} is missing")
    finished, winner = winner_of(tags["Result"], len(engine.seats))
    kind = tags["Termination"]
    no_result = not finished and kind in NO_RESULT
    if (kind == UNTERMINATED) == finished and not no_result:
        raise RecordError(f"{where}: Result {tags['Result']} and Termination {kind} disagree "
                          f"(a running game is \"*\" and \"{UNTERMINATED}\")")
    # (a record written before 2026-11-23 gives such a game "1/2-1/2": read as "*")
    try:
        termination = None if kind == UNTERMINATED else Termination(kind)
    except ValueError:
        kinds = ", ".join(t.value for t in Termination)
        raise RecordError(f"{where}: Termination {kind!r} is none of {kinds}, "
                          f"{UNTERMINATED}") from None
    try:
        record = GameRecord(
            game=tags["Game"],
            options=tuple(tags["Options"].split()),
            board=_number(tags, "Board", where),
            players=tuple(tags[s] for s in engine.seats),
            started=parse_time(tags["Started"], f"{where}, Started"),
            ended=parse_time(tags["Ended"], f"{where}, Ended") if "Ended" in tags else None,
            winner=winner,
            termination=termination,
            reason=tags.get("Reason", ""),
            ratings=_ratings(tags.get("Ratings"), where),
            event=None if tags["Event"] == "?" else tags["Event"],
            round=None if tags["Round"] == "-" else _number(tags, "Round", where),
            site=tags["Site"],
        )
    except RecordError as exc:
        raise RecordError(f"{where}: {exc}") from None
    written = dict(_tags(record))
    for name in ("Date", "Variant"):
        # a Variant written before a title changed ("Exnihilo") still matches
        if name in tags and _same(name, tags[name]) != _same(name, written[name]):
            raise RecordError(f"{where}: {name} {tags[name]!r} disagrees with the other tags "
                              f"(they make it {written[name]!r})")
    return record


def _same(name: str, value: str) -> str:
    return value.replace(" ", "").lower() if name == "Variant" else value


def _number(tags: dict[str, str], name: str, where: str) -> int | None:
    if name not in tags:
        return None
    if not re.fullmatch(r"\d+", tags[name]):
        raise RecordError(f"{where}: {name} {tags[name]!r} is not a number")
    return int(tags[name])


def _ratings(text: str | None, where: str) -> tuple[RatingChange, ...]:
    if text is None:
        return ()
    out = []
    for part in text.split("; "):
        words = part.split(" ")
        try:
            if len(words) != 3:
                raise ValueError
            out.append(RatingChange(words[0], float(words[1]), float(words[2])))
        except ValueError:
            raise RecordError(f"{where}: Ratings are written \"userid before after\" joined "
                              f"by \"; \", not {part!r}") from None
    return tuple(out)
