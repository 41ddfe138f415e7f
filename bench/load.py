"""Load test: many concurrent games played over SMTP against ``pbmserv serve``.

Starts a server (SQLite in a temporary folder unless --database-url is given),
signs up players, starts GAMES boards, then plays them from CLIENTS threads: each
move is mailed over SMTP and timed until its reply lands in the Maildir.

    .venv/bin/python bench/load.py --games 50 --moves 20 --clients 8
"""

from __future__ import annotations

import argparse
import os
import random
import smtplib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from pbmserv.games import get_engine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ReplyWatcher(threading.Thread):
    """Notes when each reply (by In-Reply-To) appears in the Maildir."""

    def __init__(self, maildir: Path) -> None:
        super().__init__(daemon=True)
        self.new = maildir / "new"
        self.seen: set[str] = set()
        self.arrived: dict[str, float] = {}
        self.cond = threading.Condition()
        self.stopping = False

    def run(self) -> None:
        parser = BytesHeaderParser()
        while not self.stopping:
            try:
                names = os.listdir(self.new)
            except FileNotFoundError:
                names = []
            now = time.monotonic()
            fresh = [n for n in names if n not in self.seen]
            for name in fresh:
                self.seen.add(name)
                with open(self.new / name, "rb") as fh:
                    ref = parser.parsebytes(fh.read()).get("In-Reply-To")
                if ref:
                    with self.cond:
                        self.arrived[str(ref)] = now
                        self.cond.notify_all()
            time.sleep(0.005)

    def wait_for(self, message_id: str, timeout: float = 60.0) -> float:
        deadline = time.monotonic() + timeout
        with self.cond:
            while message_id not in self.arrived:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no reply to {message_id}")
                self.cond.wait(left)
            return self.arrived[message_id]


class Client:
    def __init__(self, port: int, watcher: ReplyWatcher) -> None:
        self.port = port
        self.watcher = watcher
        self.counter = 0
        self.lock = threading.Lock()

    def send(self, sender: str, subject: str) -> tuple[float, float]:
        """Mail a command; returns (seconds until 250, seconds until the reply)."""
        with self.lock:
            self.counter += 1
            mid = f"<bench{self.counter}.{time.time_ns()}@bench.example>"
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"], msg["Message-ID"] = (
            sender, "pbmserv@localhost", subject, mid)
        msg.set_content("\n")
        start = time.monotonic()
        with smtplib.SMTP("127.0.0.1", self.port, timeout=60) as smtp:
            smtp.sendmail(sender, ["pbmserv@localhost"], msg.as_bytes())
        acked = time.monotonic()
        replied = self.watcher.wait_for(mid)
        return acked - start, replied - start


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=50)
    ap.add_argument("--moves", type=int, default=20, help="moves per game at most")
    ap.add_argument("--clients", type=int, default=8, help="concurrent SMTP clients")
    ap.add_argument("--game", default="honeydonuts")
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    engine = get_engine(args.game)
    assert engine is not None, f"unknown game {args.game}"
    work = Path(tempfile.mkdtemp(prefix="pbmserv-bench-"))
    url = args.database_url or f"sqlite:///{work / 'bench.sqlite3'}"
    port = free_port()
    env = dict(os.environ, PBMSERV_DATABASE_URL=url, PBMSERV_MAILDIR=str(work / "mail"))
    server = subprocess.Popen([sys.executable, "-m", "pbmserv", "serve", "--port", str(port)],
                              env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        watcher = ReplyWatcher(work / "mail")
        watcher.start()
        client = Client(port, watcher)
        players = [f"p{i}" for i in range(2 * args.games)]
        for p in players:
            client.send(f"{p}@bench.example", f"signup {p} pw{p}")
        boards: dict[int, dict[str, Any]] = {}
        for g in range(args.games):
            a, b = players[2 * g], players[2 * g + 1]
            client.send(f"{a}@bench.example", f"{args.game} challenge {a} {b}")
            boards[101 + g] = {"players": (a, b), "pos": engine.new(), "ply": 0}

        latencies: list[float] = []
        acks: list[float] = []
        lock = threading.Lock()
        queue = list(boards)
        rng = random.Random(args.seed)

        def play() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    number = queue.pop(0)
                state = boards[number]
                pos = state["pos"]
                moves = engine.legal_moves(pos)
                if state["ply"] >= args.moves or engine.outcome(pos) is not None or not moves:
                    continue
                with lock:
                    move = rng.choice(moves)
                text = engine.format_move(pos, move)
                user = state["players"][engine.to_move(pos)]
                ack, latency = client.send(
                    f"{user}@bench.example",
                    f"{args.game} move {number} {user} pw{user} {text}#{state['ply'] + 1}")
                state["pos"] = engine.apply(pos, move)
                state["ply"] += 1
                with lock:
                    latencies.append(latency)
                    acks.append(ack)
                    queue.append(number)

        start = time.monotonic()
        threads = [threading.Thread(target=play) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        watcher.stopping = True
    finally:
        server.terminate()
        server.wait(timeout=30)
    n = len(latencies)
    print(f"game={args.game} games={args.games} clients={args.clients} "
          f"database={url.split(':')[0]}")
    print(f"moves={n} elapsed={elapsed:.2f}s moves/s={n / elapsed:.1f}")
    print("reply latency ms: p50={:.0f} p90={:.0f} p99={:.0f} max={:.0f} mean={:.0f}".format(
        *(1000 * percentile(latencies, p) for p in (50, 90, 99, 100)),
        1000 * statistics.mean(latencies)))
    ack50, ack99 = (1000 * percentile(acks, p) for p in (50, 99))
    print(f"SMTP 250 latency ms: p50={ack50:.0f} p99={ack99:.0f}")


if __name__ == "__main__":
    main()
