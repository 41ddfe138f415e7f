"""The text form as PGN: an independent PGN tokenizer reads Amoeba records, comments
survive anything, and malformed files are refused with a clear message."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from pbmserv.games.base import Termination
from pbmserv.records import (
    RecordError,
    RecordMove,
    from_json,
    parse_json,
    parse_records,
    parse_text,
    to_json,
    to_text,
)
from tests.test_records import START, mate_record, playout

# -- a small PGN tokenizer, after the PGN standard's section on tokens ------------------

SYMBOL_START = re.compile(r"[A-Za-z0-9]")
SYMBOL_CONTINUE = re.compile(r"[A-Za-z0-9_+#=:\-]")


def pgn_tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: string, symbol, integer, period, comment, [ ] ( ) < > *, nag,
    termination.  Raises ValueError on a character PGN does not allow."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == '"':
            j, value = i + 1, []
            while text[j] != '"':
                if text[j] == "\\":
                    j += 1
                value.append(text[j])
                j += 1
            out.append(("string", "".join(value)))
            i = j + 1
        elif ch == "{":
            j = text.index("}", i)
            out.append(("comment", text[i + 1: j]))
            i = j + 1
        elif ch == ";":
            i = text.index("\n", i)
        elif ch in "[]()<>*":
            out.append((ch, ch))
            i += 1
        elif ch == ".":
            out.append(("period", "."))
            i += 1
        elif ch == "$":
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(("nag", text[i:j]))
            i = j
        elif text.startswith("1/2-1/2", i):
            out.append(("termination", "1/2-1/2"))
            i += 7
        elif SYMBOL_START.match(ch):
            j = i + 1
            while j < len(text) and SYMBOL_CONTINUE.match(text[j]):
                j += 1
            word = text[i:j]
            kind = ("termination" if word in ("1-0", "0-1") else
                    "integer" if word.isdigit() else "symbol")
            out.append((kind, word))
            i = j
        else:
            raise ValueError(f"PGN has no token starting with {ch!r} at {i}")
    return out


def read_pgn_game(text: str) -> tuple[list[tuple[str, str]], list[str], list[str], str]:
    """(tags, moves, comments, termination) of one game, by the PGN grammar."""
    tokens = pgn_tokens(text)
    tags = []
    i = 0
    while tokens[i][0] == "[":
        assert tokens[i + 1][0] == "symbol" and tokens[i + 2][0] == "string"
        assert tokens[i + 3][0] == "]"
        tags.append((tokens[i + 1][1], tokens[i + 2][1]))
        i += 4
    moves: list[str] = []
    comments: list[str] = []
    while tokens[i][0] not in ("termination", "*"):
        kind, word = tokens[i]
        if kind == "integer":
            i += 1
            while tokens[i][0] == "period":
                i += 1
            continue
        assert kind in ("symbol", "comment"), (kind, word)
        (moves if kind == "symbol" else comments).append(word)
        i += 1
    assert i == len(tokens) - 1, "the termination marker ends the game"
    return tags, moves, comments, tokens[i][1]


def test_an_amoeba_record_is_pgn() -> None:
    record = playout("amoeba", (), 51, 40)
    record = replace(record, moves=tuple(
        replace(m, comment="nice {move}; (really) \"quoted\" [x] $1 %") for m in record.moves))
    text = to_text(record)
    tags, moves, comments, end = read_pgn_game(text)
    assert [name for name, _ in tags[:7]] == [
        "Event", "Site", "Date", "Round", "White", "Black", "Result"]
    values = dict(tags)
    assert re.fullmatch(r"\d{4}\.\d{2}\.\d{2}", values["Date"])
    assert values["Variant"] == "Amoeba" and values["Game"] == "amoeba"
    assert "FEN" not in values and "SetUp" not in values
    assert end == values["Result"] == record.result
    assert len(moves) == len(record.moves)
    for move, kept in zip(moves, record.moves, strict=True):
        assert re.fullmatch(r"[a-h][1-9]-[a-h][1-9](=[QRBN])?", move)
        assert kept.notation.split(",")[0] == move
    assert sum(c.startswith("[%ts ") for c in comments) == len(record.moves)
    assert all(not line.startswith("%") for line in text.splitlines())


def test_the_checkmate_is_pgn_too() -> None:
    _, moves, comments, end = read_pgn_game(to_text(mate_record()))
    assert end == "1-0" and moves[0] == "e1-f3" and comments[0].endswith("[%then e5-e4]")


# -- comments of every kind -------------------------------------------------------------


@pytest.mark.parametrize("comment", [
    "", " ", "}", "{", "{}", "}{", "\\", "\\}", "\\u007d", "a\nb", "\n", "\r\n", "\t",
    "a  b", "  lead", "trail  ", "x" * 300, "word " * 80, "[%ts 2024-05-01T10:00:00Z]",
    "[%then a1-a2]", "% at the start", "ünï 😀 \u200b zero width", "\x00\x1f\x7f\x85",
    "\u2028\u2029", 'quote " here', "1-0", "*", "1. e4",
])
def test_comments_round_trip(comment: str) -> None:
    record = replace(mate_record(), moves=tuple(
        replace(m, comment=comment) for m in mate_record().moves[:3]),
        termination=None, winner=None, reason="")
    text = to_text(record)
    assert parse_text(text) == [record]
    assert to_text(parse_text(text)[0]) == text
    assert from_json(json.loads(json.dumps(to_json(record)))) == record
    read_pgn_game(text)  # still PGN


# -- malformed text ---------------------------------------------------------------------


def _valid() -> str:
    record = replace(mate_record(), moves=(
        RecordMove("e1-f3,e5-e4", START + timedelta(hours=1), "hello"),
        RecordMove("c7-d5,f6-g7", START + timedelta(hours=2))),
        termination=None, winner=None, reason="")
    return to_text(record)


@pytest.mark.parametrize("change, message", [
    (lambda t: "", "no record found"),
    (lambda t: "1. e2-e4 *", "starts with its tags"),
    (lambda t: t.replace('[Game "amoeba"]\n', ""), "Game tag is missing"),
    (lambda t: t.replace('[Game "amoeba"]', '[Game "chess"]'), "no game 'chess'"),
    (lambda t: t.replace('[Site "?"]\n', ""), "tag Site is missing"),
    (lambda t: t.replace('[Black "bob"]\n', ""), "tag Black is missing"),
    (lambda t: t.replace('[Site "?"]', '[Site "?"]\n[Site "x"]'), "Site is given twice"),
    (lambda t: t.replace('[Site "?"]', '[Site "?"]\n[ECO "A00"]'), "unknown tag ECO"),
    (lambda t: t.replace('[Site "?"]', '[Site ?]'), "a tag is written"),
    (lambda t: t.replace('[Result "*"]', '[Result "1-0"]'), "disagree"),
    (lambda t: t.replace('[Result "*"]', '[Result "2-0"]'), "is not a result"),
    (lambda t: t.replace("unterminated", "boredom"), "disagree"),
    (lambda t: t.replace('[Result "*"]', '[Result "1-0"]').replace("unterminated", "boredom"),
     "Termination 'boredom' is none of"),
    (lambda t: t.replace("2024.05.01", "2024.05.02"), "Date '2024.05.02' disagrees"),
    (lambda t: t.replace('[Variant "Amoeba"]', '[Variant "Chess"]'), "Variant 'Chess'"),
    (lambda t: t.replace('Started "2024-05-01T09:30:00Z"', 'Started "yesterday"'),
     "not a time like"),
    (lambda t: t.replace('Started "2024-05-01T09:30:00Z"', 'Started "2024-02-30T09:30:00Z"'),
     "not a real time"),
    (lambda t: t.replace('[Round "2"]', '[Round "two"]'), "Round 'two' is not a number"),
    (lambda t: t.replace('[Event "Spring Amoeba"]', '[Event "?"]\n[Board "x"]'),
     "Board 'x' is not a number"),
    (lambda t: t.replace('[Site "?"]', '[Site "?"]\n[Ratings "alice 1500"]'),
     "Ratings are written"),
    (lambda t: t.replace('[Site "?"]', '[Site "?"]\n[Ratings "eve 1500 1510"]'),
     "did not play"),
    (lambda t: t.rstrip().removesuffix("*") + "{hello *", "never closed"),
    (lambda t: t.replace("{hello}", "{hel\\lo}"), "backslash must start an escape"),
    (lambda t: t.replace("{hello}", "{hello\\ud800}"), "is not a character"),
    (lambda t: t.replace("{hello}", "{a} {b}"), "at most one comment"),
    (lambda t: t.replace("{hello}", "; hello"), "comments are written in braces"),
    (lambda t: t.replace("{hello}", "(1... e8-e7)"), "variations are not part"),
    (lambda t: t.replace("{hello}", "$1"), "neither a move nor a move number"),
    (lambda t: t.replace("1... c7-d5", "2. c7-d5"), "expected the move number 1..."),
    (lambda t: t.replace("1. e1-f3", "e1-f3"), "expected the move number 1."),
    (lambda t: t.replace(" {[%ts 2024-05-01T10:30:00Z] [%then e5-e4]}", ""),
     "must be followed by its time"),
    (lambda t: t.replace("[%ts 2024-05-01T10:30:00Z]", "[%ts 10:30]"), "not a time like"),
    (lambda t: t.replace("[%ts 2024-05-01T10:30:00Z]", "[%clk 0:10:00]"),
     "must be followed by its time"),
    (lambda t: t.rstrip().removesuffix("*"), "do not end in a result"),
    (lambda t: t.rstrip().removesuffix("*") + "1-0", "the moves end in 1-0"),
    (lambda t: "%escaped line\n" + t, "escape lines"),
    (lambda t: t.replace("c7-d5", "7d5"), "neither a move nor a move number"),
    (lambda t: t + "\n" + t.replace('[Game "amoeba"]', '[Game "nope"]'), "record 2: "),
])
def test_malformed_text_is_refused(change: Any, message: str) -> None:
    text = _valid()
    assert parse_text(text)  # the unchanged text is fine
    with pytest.raises(RecordError, match=re.escape(message)):
        parse_text(change(text))


def test_errors_name_the_line() -> None:
    bad = _valid().replace("{hello}", "{hello\\q}")
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if "hello" in text)
    with pytest.raises(RecordError, match=f"^record 1: line {line}: "):
        parse_text(bad)


# -- malformed JSON ---------------------------------------------------------------------


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("game"), "the key 'game' is missing"),
    (lambda d: d.update(colour="red"), "unknown key 'colour'"),
    (lambda d: d.update(format="pgn"), "'format' must be"),
    (lambda d: d.update(version=2), "reads version 1 records"),
    (lambda d: d.update(board="12"), "'board' must be int or null"),
    (lambda d: d.update(board=True), "'board' must be int or null"),
    (lambda d: d.update(options="-small"), "'options' must be list"),
    (lambda d: d.update(options=["-small", 3]), "list of strings"),
    (lambda d: d.update(winner=1), "'result' '1-0' disagrees"),
    (lambda d: d.update(termination="boredom"), "none of"),
    (lambda d: d["players"].reverse(), "seats of Amoeba are White, Black"),
    (lambda d: d["players"][0].update(rating=3), "player 1: unknown key 'rating'"),
    (lambda d: d["moves"][1].pop("played_at"), "move 2: the key 'played_at' is missing"),
    (lambda d: d["moves"][1].update(played_at="soon"), "move 2: 'soon' is not a time"),
    (lambda d: d["moves"][0].update(notation="e2 e4"), "cannot be a move's notation"),
    (lambda d: d["ratings"].append({"userid": "alice", "before": "1500", "after": 1}),
     "rating change 1: 'before' must be int or float"),
    (lambda d: d.update(started=None), "'started' must be str"),
])
def test_malformed_json_is_refused(change: Any, message: str) -> None:
    data = to_json(mate_record())
    change(data)
    with pytest.raises(RecordError, match=re.escape(message)):
        from_json(data)


def test_json_files() -> None:
    with pytest.raises(RecordError, match="not JSON"):
        parse_json("{nope")
    with pytest.raises(RecordError, match="record 2: expected an object"):
        parse_json(json.dumps([to_json(mate_record()), 3]))
    with pytest.raises(RecordError, match="no record"):
        parse_records("[]")


def test_a_declined_game_written_as_a_draw_before_reads_as_no_result() -> None:
    """Records exported before a declined game's Result became "*" still import."""
    text = _valid().replace('[Result "*"]', '[Result "1/2-1/2"]').replace(
        "unterminated", "declined").replace("\n*", "\n1/2-1/2")
    [record] = parse_text(text)
    assert (record.termination, record.winner, record.result) == (
        Termination.DECLINED, None, "*")
    data = to_json(record)
    data["result"] = "1/2-1/2"
    [again] = parse_json(json.dumps(data))
    assert again.result == "*"
    data["winner"] = 0  # a declined game with a winner is no legacy form: refused
    with pytest.raises(RecordError):
        parse_json(json.dumps(data))
