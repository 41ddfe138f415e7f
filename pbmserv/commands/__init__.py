"""The mail commands: one class each, in modules by family; every one is listed in
pbmserv.commands.registry, which reads a command line."""

from pbmserv.commands.registry import COMMANDS, REGISTRY, is_command, lookup

__all__ = ["COMMANDS", "REGISTRY", "is_command", "lookup"]
