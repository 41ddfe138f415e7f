"""The registry of game engines, by the name players type."""

from __future__ import annotations

from typing import Any

from pbmserv.games.amoeba import Amoeba
from pbmserv.games.base import Engine
from pbmserv.games.exnihilo import ExNihilo
from pbmserv.games.hexamoeba import Hexamoeba
from pbmserv.games.honeydonuts import HoneyDonuts

AnyEngine = Engine[Any, Any]

ENGINES: dict[str, AnyEngine] = {}


def register(engine: AnyEngine) -> None:
    if engine.name in ENGINES:
        raise ValueError(f"game {engine.name!r} registered twice")
    ENGINES[engine.name] = engine


def get_engine(name: str) -> AnyEngine | None:
    return ENGINES.get(name.lower())


for _engine in (Amoeba(), HoneyDonuts(), Hexamoeba(), ExNihilo()):
    register(_engine)
