"""Which knowledge the bots use for which game."""

from __future__ import annotations

from pbmserv.bots.amoeba import AmoebaKnowledge
from pbmserv.bots.exnihilo import ExNihiloKnowledge
from pbmserv.bots.hexamoeba import HexamoebaKnowledge
from pbmserv.bots.honeydonuts import HoneyDonutsKnowledge
from pbmserv.bots.knowledge import Knowledge
from pbmserv.games import AnyEngine

KNOWLEDGE: dict[str, Knowledge] = {
    "amoeba": AmoebaKnowledge(),
    "exnihilo": ExNihiloKnowledge(),
    "hexamoeba": HexamoebaKnowledge(),
    "honeydonuts": HoneyDonutsKnowledge(),
}
GENERIC = Knowledge()


def knowledge_for(engine: AnyEngine) -> Knowledge:
    """The game's own knowledge, or the game-blind default for any other engine."""
    return KNOWLEDGE.get(engine.name, GENERIC)
