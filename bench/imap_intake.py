"""The IMAP intake, measured against a private Dovecot (as in tests/mailservers.py):

- a backlog: ``--mails`` mails put into the INBOX while nothing reads it (a server
  that was down), then one look of the intake: the time until every one is committed
  and flagged, in mails a second;
- the delay of IDLE: the intake's thread waits with IDLE, a mail is put into the
  folder (IMAP APPEND), and the time from the APPEND's answer to the mail's commit is
  taken, ``--rounds`` times (median and worst);
- a move from its APPEND to its reply: ``pbmserv serve`` reads the Dovecot through a
  TCP proxy that can cut the connection, and answers through an authenticated
  submission server (STARTTLS, a login); two players play Honey Donuts by mail, and
  each move's time from the APPEND's answer to the reply's arrival at the submission
  server is taken:
  a. with IDLE, one move at a time (after a first move that pays for what a process
     does once: compiling the templates, hashing each password);
  b. right after a cut without BYE (the proxy resets the connection, then the move
     is appended at once), two seconds after the last move's reply;
  c. a move appended 0 to 200 ms after another (it comes while the other is taken);
  d. after the connection went silent (the proxy carries nothing more and says
     nothing): noticed by the keepalive (``--keepalive`` seconds) and the end of the
     IDLE that is not answered (ANSWER_WAIT);
  e. polling: a Dovecot that offers no IDLE, looked at every ``--poll`` seconds, each
     move appended at a random moment of the wait.

    .venv/bin/python bench/imap_intake.py [--mails 500] [--rounds 20] [--poll 10]

The goal (issue 37): a move reaches its reply within 2 s with IDLE (also after a cut
and when it comes mid-fetch), and within imap_poll + 2 s polling.  Needs
dovecot-imapd and openssl, like the tests.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

from sqlalchemy import delete

from pbmserv.config import Settings
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.games import ENGINES
from pbmserv.intake.imap import ANSWER_WAIT, ImapIntake, connect, select_folder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.conftest import Mailer
from tests.mailservers import (
    PASSWORD,
    USER,
    CuttingProxy,
    Dovecot,
    Submission,
    start_submission,
    why_no_dovecot,
)

ADDRESS = "clubgames@games.test"
RELAY_USER, RELAY_PASSWORD = ADDRESS, "smtp-app-password"
GAME = ENGINES["honeydonuts"]
BOARDS = 8


def mail(n: int) -> bytes:
    return (f"From: player{n % 50}@example.org\r\nTo: games@example.org\r\n"
            f"Subject: amoeba moves {100 + n % 7}\r\nMessage-ID: <bench{n}@example.org>\r\n"
            f"\r\nPlease list the moves.\r\n").encode()


def intake_figures(server: Dovecot, root: Path, mails: int, rounds: int) -> None:
    """The backlog, and IDLE from APPEND to commit (the intake alone)."""
    settings = Settings.from_values({
        "database_url": f"sqlite:///{root / 'bench.sqlite3'}",
        "imap": f"imaps://{USER}@localhost:{server.imaps}/INBOX", "imap_since": "all",
        "imap_password_file": str(root / "password"), "imap_ca_file": str(server.cert)})
    db = Database(settings.database_url)
    upgrade(db)
    with server.client() as client:
        for n in range(mails):
            client.append("INBOX", mail(n))
    intake = ImapIntake(db, settings)
    started = time.perf_counter()
    client = connect(settings)
    stored = intake.take_new(client, select_folder(client, settings))
    took = time.perf_counter() - started
    client.logout()
    print(f"backlog: {stored} mails stored and flagged in {took:.2f} s "
          f"({stored / took:.0f} mails/s)")

    seen = threading.Event()
    intake = ImapIntake(db, settings, on_stored=lambda ids: seen.set())
    intake.start()
    intake.waiting.wait(30)
    delays = []
    with server.client() as client:
        for n in range(rounds):
            seen.clear()
            client.append("INBOX", mail(mails + n))
            appended = time.perf_counter()
            if not seen.wait(60):
                raise SystemExit("the intake did not take a mail within a minute")
            delays.append(time.perf_counter() - appended)
            intake.waiting.wait(30)
    intake.stop()
    print(f"IDLE: APPEND to commit, {len(delays)} mails: median "
          f"{statistics.median(delays) * 1000:.0f} ms, worst {max(delays) * 1000:.0f} ms")
    db.dispose()


class Sink(Submission):
    """The submission server, noting when each reply came (by its In-Reply-To)."""

    def __init__(self) -> None:
        super().__init__(RELAY_USER, RELAY_PASSWORD)
        self.came: dict[str, tuple[float, str]] = {}
        self.cond = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        answer = await super().handle_DATA(server, session, envelope)
        raw = envelope.original_content or envelope.content or b""
        msg = message_from_bytes(raw if isinstance(raw, bytes) else raw.encode(),
                                 policy=policy.default)
        with self.cond:
            self.came[str(msg["In-Reply-To"] or "")] = (time.perf_counter(),
                                                        str(msg["Subject"] or ""))
            self.cond.notify_all()
        return answer

    def wait(self, message_id: str, limit: float) -> tuple[float, str]:
        with self.cond:
            if not self.cond.wait_for(lambda: message_id in self.came, limit):
                raise SystemExit(f"no reply to {message_id} within {limit:.0f} s")
            return self.came[message_id]


class Game:
    """Alice and Bob play Honey Donuts on BOARDS boards, a random legal move at a time."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.boards = {101 + n: GAME.new([]) for n in range(BOARDS)}
        self.numbers = itertools.count(1)

    def next_move(self, board: int | None = None) -> tuple[int, bytes, str]:
        """A move's mail (from its player, with a Return-Path) and its Message-ID."""
        live = [b for b, pos in self.boards.items()
                if GAME.outcome(pos) is None and GAME.legal_moves(pos)]
        number = board if board in live else live[0]
        pos = self.boards[number]
        move = self.rng.choice(GAME.legal_moves(pos))
        who = ("alice", "bob")[GAME.to_move(pos)]
        text = f"honeydonuts move {number} {who} pw-{who}-long {GAME.format_move(pos, move)}"
        self.boards[number] = GAME.apply(pos, move)
        mid = f"<move{next(self.numbers)}.{time.time_ns()}@example.org>"
        raw = (f"Return-Path: <{who}@example.org>\r\nFrom: {who}@example.org\r\n"
               f"To: {ADDRESS}\r\nSubject: {text}\r\nMessage-ID: {mid}\r\n\r\n\r\n").encode()
        return number, raw, mid


class Served:
    """``pbmserv serve`` reading ``server`` through ``proxy``, sending to ``port``."""

    def __init__(self, root: Path, server: Dovecot, proxy: CuttingProxy, port: int,
                 poll: int, keepalive: int) -> None:
        self.root = root
        self.database = root / "serve.sqlite3"
        (root / "relay-password").write_text(RELAY_PASSWORD + "\n")
        self.config = root / "pbmserv.toml"
        self.config.write_text(f"""\
database_url = "sqlite:///{self.database}"
address = "{ADDRESS}"
smtp = "off"
imap = "imaps://{USER}@localhost:{proxy.port}/INBOX"
imap_password_file = "{root / 'password'}"
imap_ca_file = "{server.cert}"
imap_poll = {poll}
imap_keepalive = {keepalive}
relay = "submission://{RELAY_USER}@localhost:{port}"
relay_password_file = "{root / 'relay-password'}"
relay_ca_file = "{server.cert}"
""")
        self.log = root / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def prepare(self) -> None:
        """Alice and Bob signed up and confirmed, BOARDS boards between them (made
        through the store and the processor, before serve starts)."""
        settings = Settings.load(self.config, env={})
        db = Database(settings.database_url)
        upgrade(db)
        mailer = Mailer(db, settings)
        for uid in ("alice", "bob"):
            out = mailer.send(f"signup {uid} pw-{uid}-long", sender=f"{uid}@example.org")
            mailer.answer(next(m for m in out if m.in_reply_to))
        for _ in range(BOARDS):
            mailer.send("honeydonuts challenge alice bob")
        with db.transaction() as session:
            session.execute(delete(OutboxMessage))
        db.dispose()

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pbmserv", "--config", str(self.config), "serve",
             "--no-bots"], env=env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_reading(self, times: int = 1) -> None:
        deadline = time.monotonic() + 60
        while self.text().count("IMAP clubgames@localhost/INBOX: reading it") < times:
            if time.monotonic() > deadline:
                raise SystemExit("serve never read the mailbox:\n" + self.text())
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def move_times(server: Dovecot, sink: Sink, game: Game, rounds: int, *,
               before: Callable[[], object] | None = None, limit: float = 30,
               gap: Callable[[], float] = lambda: 0.5) -> list[float]:
    """Append ``rounds`` moves one at a time, each ``gap()`` seconds after the last
    one's reply; each one's time to its reply."""
    out = []
    with server.client() as client:
        for _ in range(rounds):
            time.sleep(gap())  # the reply went out, the reader waits again
            if before is not None:
                before()
            _, raw, mid = game.next_move()
            client.append("INBOX", raw)
            appended = time.perf_counter()
            came, subject = sink.wait(mid, limit)
            if subject.lower().endswith("error"):
                raise SystemExit(f"a move was refused: {subject}")
            out.append(came - appended)
    return out


def mid_fetch_times(server: Dovecot, sink: Sink, game: Game, rounds: int) -> list[float]:
    """A move appended 0-200 ms after another, on another board: its time to its reply."""
    out = []
    delays = [0.0, 0.02, 0.05, 0.1, 0.2]
    with server.client() as first, server.client() as second:
        for n in range(rounds):
            time.sleep(0.5)
            board, raw, _ = game.next_move()
            other = next(b for b, pos in game.boards.items()
                         if b != board and GAME.outcome(pos) is None)
            _, raw2, mid2 = game.next_move(other)
            first.append("INBOX", raw)
            time.sleep(delays[n % len(delays)])
            second.append("INBOX", raw2)
            appended = time.perf_counter()
            came, subject = sink.wait(mid2, 120)
            if subject.lower().endswith("error"):
                raise SystemExit(f"a move was refused: {subject}")
            out.append(came - appended)
    return out


def say(what: str, times: list[float]) -> None:
    print(f"{what}: {len(times)} moves, median {statistics.median(times):.2f} s, "
          f"worst {max(times):.2f} s (" + " ".join(f"{t:.2f}" for t in times) + ")")


def end_to_end(root: Path, server: Dovecot, rounds: int, poll: int, keepalive: int,
               idle: bool, seed: int) -> None:
    sink = Sink()
    controller, port = start_submission(sink, server.cert, server.key, implicit_tls=False)
    proxy = CuttingProxy(server.imaps)
    served = Served(root, server, proxy, port, poll, keepalive)
    game = Game(seed)
    try:
        served.prepare()
        served.start()
        served.wait_reading()
        # what a process does once (templates compiled, each password hashed): apart
        say("the first move after the start", move_times(server, sink, game, 1))
        if idle:
            say("IDLE: APPEND to reply", move_times(server, sink, game, rounds))
            say("after a cut without BYE (a reset): APPEND to reply",
                move_times(server, sink, game, max(rounds // 2, 3), before=proxy.reset,
                           gap=lambda: 2.0))
            say("appended 0-200 ms after another: APPEND to reply",
                mid_fetch_times(server, sink, game, max(rounds // 2, 5)))
            say(f"after the connection went silent (imap_keepalive {keepalive} s, "
                f"ANSWER_WAIT {ANSWER_WAIT:.0f} s): APPEND to reply",
                move_times(server, sink, game, 2, before=proxy.go_silent,
                           limit=keepalive + ANSWER_WAIT + 60))
        else:
            rng = random.Random(seed)
            say(f"polling (imap_poll {poll} s): APPEND to reply",
                move_times(server, sink, game, rounds, limit=poll + 60,
                           gap=lambda: rng.uniform(0.5, poll)))
    finally:
        served.stop()
        proxy.close()
        controller.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mails", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--poll", type=int, default=10)
    parser.add_argument("--keepalive", type=int, default=10)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    why = why_no_dovecot()
    if why is not None:
        raise SystemExit(why)
    for idle in (True, False):
        root = Path(tempfile.mkdtemp(prefix="pbmserv-dovecot-"))
        root.chmod(0o755)
        server = Dovecot(root, idle=idle)
        server.start()
        try:
            (root / "password").write_text(PASSWORD)
            if idle:
                intake_figures(server, root, args.mails, args.rounds)
                with server.client() as client:  # the folder emptied for the moves
                    client.select_folder("INBOX")
                    client.delete_messages(client.search(["ALL"]))
                    client.expunge()
            end_to_end(root, server, args.rounds if idle else max(args.rounds // 3, 4),
                       args.poll, args.keepalive, idle, args.seed)
        finally:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
