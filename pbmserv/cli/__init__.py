"""The ``pbmserv`` command line: the group and its settings (app), then one module per
family of commands (and the verbs of a feature package, beside the feature:
pbmserv.bounces.cli).  Importing this package registers every command."""

from pbmserv.bounces import cli as bounce_verbs
from pbmserv.cli import (
    accounts,
    alerts,
    boards,
    bots,
    database,
    health,
    mail,
    queues,
    records,
    rules,
    web,
)
from pbmserv.cli.app import EX_TEMPFAIL, EX_UNAVAILABLE, main

__all__ = ["EX_TEMPFAIL", "EX_UNAVAILABLE", "accounts", "alerts", "boards", "bots", "bounce_verbs",
           "database", "health", "mail", "main", "queues", "records", "rules", "web"]
