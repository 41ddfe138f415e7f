"""Reading a file of records whichever form it is in (JSON or text)."""

from __future__ import annotations

import re

from pbmserv.records.jsonform import parse_json
from pbmserv.records.model import GameRecord
from pbmserv.records.pgn import parse_text

_JSON_START = re.compile(r"^\ufeff?\s*(\{|\[\s*[\{\]])")


def parse_records(text: str) -> list[GameRecord]:
    """The records in ``text``: JSON when it starts with an object or a list of objects,
    else the PGN-like text form (whose tags also start with "[")."""
    if _JSON_START.match(text):
        return parse_json(text.lstrip("\ufeff"))
    return parse_text(text)
