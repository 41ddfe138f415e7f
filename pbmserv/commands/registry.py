"""Every mail command, in one list: the registry the mail is read with.

A new command: a class in the module of its family (account, general, play, lobby,
results, social, tournament, view; pbmserv.commands.base says what a command is),
then a line here.  The order is the order ``help`` lists them in;
tests/test_wiring.py checks every Command class is listed.
"""

from __future__ import annotations

from pbmserv.commands import account, general, lobby, play, results, social, tournament, view
from pbmserv.commands.base import Command, Invocation, Registry

#: every mail command, in the order help lists them
COMMANDS: tuple[type[Command], ...] = (
    account.Signup,
    account.Confirm,
    account.Change,
    account.Signoff,
    account.VacationCommand,
    account.MailPreferences,
    account.Reset,
    general.Help,
    general.List,
    view.TurnsCommand,
    play.GameHelp,
    play.Challenge,
    play.MoveCommand,
    play.Resign,
    play.Decline,
    play.Queue,
    lobby.SeekCommand,
    lobby.Join,
    lobby.Unseek,
    lobby.Accept,
    lobby.Reject,
    lobby.Limit,
    results.Ratings,
    results.Standings,
    results.History,
    results.Record,
    social.Subscribe,
    social.Unsubscribe,
    social.Notify,
    social.Chat,
    tournament.TournamentCommand,
    view.Show,
    view.Games,
    view.Preview,
    view.Moves,
)

#: the commands by name
REGISTRY = Registry(COMMANDS)


def lookup(line: str) -> tuple[Command, Invocation]:
    """The command a line names; raises PlayerError saying what is unknown."""
    return REGISTRY.lookup(line)


def is_command(line: str) -> bool:
    """Whether a line begins with a command or a game's name."""
    return REGISTRY.is_command(line)
