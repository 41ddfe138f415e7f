"""What a 10 MB reply costs: its stored form, its reading, and the SMTP intake.

The reply is an Outlook reply as Exchange passes it on (a header line of 1,187
characters, the move in a text and an HTML part, an inline image whose base64 is
one line of 28 KB) with one PDF, 10 MB in all (``max_message_size``).  Measured in
CPU seconds of this process (``time.process_time``, every thread), medians:

* **stored form**: ``pbmserv.mail.attachments.stored_form`` of the reply, and the
  bytes it keeps;
* **reading**: ``parse_message`` of the stored form, against the reply itself (what
  reading it would cost were it stored whole) and against the same reply without the
  PDF (what its text costs);
* **through SMTP**: the reply sent to the real listener (``serve``'s SMTP, a worker
  thread, SQLite) until it is played, each of ``--mails`` replies to a board of its
  own, against a small reply; the client (smtplib) runs in this process too, so its
  cost (a pass over the 10 MB for line ends and dots) is in the figure.

    .venv/bin/python bench/big_mail.py [--mails 5] [--megabytes 10]
"""

from __future__ import annotations

import argparse
import base64
import random
import smtplib
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from pbmserv.commands import is_command  # noqa: E402
from pbmserv.config import Settings  # noqa: E402
from pbmserv.db.migrate import upgrade  # noqa: E402
from pbmserv.db.models import Board, OutboxMessage  # noqa: E402
from pbmserv.db.session import Database  # noqa: E402
from pbmserv.intake.store import store_message  # noqa: E402
from pbmserv.mail.attachments import stored_form  # noqa: E402
from pbmserv.mail.parse import parse_message  # noqa: E402
from pbmserv.processing import process_message  # noqa: E402
from pbmserv.server import Server  # noqa: E402
from tests.conftest import make_mail  # noqa: E402

OURS = ("pbmserv@localhost",)


def reply(to: str, pdf_bytes: int, n: int = 0) -> bytes:
    rng = random.Random(n)
    pdf = base64.encodebytes(rng.randbytes(pdf_bytes)).replace(b"\n", b"\r\n")
    image = base64.b64encode(rng.randbytes(21_000))
    return (b"From: Alice <alice@example.org>\r\nTo: " + to.encode() + b"\r\n"
            b"Subject: RE: New Honey Donuts Board 101 alice\r\n"
            + f"Message-ID: <big{n}-{pdf_bytes}@example.org>\r\n".encode()
            + b"X-Microsoft-Antispam-Message-Info: " + b"Qm9hcmQ" * 164 + b"\r\n"
            b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="_004_"\r\n\r\n'
            b'--_004_\r\nContent-Type: multipart/related; boundary="_005_"\r\n\r\n'
            b'--_005_\r\nContent-Type: multipart/alternative; boundary="_000_"\r\n\r\n'
            b"--_000_\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
            b"a1-a2\r\nThe papers are attached.\r\n\r\n"
            b"From: pbmserv <pbmserv@localhost>\r\nSent: Sunday, November 22, 2026 6:02 PM"
            b"\r\nTo: Alice <alice@example.org>\r\nSubject: New Honey Donuts Board 101\r\n"
            b"\r\n--_000_\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n"
            b"<html><body><p>a1-a2</p><p>The papers are attached.</p></body></html>\r\n"
            b"--_000_--\r\n\r\n--_005_\r\nContent-Type: image/png\r\n"
            b"Content-ID: <image001.png>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            + image + b"\r\n--_005_--\r\n\r\n"
            b'--_004_\r\nContent-Type: application/pdf; name="rules.pdf"\r\n'
            b'Content-Disposition: attachment; filename="rules.pdf"\r\n'
            b"Content-Transfer-Encoding: base64\r\n\r\n" + pdf + b"\r\n--_004_--\r\n")


def cpu(work: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return statistics.median(times)


def read(raw: bytes) -> Callable[[], object]:
    return lambda: parse_message(raw, OURS, "alice@example.org", is_command)


def through_smtp(pdf_bytes: int, mails: int) -> tuple[float, int]:
    """CPU of this process a reply, sent over SMTP until played; its size."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite:///{tmp}/bench.sqlite3",
                            maildir=Path(tmp) / "mail")
        db = Database(settings.database_url)
        upgrade(db)
        addresses = []
        for n in range(mails):  # a board each: alice to move, her reply address
            a, b = f"a{n}", f"b{n}"
            for uid in (a, b):
                send(db, settings, f"signup {uid} pw-{uid}-long", f"{uid}@example.org")
            rows = send(db, settings, f"honeydonuts challenge {a} {b}", "carol@example.org")
            addresses.append(next(to for to, addr in rows if addr == f"{a}@example.org"))
        mails_raw = [reply(to, pdf_bytes, n) for n, to in enumerate(addresses)]
        server = Server(db, settings, "127.0.0.1", _free_port(), interval=0.05, bots=False)
        server.start()
        try:
            started = time.process_time()
            with smtplib.SMTP("127.0.0.1", server.controller.port, timeout=120) as client:
                for n, raw in enumerate(mails_raw):
                    client.sendmail(f"a{n}@example.org", ["pbmserv@localhost"], raw)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                with db.reading() as s:
                    if s.scalar(select(func.count()).select_from(Board)
                                .where(Board.ply == 1)) == mails:
                        break
                time.sleep(0.02)
            else:
                raise SystemExit("the replies were not played")
            spent = time.process_time() - started
        finally:
            server.stop()
            db.dispose()
    return spent / mails, len(mails_raw[0])


def send(db: Database, settings: Settings, subject: str, sender: str) -> list[tuple[str, str]]:
    """Store and run one command mail; (reply address, to) of the mails it made,
    confirming a signup as its player would."""
    stored = store_message(db, make_mail(subject, sender=sender), sender)
    assert isinstance(stored, int)
    process_message(db, settings, stored)
    with db.reading() as s:
        out = [(m.reply_to or "", m.to_addr, m.subject) for m in s.scalars(
            select(OutboxMessage).where(OutboxMessage.inbound_id == stored))]
    for _, to, subj in out:
        if subj.startswith("confirm "):
            send(db, settings, f"Re: {subj}", to)
    return [(reply_to, to) for reply_to, to, _ in out]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--mails", type=int, default=5)
    args.add_argument("--megabytes", type=float, default=10)
    opts = args.parse_args()
    pdf_bytes = int((opts.megabytes * 1_000_000 - 60_000) * 57 / 78)
    big = reply("pbmserv+b1u1m1t0-0123456789abcdef@localhost", pdf_bytes)
    small = reply("pbmserv+b1u1m1t0-0123456789abcdef@localhost", 100)
    form = stored_form(big)
    print(f"reply: {len(big):,} bytes; stored form: {len(form.raw):,} bytes "
          f"({form.dropped})")
    print(f"stored form of the reply:          {1000 * cpu(lambda: stored_form(big)):8.2f} ms")
    print(f"reading the stored form:            {1000 * cpu(read(form.raw)):8.2f} ms")
    print(f"reading the reply without its PDF:  {1000 * cpu(read(small)):8.2f} ms")
    print(f"reading the reply itself:           {1000 * cpu(read(big), 3):8.2f} ms")
    big_cpu, size = through_smtp(pdf_bytes, opts.mails)
    small_cpu, small_size = through_smtp(100, opts.mails)
    print(f"through SMTP until played, a reply of {size:,} bytes: {1000 * big_cpu:8.1f} ms")
    print(f"through SMTP until played, a reply of {small_size:,} bytes:  "
          f"{1000 * small_cpu:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
