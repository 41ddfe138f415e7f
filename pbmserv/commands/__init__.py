"""The mail commands.  Importing this package registers every command."""

from pbmserv.commands import (
    account,
    general,
    lobby,
    play,
    results,
    social,
    tournament,
    view,
)
from pbmserv.commands.base import REGISTRY, all_commands, is_command, lookup

__all__ = ["REGISTRY", "account", "all_commands", "general", "is_command", "lobby", "lookup",
           "play", "results", "social", "tournament", "view"]
