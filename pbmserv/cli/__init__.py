"""The ``pbmserv`` command line: the group and its settings (app), then one module per
family of commands.  Importing this package registers every command."""

from pbmserv.cli import (
    accounts,
    alerts,
    boards,
    bots,
    bounces,
    database,
    health,
    mail,
    queues,
    records,
    rules,
    web,
)
from pbmserv.cli.app import EX_TEMPFAIL, EX_UNAVAILABLE, main

__all__ = ["EX_TEMPFAIL", "EX_UNAVAILABLE", "accounts", "alerts", "boards", "bots", "bounces",
           "database", "health", "mail", "main", "queues", "records", "rules", "web"]
