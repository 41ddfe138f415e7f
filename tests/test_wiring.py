"""The wiring a reader finds in one place is complete: every mail command is in the
registry's list, every event follower in the followers' list, and the game service
reaches its followers whichever module a process imported first."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import grimp

import pbmserv
import pbmserv.commands
import pbmserv.service
from pbmserv.commands.base import Command
from pbmserv.commands.registry import COMMANDS, REGISTRY
from pbmserv.service.events import Event, GameFinished
from pbmserv.service.followers import EVENT_FOLLOWERS
from pbmserv.service.games import GameService


def _modules(package: ModuleType) -> list[ModuleType]:
    return [importlib.import_module(f"{package.__name__}.{info.name}")
            for info in pkgutil.iter_modules(package.__path__)]


def test_every_command_class_is_listed_once() -> None:
    written = {obj for module in _modules(pbmserv.commands) for obj in vars(module).values()
               if inspect.isclass(obj) and issubclass(obj, Command)
               and obj.__module__ == module.__name__ and "name" in obj.__dict__}
    assert len(written) > 30  # the walk found the commands at all
    assert written == set(COMMANDS)
    assert len(COMMANDS) == len(set(COMMANDS))
    assert [type(c) for c in REGISTRY.commands] == list(COMMANDS)


def test_the_registry_reads_each_command_by_its_name() -> None:
    for cls in COMMANDS:
        line = f"amoeba {cls.name}" if cls.per_game else cls.name
        assert type(REGISTRY.lookup(line)[0]) is cls, line


def _follower_of(function: object) -> type[Event] | None:
    """The event class a function is written to follow: ``(GameService, <Event>)``."""
    if not inspect.isfunction(function):
        return None
    try:  # the game service is a name for type checkers only where it calls back
        hints = typing.get_type_hints(function, localns={"GameService": GameService})
    except NameError:
        return None
    params = [hints.get(p) for p in inspect.signature(function).parameters]
    if len(params) == 2 and params[0] is GameService and inspect.isclass(params[1]) \
            and issubclass(params[1], Event):
        return params[1]
    return None


def test_every_follower_is_listed_under_its_event() -> None:
    written = {(kind, function) for module in _modules(pbmserv.service)
               for function in vars(module).values()
               if (kind := _follower_of(function)) is not None
               and function.__module__ == module.__name__}
    listed = {(kind, function) for kind, functions in EVENT_FOLLOWERS.items()
              for function in functions}
    assert written  # the walk recognises a follower (the tournaments' board_finished)
    assert written == listed


def test_importing_one_service_alone_reaches_the_followers() -> None:
    """A process that imports service.admin alone (the CLI, a script) gets the same
    followers as the worker: the game service imports its list, nothing registers."""
    probe = ("import pbmserv.service.admin\n"
             "from pbmserv.service import games\n"
             "from pbmserv.service.events import GameFinished\n"
             "print(sorted(f.__module__ + '.' + f.__name__ "
             "for f in games.EVENT_FOLLOWERS[GameFinished]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['pbmserv.service.tournaments.board_finished']"
    assert EVENT_FOLLOWERS[GameFinished]  # and so in this process


#: the modules that may queue mail: the notifications, and the notices modules of
#: the feature packages (the import contract in pyproject.toml says so of the outbox
#: module; this says it of the function, however it is reached)
QUEUERS = ("pbmserv.notifications", "pbmserv.bounces.notices", "pbmserv.unsubscribe.notices")


def test_only_the_notifications_queue_mail() -> None:
    root = Path(pbmserv.__file__).parent
    naming = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.Name | ast.alias | ast.Attribute)
               and "queue_mail" in (getattr(node, "id", None), getattr(node, "name", None),
                                    getattr(node, "attr", None))
               for node in ast.walk(tree)):
            naming.append(module)
    assert "pbmserv.notifications.digest" in naming  # the walk sees a caller
    assert [m for m in naming if not m.startswith(QUEUERS)] == []


#: what writes: SQLAlchemy's statements that change rows, and a session's changes
WRITES = {"insert", "update", "delete", "add", "add_all", "flush", "commit", "merge",
          "bulk_save_objects", "execute_many"}


def test_the_read_model_only_reads() -> None:
    root = Path(pbmserv.__file__).parent / "reads"
    found = {}
    for path in sorted(root.glob("*.py")):
        names = {getattr(node, attr) for node in ast.walk(ast.parse(path.read_text()))
                 for attr in ("id", "name", "attr") if isinstance(getattr(node, attr, None), str)}
        found[path.name] = names & WRITES
    assert {"boards.py", "queues.py", "pages.py"} <= set(found)
    assert {name: writes for name, writes in found.items() if writes} == {}


def test_the_import_graph_has_no_cycle() -> None:
    """No module reaches itself through its imports (imports made for type checkers
    alone do not run: the game service and a follower of its events name each other
    so, as do the notifier and its replies)."""
    graph = grimp.build_graph("pbmserv", exclude_type_checking_imports=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph.modules)))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert len(graph.modules) > 150  # the graph is pbmserv's
    assert cycles == []
