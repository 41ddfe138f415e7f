"""pbmserv reaches the database through SQLAlchemy's public API only: no module of
pbmserv/ imports an underscore name or an internal module of SQLAlchemy, or uses an
underscore attribute that SQLAlchemy defines and pbmserv does not
(``statement._returning``, ``mapper._identity_class``,
``identity_map._add_unpresent``: SQLAlchemy's own workings, which change between its
releases without notice)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import sqlalchemy

ROOT = Path(__file__).resolve().parent.parent
#: the SQLAlchemy modules whose names are its public API (sqlalchemy.orm.loading,
#: sqlalchemy.sql.compiler, sqlalchemy.sql.elements and the like are its workings;
#: sqlalchemy.orm.attributes holds the documented attribute utilities)
PUBLIC = {"sqlalchemy", "sqlalchemy.orm", "sqlalchemy.orm.attributes", "sqlalchemy.engine",
          "sqlalchemy.exc", "sqlalchemy.types", "sqlalchemy.sql", "sqlalchemy.schema",
          "sqlalchemy.event", "sqlalchemy.pool", "sqlalchemy.dialects.sqlite",
          "sqlalchemy.dialects.postgresql"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _trees(files: Iterable[Path]) -> list[tuple[str, ast.AST]]:
    return [(str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
             ast.parse(path.read_text(encoding="utf-8"), str(path))) for path in files]


def _defined(trees: list[tuple[str, ast.AST]]) -> set[str]:
    """Every name the code itself gives: its functions, classes, variables, attributes
    set, parameters and import aliases."""
    names: set[str] = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias) and node.asname:
                names.add(node.asname)
    return names


@cache
def sqlalchemy_private() -> frozenset[str]:
    """The underscore names SQLAlchemy's own source gives."""
    source = Path(sqlalchemy.__file__).parent
    return frozenset(name for name in _defined(_trees(source.rglob("*.py"))) if _private(name))


def private_uses(trees: list[tuple[str, ast.AST]]) -> list[str]:
    """Where the code uses a private name of SQLAlchemy."""
    theirs = sqlalchemy_private() - _defined(trees)
    found = []
    for where, tree in trees:
        for node in ast.walk(tree):
            line = f"{where}:{getattr(node, 'lineno', 0):05}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
                if node.module not in PUBLIC:
                    found.append(f"{line}: from {node.module} import (not public API)")
                found += [f"{line}: from {node.module} import {a.name}"
                          for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Import):
                found += [f"{line}: import {a.name} (not public API)" for a in node.names
                          if a.name.startswith("sqlalchemy.") and a.name not in PUBLIC]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                if node.attr in theirs:
                    found.append(f"{line}: .{node.attr}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in {"getattr", "setattr", "hasattr"} and len(node.args) > 1
                  and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str)):
                name = node.args[1].value
                if name in theirs:
                    found.append(f"{line}: {node.func.id}(..., {name!r})")
    return sorted(found)


def test_pbmserv_uses_no_private_sqlalchemy_name() -> None:
    trees = _trees(sorted((ROOT / "pbmserv").rglob("*.py")))
    assert private_uses(trees) == []


def test_the_check_finds_private_names(tmp_path: Path) -> None:
    """What the speed layer of issue 35 did is found (and the code's own private names
    are not)."""
    code = tmp_path / "leaky.py"
    code.write_text(
        "from sqlalchemy import select\n"
        "from sqlalchemy.orm.loading import instances\n"
        "from sqlalchemy.orm import _thing\n"
        "import sqlalchemy.sql.compiler\n"
        "class Ours:\n"
        "    def __init__(self) -> None:\n"
        "        self._mine = 1\n"
        "    def _helper(self) -> int:\n"
        "        return self._mine\n"
        "def leak(statement, mapper, session, state, key):\n"
        "    columns = statement._returning\n"
        "    kind = mapper._identity_class\n"
        "    session.identity_map._add_unpresent(state, key)\n"
        "    also = getattr(statement, '_returning', None)\n"
        "    return Ours()._helper(), Ours()._mine, columns, kind, also\n", encoding="utf-8")
    found = [f.split(": ", 1)[1] for f in private_uses(_trees([code]))]
    assert found == ["from sqlalchemy.orm.loading import (not public API)",
                     "from sqlalchemy.orm import _thing",
                     "import sqlalchemy.sql.compiler (not public API)",
                     "._returning", "._identity_class", "._add_unpresent",
                     "getattr(..., '_returning')"]
