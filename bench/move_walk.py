"""The walk of one move by mail through the layers: how often it climbs back up, and
which templates it renders (counted by tracing the calls, not timed).

One Honey Donuts move by mail, a few moves into the game, processed alone as a worker
does (``processing.mail.handle``), traced with ``sys.setprofile``.  Layers, top down,
as the import contract orders them: processing, commands, notifications, service, db
(the engines and the templates below them all).

A *climb back* is a return to processing or commands from a call into a lower layer
that did work there (ran a database statement or rendered a template): after it the
code goes down again for more.  A move that climbs back twice goes down to run the
command (commands -> service -> db) and comes back, then down to tell the players
(notifications -> templates -> outbox) and comes back.

    .venv/bin/python bench/move_walk.py            # the counts
    .venv/bin/python bench/move_walk.py --walk     # and every climb and render, in order
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the layers, top down; a module of pbmserv outside them belongs to its caller's
LAYERS = ("processing", "commands", "notifications", "service", "db", "games", "render")
#: where a layer's work is done: a statement run, a template rendered
WORK = {
    ("pbmserv.render", "render"), ("pbmserv.render", "render_html"),
    ("pbmserv.render", "render_mail_html"), ("pbmserv.render", "html_mail"),
    ("sqlalchemy.engine.base", "_execute_context"),
}
RENDERS = {"render", "render_html", "render_mail_html", "html_mail"}


def layer_of(module: str) -> str | None:
    if not module.startswith("pbmserv."):
        return None
    part = module.split(".")[1]
    if part in ("render", "styles"):
        return "render"
    return part if part in LAYERS else None


@dataclass
class Frame:
    layer: str | None
    name: str
    worked: bool = False


@dataclass
class Walk:
    stack: list[Frame] = field(default_factory=list)
    on: bool = False
    climbs: list[str] = field(default_factory=list)
    renders: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    def caller_layer(self) -> str | None:
        return next((f.layer for f in reversed(self.stack) if f.layer is not None), None)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            name = frame.f_code.co_name
            if module == "pbmserv.processing.mail" and name == "handle":
                self.on = True
            if not self.on:
                return
            self.stack.append(Frame(layer_of(module), f"{module}:{name}"))
            if (module, name) in WORK:
                for f in self.stack:
                    f.worked = True
            if module == "pbmserv.render" and name in RENDERS:
                template = frame.f_locals.get("name") or "mail.html.j2"
                back = frame.f_back
                caller = "" if back is None else (
                    f"{back.f_globals.get('__name__')}:{back.f_code.co_name}")
                self.renders.append(f"{template} (from {caller})")
                self.events.append(f"  render {template}")
        elif event == "return" and self.on and self.stack:
            done = self.stack.pop()
            above = self.caller_layer()
            if (done.worked and done.layer is not None and above in ("processing", "commands")
                    and LAYERS.index(done.layer) > LAYERS.index(above)):
                self.climbs.append(f"{done.layer} -> {above} (back from {done.name})")
                self.events.append(f"climb {len(self.climbs)}: {self.climbs[-1]}")
            if done.name == "pbmserv.processing.mail:handle":
                self.on = False


def one_move(work: Path) -> Walk:
    from pbmserv.config import Settings
    from pbmserv.db.base import utcnow
    from pbmserv.db.migrate import upgrade
    from pbmserv.db.session import Database
    from pbmserv.games import get_engine
    from pbmserv.intake.store import store_message
    from pbmserv.processing import process_pending
    from pbmserv.service.accounts import open_account
    from pbmserv.service.games import GameService
    from tests.conftest import make_mail

    url = f"sqlite:///{work / 'walk.sqlite3'}"
    db = Database(url)
    upgrade(db)
    settings = Settings(database_url=url, maildir=work / "mail")
    engine = get_engine("honeydonuts")
    assert engine is not None
    with db.transaction() as session:
        users = [open_account(session, f"p{i}", f"pw{i}-walk", f"p{i}@walk.example")
                 for i in range(2)]
        for user in users:  # as if each had answered its confirmation mail
            user.confirmed_at = utcnow()
        number = GameService(session).challenge(engine, users, [],
                                                sender=users[0].email).number
    position = engine.new(())
    walk = Walk()
    last = 5
    for ply in range(1, last + 1):
        seat = engine.to_move(position)
        move = engine.legal_moves(position)[0]
        text = engine.format_move(position, move)
        position = engine.apply(position, move)
        store_message(db, make_mail(f"honeydonuts move {number} p{seat} pw{seat}-walk "
                                    f"{text}#{ply}", sender=f"p{seat}@walk.example"))
        if ply == last:  # the moves before warm up what a process does once
            sys.setprofile(walk.profile)
        try:
            process_pending(db, settings, reads=1)
        finally:
            sys.setprofile(None)
    db.dispose()
    return walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--walk", action="store_true", help="print every climb and render")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        walk = one_move(Path(work))
    if args.walk:
        print("\n".join(walk.events))
    print(f"climbs back: {len(walk.climbs)}")
    print(f"templates rendered: {len(walk.renders)}")
    for template, count in Counter(walk.renders).items():
        print(f"  {count} x {template}")


if __name__ == "__main__":
    main()
