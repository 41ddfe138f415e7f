"""The mail commands.  Importing this package registers every command."""

from pbmserv.commands import account, general, lobby, play, social, view
from pbmserv.commands.base import REGISTRY, all_commands, is_command, lookup

__all__ = ["REGISTRY", "account", "all_commands", "general", "is_command", "lobby", "lookup",
           "play", "social", "view"]
