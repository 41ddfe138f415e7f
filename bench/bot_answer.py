"""How long a player waits for a bot's answer by mail.

``pbmserv serve`` with its defaults (one worker process, the bots' process); a player
signs up, challenges a bot and plays random legal moves by SMTP, each as soon as the
bot's answer (its board mail, "It is alice's turn") is in the Maildir.  The wait is
from the move's acknowledgement to that mail; the goal is the bot's thinking budget
(CPU seconds) plus 0.5 s.

    .venv/bin/python bench/bot_answer.py [--bot bot1] [--game honeydonuts] [--moves 10]
"""

from __future__ import annotations

import argparse
import os
import random
import smtplib
import statistics
import subprocess
import sys
import tempfile
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.throughput import free_port, mail, wait_port  # noqa: E402
from pbmserv.bots import LEVELS  # noqa: E402
from pbmserv.games import get_engine  # noqa: E402


def texts(maildir: Path, seen: set[str]) -> list[str]:
    """The Subject and plain text of every mail that arrived since the last look."""
    out = []
    new = maildir / "new"
    for path in sorted(new.iterdir()) if new.is_dir() else []:
        if path.name in seen:
            continue
        seen.add(path.name)
        msg = message_from_bytes(path.read_bytes(), policy=policy.default)
        assert isinstance(msg, EmailMessage)
        part = msg.get_body(preferencelist=("plain",))
        if isinstance(part, EmailMessage):
            out.append(f"Subject: {msg['Subject']}\n"
                       + " ".join(str(part.get_content()).split()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bot", default="bot1")
    ap.add_argument("--game", default="honeydonuts")
    ap.add_argument("--option", action="append", default=[], help="game option (repeat)")
    ap.add_argument("--moves", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    engine = get_engine(args.game)
    level = next((lv for lv in LEVELS if lv.name == args.bot), None)
    assert engine is not None and level is not None, "a game, and a bot of LEVELS"
    work = Path(tempfile.mkdtemp(prefix="pbmserv-bot-answer-"))
    url = f"sqlite:///{work / 'bench.sqlite3'}"
    maildir = work / "mail"
    port = free_port()
    env = dict(os.environ, PBMSERV_DATABASE_URL=url, PBMSERV_MAILDIR=str(maildir),
               PBMSERV_CONFIG="")
    serve = subprocess.Popen([sys.executable, "-m", "pbmserv", "serve", "--port", str(port)],
                             env=env, stderr=subprocess.DEVNULL)
    rng = random.Random(args.seed)
    seen: set[str] = set()
    waits: list[float] = []
    db = create_engine(url)
    try:
        wait_port(port)
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as smtp:
            def send(subject: str) -> float:
                mid = f"<b{time.time_ns()}@bench.example>"
                smtp.sendmail("alice@bench.example", ["pbmserv@localhost"],
                              mail("alice@bench.example", subject, mid))
                return time.monotonic()

            found = ""

            def wait_for(*words: str) -> float:
                nonlocal found
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    for t in texts(maildir, seen):
                        if all(w in t for w in words):
                            found = t
                            return time.monotonic()
                    time.sleep(0.005)
                raise TimeoutError(" ".join(words))

            send("signup alice pw-alice-1")  # its reply's Subject confirms the account
            wait_for("Subject: confirm alice ")
            send(found.split("\n", 1)[0].removeprefix("Subject: "))
            wait_for("alice")
            options = " ".join(engine.check_options(args.option))
            send(f"{args.game} challenge alice {args.bot} {options}")
            wait_for("It is alice's turn", "move 1.")
            for _ in range(args.moves):
                with db.connect() as conn:
                    row = conn.execute(text(
                        "SELECT number, ply, position, position_version, status FROM boards "
                        "ORDER BY id DESC LIMIT 1")).one()
                pos = engine.load(row.position, row.position_version)
                if engine.outcome(pos) is not None or row.status != "active":
                    break
                move = engine.format_move(pos, rng.choice(engine.legal_moves(pos)))
                sent = send(f"{args.game} move {row.number} alice pw-alice-1 "
                            f"{move}#{row.ply + 1}")
                try:
                    arrived = wait_for("It is alice's turn", f"move {row.ply + 3}.")
                except TimeoutError:
                    break  # the game ended with this move or the bot's
                waits.append(arrived - sent)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
        db.dispose()
    budget = level.seconds
    print(f"{args.bot} ({budget:g} s of thought a move) on {args.game} "
          f"{' '.join(args.option)}: {len(waits)} answers by mail")
    if waits:
        print(f"wait from the move's 250 to the bot's board mail: mean "
              f"{statistics.mean(waits):.2f} s, max {max(waits):.2f} s; beyond the budget: "
              f"mean {statistics.mean(waits) - budget:+.2f} s, max {max(waits) - budget:+.2f} s "
              f"(goal: at most +0.50 s)")


if __name__ == "__main__":
    main()
