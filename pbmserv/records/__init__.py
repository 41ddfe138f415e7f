"""Game records, pure: the record value, its text (PGN-like) and JSON forms, replay."""

from __future__ import annotations

from pbmserv.records.jsonform import dump_json, from_json, parse_json, to_json
from pbmserv.records.loading import parse_records
from pbmserv.records.model import (
    RULE_TERMINATIONS,
    GameRecord,
    RatingChange,
    RecordError,
    RecordMove,
)
from pbmserv.records.pgn import dump_text, parse_text, to_text
from pbmserv.records.replay import Replayed, ReplayError, check, move_label, replay

__all__ = [
    "RULE_TERMINATIONS",
    "GameRecord",
    "RatingChange",
    "RecordError",
    "RecordMove",
    "ReplayError",
    "Replayed",
    "check",
    "dump_json",
    "dump_text",
    "from_json",
    "move_label",
    "parse_json",
    "parse_records",
    "parse_text",
    "replay",
    "to_json",
    "to_text",
]
