"""Throughput: pbmserv against a bare SMTP sink, under the same client, in one run.

1. A bare aiosmtpd server that accepts and discards mail: the client floods it from
   CONNECTIONS connections (each reusing its session, each waiting for its 250).
   This is the acknowledgement rate pbmserv is measured against. Its CPU per mail is
   taken again after step 2, and pbmserv's CPU is compared with the mean of the two
   (the machine's speed drifts during a run). Its CPU per mail is also taken with
   LONE mails sent one at a time over one connection, as a move arrives: each wakes
   the event loop for itself, which a flood shares among many.
2. ``pbmserv serve`` (plus PROCESSES-1 ``pbmserv work --loop`` on the same database),
   its players signed up, in three rounds of BOARDS new boards, each board playing
   MOVES moves, every board mailing its next move as soon as the reply to the last one
   is in the Maildir:
   a. the warm-up (``--no-warmup`` leaves it out): what a process does once, the first
      time (argon2 for each player's password, 18 ms, then remembered; compiling each
      template), lands here and not in the figures of a server that has run a while;
      its CPU per move is printed too;
   b. the moves alone: the CPU every process of pbmserv used for them, per move;
   c. the moves again, while the same kind of flood as in step 1 (mails marked
      Precedence: bulk, which are stored and never answered) measures how fast pbmserv
      acknowledges mail while moves are processed.

Every figure is printed, and the acknowledgement figures also as a ratio to the sink.

    .venv/bin/python bench/throughput.py
    .venv/bin/python bench/throughput.py --processes 2 \\
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/pbmserv_bench
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Callable
from email.parser import BytesHeaderParser
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from pbmserv.games import AnyEngine, get_engine

SINK = """
import sys, time
from aiosmtpd.controller import Controller
class Sink:
    async def handle_DATA(self, server, session, envelope):
        return "250 OK"
c = Controller(Sink(), hostname="127.0.0.1", port=int(sys.argv[1]))
c.start()
while True:
    time.sleep(3600)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int) -> None:
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def mail(sender: str, subject: str, mid: str, bulk: bool = False) -> bytes:
    head = (f"From: {sender}\r\nTo: pbmserv@localhost\r\nSubject: {subject}\r\n"
            f"Message-ID: {mid}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n")
    if bulk:
        head += "Precedence: bulk\r\n"
    return (head + "\r\n\r\n").encode()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Flood:
    """CONNECTIONS threads sending mail back to back, each waiting for its 250."""

    def __init__(self, port: int, connections: int, make: Callable[[int], bytes]) -> None:
        self.port = port
        self.connections = connections
        self.make = make
        self.latencies: list[float] = []
        self.stop = threading.Event()
        self.counter = iter(range(10**9))
        self.lock = threading.Lock()
        self.started = self.ended = 0.0

    def _run(self, limit: int | None) -> None:
        with smtplib.SMTP("127.0.0.1", self.port, timeout=120) as smtp:
            sent = 0
            while not self.stop.is_set() and (limit is None or sent < limit):
                with self.lock:
                    n = next(self.counter)
                data = self.make(n)
                t = time.monotonic()
                smtp.sendmail("flood@bench.example", ["pbmserv@localhost"], data)
                with self.lock:
                    self.latencies.append(time.monotonic() - t)
                sent += 1

    def run(self, per_connection: int | None = None) -> list[threading.Thread]:
        self.started = time.monotonic()
        threads = [threading.Thread(target=self._run, args=(per_connection,), daemon=True)
                   for _ in range(self.connections)]
        for t in threads:
            t.start()
        return threads

    def finish(self, threads: list[threading.Thread]) -> None:
        self.stop.set()
        for t in threads:
            t.join()
        self.ended = time.monotonic()

    def rate(self) -> float:
        return len(self.latencies) / (self.ended - self.started)


class Replies(threading.Thread):
    """Notes when each reply (by In-Reply-To) appears in the Maildir."""

    def __init__(self, maildir: Path) -> None:
        super().__init__(daemon=True)
        self.new = maildir / "new"
        self.arrived: dict[str, float] = {}
        #: the Subject of each reply, by the Message-ID it answers
        self.subjects: dict[str, str] = {}
        self.cond = threading.Condition()
        self.stopping = False

    def run(self) -> None:
        parser = BytesHeaderParser()
        cur = self.new.parent / "cur"
        while not self.stopping:
            try:
                names = os.listdir(self.new)
            except FileNotFoundError:
                names = []
            now = time.monotonic()
            for name in names:
                with open(self.new / name, "rb") as fh:
                    head = parser.parsebytes(fh.read())
                ref = head.get("In-Reply-To")
                cur.mkdir(exist_ok=True)
                os.replace(self.new / name, cur / name)  # read: as a mail client does
                if ref:
                    with self.cond:
                        self.subjects[str(ref)] = str(head.get("Subject", ""))
                        self.arrived[str(ref)] = now
                        self.cond.notify_all()
            time.sleep(0.002)

    def wait_for(self, mid: str, timeout: float = 300.0) -> float:
        deadline = time.monotonic() + timeout
        with self.cond:
            while mid not in self.arrived:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no reply to {mid}")
                self.cond.wait(left)
            return self.arrived[mid]


def password(name: str) -> str:
    return f"pw-{name}-bench"


class Players:
    """Sends commands over a pool of persistent SMTP sessions; waits for replies."""

    def __init__(self, port: int, replies: Replies, connections: int) -> None:
        self.replies = replies
        self.pool = [smtplib.SMTP("127.0.0.1", port, timeout=120) for _ in range(connections)]
        self.free = list(self.pool)
        self.cond = threading.Condition()
        self.counter = iter(range(10**9))

    def send(self, sender: str, subject: str) -> tuple[str, float]:
        with self.cond:
            while not self.free:
                self.cond.wait()
            smtp = self.free.pop()
            mid = f"<p{next(self.counter)}.{time.time_ns()}@bench.example>"
        try:
            start = time.monotonic()
            smtp.sendmail(sender, ["pbmserv@localhost"], mail(sender, subject, mid))
        finally:
            with self.cond:
                self.free.append(smtp)
                self.cond.notify()
        return mid, start

    def ask(self, sender: str, subject: str) -> float:
        """Send a command; the time until its reply came (a refusal stops the bench:
        a refused move costs less than a move, and would flatter the figures)."""
        mid, start = self.send(sender, subject)
        took = self.replies.wait_for(mid) - start
        answer = self.replies.subjects[mid]
        if answer.lower().endswith("error"):
            raise RuntimeError(f"{subject!r} was refused: {answer!r}")
        return took

    def sign_up(self, name: str) -> None:
        """Open the account ``name`` and confirm it by replying to the confirmation (the
        reply to the signup), as a player does."""
        address = f"{name}@bench.example"
        mid, _ = self.send(address, f"signup {name} {password(name)}")
        self.replies.wait_for(mid)
        confirm = self.replies.subjects[mid]
        assert confirm.startswith(f"confirm {name} "), confirm
        self.ask(address, confirm)

    def close(self) -> None:
        for smtp in self.pool:
            smtp.quit()


def play_games(players: Players, engine: AnyEngine, boards: int, moves: int,
               options: list[str], seed: int, first: int) -> tuple[list[float], float]:
    """Every board plays ``moves`` moves, each mailed when the last one's reply came."""
    rng = random.Random(seed)
    latencies: list[float] = []
    lock = threading.Lock()

    def game(number: int, a: str, b: str) -> None:
        pos = engine.new(options)
        for ply in range(moves):
            legal = engine.legal_moves(pos)
            if engine.outcome(pos) is not None or not legal:
                return
            with lock:
                move = rng.choice(legal)
            user = (a, b)[engine.to_move(pos)]
            latency = players.ask(f"{user}@bench.example",
                                  f"{engine.name} move {number} {user} {password(user)} "
                                  f"{engine.format_move(pos, move)}#{ply + 1}")
            pos = engine.apply(pos, move)
            with lock:
                latencies.append(latency)

    start = time.monotonic()
    threads = [threading.Thread(target=game, args=(first + g, f"p{2 * g}", f"p{2 * g + 1}"))
               for g in range(boards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.monotonic() - start


TICK = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (read from /proc, Linux)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def cpu_seconds(pid: int) -> tuple[str, float]:
    """A process's name (its pbmserv command) and the CPU it used so far, user and
    system, counted by the kernel: load on the machine does not change it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone", 0.0
    words = [a.decode() for a in argv if a]
    name = next((w for w in words if w in ("serve", "work", "bots", "web")), words[-1])
    return name, (int(fields[11]) + int(fields[12])) / TICK


def cpu_snapshot(pids: list[int]) -> dict[int, tuple[str, float]]:
    return {pid: cpu_seconds(pid) for root in pids for pid in process_tree(root)}


def cpu_used(before: dict[int, tuple[str, float]],
             after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds each kind of process used between two snapshots."""
    used: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        used[name] = used.get(name, 0.0) + seconds - before.get(pid, (name, 0.0))[1]
    return used


def rss_peak_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def fresh_database(url: str | None, work: Path) -> str:
    if url is None:
        return f"sqlite:///{work / 'bench.sqlite3'}"
    parsed = make_url(url)
    admin = create_engine(parsed.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{parsed.database}"'))
    admin.dispose()
    return url


def bare_sink(connections: int, mails: int) -> tuple[float, float, float, float]:
    """The bare aiosmtpd sink flooded with ``mails`` mails: its acknowledgements a
    second, their p50 and p99 (ms), and the sink's CPU seconds per mail."""
    port = free_port()
    sink = subprocess.Popen([sys.executable, "-c", SINK, str(port)])
    try:
        wait_port(port)
        flood = Flood(port, connections,
                      lambda n: mail("flood@bench.example", "help", f"<s{n}@bench>", True))
        before = cpu_seconds(sink.pid)[1]
        threads = flood.run(mails // connections)
        for t in threads:
            t.join()
        flood.ended = time.monotonic()
        cpu = (cpu_seconds(sink.pid)[1] - before) / len(flood.latencies)
    finally:
        sink.terminate()
        sink.wait()
    return (flood.rate(), 1000 * percentile(flood.latencies, 50),
            1000 * percentile(flood.latencies, 99), cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", type=int, default=50)
    ap.add_argument("--moves", type=int, default=20, help="moves per board")
    ap.add_argument("--connections", type=int, default=10, help="SMTP connections")
    ap.add_argument("--flood", type=int, default=2000, help="mails flooded at the sink")
    ap.add_argument("--lone", type=int, default=600,
                    help="mails sent to the sink one at a time, over one connection")
    ap.add_argument("--processes", type=int, default=1,
                    help="pbmserv processes: one serve, the others work --loop")
    ap.add_argument("--game", default="honeydonuts")
    ap.add_argument("--option", action="append", default=[], help="game option (repeat)")
    ap.add_argument("--database-url", default=None,
                    help="PostgreSQL URL of a database to create afresh (default SQLite)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="measure the first moves the server sees (cold caches)")
    args = ap.parse_args()
    engine = get_engine(args.game)
    assert engine is not None, f"unknown game {args.game}"
    options = list(engine.check_options(args.option))
    work = Path(tempfile.mkdtemp(prefix="pbmserv-bench-"))

    # 1. the bare sink (run again after pbmserv: see the end)
    sink_rate, sink_p50, sink_p99, sink_first = bare_sink(args.connections, args.flood)
    lone_first = bare_sink(1, args.lone)[3]

    # 2. pbmserv
    url = fresh_database(args.database_url, work)
    port = free_port()
    # the bench's players mail far faster than people do: the hourly caps on one
    # player's mail (which hold what is over them) are set above what they send, and
    # the flood's one sender has no quota of stored mail (it measures the intake)
    env = dict(os.environ, PBMSERV_DATABASE_URL=url, PBMSERV_MAILDIR=str(work / "mail"),
               PBMSERV_REPLIES_PER_SENDER_HOUR="1000", PBMSERV_MAILS_PER_ADDRESS_HOUR="1000",
               PBMSERV_SENDER_QUOTA_MAILS="0", PBMSERV_SENDER_QUOTA_BYTES="0")
    procs = [subprocess.Popen([sys.executable, "-m", "pbmserv", "serve", "--port", str(port)],
                              env=env, stderr=subprocess.DEVNULL)]
    wait_port(port)
    for _ in range(args.processes - 1):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "pbmserv", "work", "--loop", "--interval", "0.2"],
            env=env, stderr=subprocess.DEVNULL))
    replies = Replies(work / "mail")
    replies.start()
    try:
        players = Players(port, replies, args.connections)
        names = [f"p{i}" for i in range(2 * args.boards)]
        setup = [threading.Thread(target=players.sign_up, args=(n,)) for n in names]
        for t in setup:
            t.start()
        for t in setup:
            t.join()
        def challenge_all() -> None:
            for g in range(args.boards):
                players.ask(f"{names[2 * g]}@bench.example",
                            f"{engine.name} challenge {names[2 * g]} {names[2 * g + 1]} "
                            + " ".join(options))

        def measured(first: int, seed: int) -> tuple[list[float], float,
                                                       dict[str, float]]:
            """Moves on the next boards: their latencies, how long they took and the
            CPU every process of pbmserv used for them (idle rounds included)."""
            challenge_all()
            time.sleep(1.0)  # the challenges' mails sent
            before = cpu_snapshot([p.pid for p in procs])
            latencies, elapsed = play_games(players, engine, args.boards, args.moves,
                                            options, seed, first=first)
            time.sleep(0.5)  # the last opponents' board mails written
            return latencies, elapsed, cpu_used(before, cpu_snapshot([p.pid for p in procs]))

        # the warm-up: the same moves on boards of their own, so that the figures are
        # those of a server that has run a while, not of its first minute (a process
        # checks a player's password with argon2, 18 ms, the first time it sees them,
        # and remembers it; every template is compiled once a process)
        cold_moves, cold_used = 0, dict[str, float]()
        if args.warmup:
            cold, _, cold_used = measured(101, args.seed + 2)
            cold_moves = len(cold)
        latencies, elapsed, used = measured(101 + args.boards * bool(args.warmup), args.seed)
        # the same again on new boards, with the flood: acknowledgements under load
        challenge_all()
        load = Flood(port, args.connections,
                     lambda n: mail("flood@bench.example", "help", f"<f{n}@bench>", True))
        flooding = load.run()
        loaded, loaded_elapsed = play_games(
            players, engine, args.boards, args.moves, options, args.seed + 1,
            first=101 + args.boards * (1 + bool(args.warmup)))
        load.finish(flooding)
        players.close()
        peak = max(rss_peak_mb(p.pid) for p in procs)
    finally:
        replies.stopping = True
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)
    rate, p50, p99 = (load.rate(), 1000 * percentile(load.latencies, 50),
                      1000 * percentile(load.latencies, 99))
    # the machine's speed drifts over a run (by a third, some days): the sink's CPU is
    # taken before and after pbmserv's, and the ratios are to their mean
    sink_last = bare_sink(args.connections, args.flood)[3]
    sink_cpu = (sink_first + sink_last) / 2
    lone_last = bare_sink(1, args.lone)[3]
    lone_cpu = (lone_first + lone_last) / 2
    moves = len(latencies)
    where = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
    print(f"pbmserv throughput: {where}, {args.processes} process(es), {args.boards} "
          f"{engine.name} boards x {args.moves} moves, {args.connections} connections")
    print(f"bare aiosmtpd sink:   {sink_rate:7.0f} acks/s   ack p50 {sink_p50:6.1f} ms   "
          f"p99 {sink_p99:6.1f} ms")
    print(f"pbmserv acks (load):  {rate:7.0f} acks/s   ack p50 {p50:6.1f} ms   "
          f"p99 {p99:6.1f} ms   = {100 * rate / sink_rate:.0f} % of the sink")
    print(f"moves end to end:     {moves / elapsed:7.1f} moves/s ({moves} moves in "
          f"{elapsed:.1f} s)   reply p50 {1000 * percentile(latencies, 50):.0f} ms   "
          f"p99 {1000 * percentile(latencies, 99):.0f} ms   mean "
          f"{1000 * statistics.mean(latencies):.0f} ms")
    print(f"moves during the flood: {len(loaded) / loaded_elapsed:5.1f} moves/s   reply p50 "
          f"{1000 * percentile(loaded, 50):.0f} ms   p99 {1000 * percentile(loaded, 99):.0f} ms")
    print(f"peak memory (RSS) of a pbmserv process: {peak:.0f} MB")
    per_move = {name: 1000 * seconds / moves for name, seconds in sorted(used.items())}
    total = sum(per_move.values())
    print(f"bare aiosmtpd sink:   {1000 * sink_cpu:.3f} ms of CPU per accepted mail "
          f"({1000 * sink_first:.3f} before pbmserv, {1000 * sink_last:.3f} after)")
    if cold_moves:
        cold_total = 1000 * sum(cold_used.values()) / cold_moves
        print(f"pbmserv, CPU per move in the warm-up ({cold_moves} moves, every process "
              f"new): {cold_total:.2f} ms = {cold_total / (1000 * sink_cpu):.1f}x")
    print("pbmserv, CPU per move end to end (mail in, reply and board mail out): "
          + ", ".join(f"{name} {ms:.2f} ms" for name, ms in per_move.items())
          + f"; all {total:.2f} ms = {total / (1000 * sink_cpu):.1f}x the sink's per mail")
    # a move comes alone (the next waits for its reply), as the sink's mails do over
    # one connection: there every mail wakes the event loop for itself
    print(f"bare aiosmtpd sink, one mail at a time (1 connection): {1000 * lone_cpu:.3f} ms "
          f"of CPU per mail ({1000 * lone_first:.3f} before, {1000 * lone_last:.3f} after); "
          f"pbmserv's move = {total / (1000 * lone_cpu):.1f}x that")


if __name__ == "__main__":
    main()
