"""Tournaments, pure: round-robin schedules, Swiss pairing, standings, crosstables."""

from __future__ import annotations

from pbmserv.tournaments.crosstable import (
    Crosstable,
    CrosstableBlock,
    CrosstableRow,
    TournamentKind,
    crosstable,
    number_text,
)
from pbmserv.tournaments.results import BYE_POINTS, Pairing
from pbmserv.tournaments.roundrobin import round_robin
from pbmserv.tournaments.standings import Standing, TieBreak, standings
from pbmserv.tournaments.swiss import (
    PairingError,
    SwissPlayer,
    SwissRound,
    pair_swiss,
    swiss_players,
)

__all__ = [
    "BYE_POINTS",
    "Crosstable",
    "CrosstableBlock",
    "CrosstableRow",
    "Pairing",
    "PairingError",
    "Standing",
    "SwissPlayer",
    "SwissRound",
    "TieBreak",
    "TournamentKind",
    "crosstable",
    "number_text",
    "pair_swiss",
    "round_robin",
    "standings",
    "swiss_players",
]
