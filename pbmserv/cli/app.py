"""The ``pbmserv`` command group: settings, logging, and failures in one line.

Every command reads the same settings (``--config FILE``, else ``PBMSERV_CONFIG``,
else ``/etc/pbmserv/pbmserv.toml``; PBMSERV_* variables override) and logs the same
way.  A failure the administrator must fix (a database that is down, a bad setting,
a port in use) is one line saying what and how, exit status 1; ``-v`` adds the
traceback.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import click

from pbmserv.cli.terminal import escape_output
from pbmserv.config import LOG_LEVELS, Settings, SettingsError
from pbmserv.db import migrate
from pbmserv.db.problems import describe, explain
from pbmserv.db.session import Database
from pbmserv.logs import setup_logging
from pbmserv.service.errors import PlayerError
from pbmserv.version import version_text

#: exit statuses (sysexits.h): the MTA keeps the mail and retries / refuses it for good
EX_TEMPFAIL = 75
EX_UNAVAILABLE = 69
#: how like 'deliver' a word must be to be taken for a misspelling of it
DELIVER_LIKE = 0.75

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger(__name__)


def hard_exit(code: int) -> NoReturn:
    """Exit with exactly this status.  Python exits 120 instead if flushing standard
    output or error fails at the very end (an MTA that stopped reading them, say), and
    an MTA bounces a mail on 120: so they are flushed now, errors ignored, and
    replaced by streams that cannot fail."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    sink = open(os.devnull, "w")  # noqa: SIM115 - open until the process ends
    sys.stdout = sys.stderr = sink
    sys.exit(code)


@dataclass
class App:
    """What the group's options set up for its commands."""

    config: str | None
    verbose: bool
    overrides: dict[str, Any]
    loaded: Settings | None = None
    error: SettingsError | None = None

    @property
    def settings(self) -> Settings:
        """The settings; SettingsError if they cannot be used."""
        if self.error is not None:
            raise self.error
        assert self.loaded is not None
        return self.loaded

    def worker_options(self) -> list[str]:
        """The group's options a worker process of ``serve`` needs to be set up alike."""
        settings = self.settings
        out = ["--config", str(settings.source)] if settings.source else []
        out += ["--log-level", settings.log_level]
        if settings.log_file is not None:
            out += ["--log-file", str(settings.log_file)]
        if settings.syslog:
            out += ["--syslog"]
        return out + (["--verbose"] if self.verbose else [])

    def start(self) -> None:
        """Read the settings and set up the log.  A problem with either is kept for the
        commands that need the settings (``deliver`` turns it into "try again later");
        the log then goes to standard error only."""
        try:
            self.loaded = Settings.load(self.config)
            for key, value in self.overrides.items():
                self.loaded = self.loaded.overridden(key, value)
        except SettingsError as exc:
            self.error = exc
            setup_logging(self.overrides.get("log_level", "info"))
            return
        try:
            setup_logging(self.loaded.log_level, self.loaded.log_file, self.loaded.syslog)
        except SettingsError as exc:
            self.error = exc
            setup_logging(self.loaded.log_level)
        for warning in self.loaded.warnings:
            log.warning("settings: %s", warning)


def _delivering(args: Sequence[str]) -> bool:
    """Whether a command line is meant as ``deliver`` (misspelt too): an MTA's pipe."""
    return any(arg == "deliver" or difflib.SequenceMatcher(None, arg, "deliver").ratio()
               >= DELIVER_LIKE for arg in args if not arg.startswith("-"))


class Main(click.Group):
    """The group: an error its commands do not handle is shown in one line."""

    def main(self, args: Sequence[str] | None = None, *rest: Any, **extra: Any) -> Any:
        """A command line the MTA's pipe got wrong (a misspelt option or command in
        master.cf) exits 75, not click's 2: the MTA keeps the mail, never bounces it."""
        argv = list(sys.argv[1:] if args is None else args)
        try:
            return super().main(argv, *rest, **extra)
        except SystemExit as exc:
            if exc.code == click.UsageError.exit_code and _delivering(argv):
                hard_exit(EX_TEMPFAIL)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if ctx.invoked_subcommand == "deliver":  # the MTA keeps the mail
                exc.show()
                hard_exit(EX_TEMPFAIL)
            raise
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except PlayerError as exc:
            raise click.ClickException(exc.message) from None
        except BrokenPipeError:
            # the reader went away ('pbmserv rules moves amoeba | head'): no complaint,
            # and none either from Python flushing standard output at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(1)
        except Exception as exc:
            app = ctx.obj if isinstance(ctx.obj, App) else None
            verbose = app is not None and app.verbose
            url = app.loaded.database_url if app is not None and app.loaded else None
            if verbose:
                traceback.print_exc()
            hint = "" if verbose or explain(exc, url) else " (-v shows the traceback)"
            click.echo(f"pbmserv: {describe(exc, url)}{hint}", err=True)
            ctx.exit(1)


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_show_version,
              help="Say which pbmserv this is (version, git revision) and exit.")
@click.option("-c", "--config", metavar="FILE", default=None,
              help="Settings file (TOML); default $PBMSERV_CONFIG, else "
                   "/etc/pbmserv/pbmserv.toml if it exists.")
@click.option("--log-level", default=None, type=click.Choice(LOG_LEVELS, case_sensitive=False),
              help="Log this much (default: the settings' log_level, info).")
@click.option("--log-file", default=None, metavar="FILE", help="Log to this file too.")
@click.option("--syslog/--no-syslog", default=None, help="Log to syslog (facility mail) too.")
@click.option("-v", "--verbose", is_flag=True,
              help="Tracebacks with errors; log level debug unless --log-level is given.")
@click.pass_context
def main(ctx: click.Context, config: str | None, log_level: str | None,
         log_file: str | None, syslog: bool | None, verbose: bool) -> None:
    """pbmserv: a play-by-email board game server."""
    escape_output()  # what a stranger wrote is shown, never obeyed (pbmserv.cli.terminal)
    overrides: dict[str, Any] = {}
    if log_level is not None or verbose:
        overrides["log_level"] = (log_level or "debug").lower()
    if log_file is not None:
        overrides["log_file"] = Path(log_file) if log_file else None
    if syslog is not None:
        overrides["syslog"] = syslog
    app = App(config, verbose, overrides)
    app.start()
    ctx.obj = app


def pass_settings(f: F) -> F:
    """Decorator: the command gets the settings as its first argument."""

    @click.pass_context
    @functools.wraps(f)
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        return ctx.invoke(f, ctx.find_object(App).settings, *args, **kwargs)  # type: ignore[union-attr]

    return cast(F, wrapper)


def pass_app(f: F) -> F:
    """Decorator: the command gets the App as its first argument."""
    return cast(F, click.make_pass_decorator(App)(f))


def database(settings: Settings, *, any_schema: bool = False) -> Database:
    """The database of the settings.  Unless ``any_schema``, one whose schema is newer
    than this code is refused (SchemaError: "upgrade pbmserv"): older code must not
    work on it.  ``deliver`` (which stores the mail whatever the schema), ``status``
    and ``db current`` look at the schema themselves."""
    db = Database(settings.database_url)
    if not any_schema:
        try:
            migrate.refuse_newer(db)
        except BaseException:
            db.dispose()
            raise
    return db
