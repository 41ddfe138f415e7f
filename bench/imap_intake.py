"""The IMAP intake, measured against a private Dovecot (as in tests/mailservers.py):

- a backlog: ``--mails`` mails put into the INBOX while nothing reads it (a server
  that was down), then one look of the intake: the time until every one is committed
  and flagged, in mails a second;
- the delay of IDLE: the intake's thread waits with IDLE, a mail is put into the
  folder (IMAP APPEND), and the time from the APPEND's answer to the mail's commit is
  taken, ``--rounds`` times (median and worst).

    .venv/bin/python bench/imap_intake.py [--mails 500] [--rounds 20]

Needs dovecot-imapd and openssl, like the tests.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from pbmserv.config import Settings
from pbmserv.db.migrate import upgrade
from pbmserv.db.session import Database
from pbmserv.intake.imap import ImapIntake, connect, select_folder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.mailservers import PASSWORD, USER, Dovecot, why_no_dovecot


def mail(n: int) -> bytes:
    return (f"From: player{n % 50}@example.org\r\nTo: games@example.org\r\n"
            f"Subject: amoeba moves {100 + n % 7}\r\nMessage-ID: <bench{n}@example.org>\r\n"
            f"\r\nPlease list the moves.\r\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mails", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    why = why_no_dovecot()
    if why is not None:
        raise SystemExit(why)
    root = Path(tempfile.mkdtemp(prefix="pbmserv-dovecot-"))
    root.chmod(0o755)
    server = Dovecot(root)
    server.start()
    try:
        (root / "password").write_text(PASSWORD)
        settings = Settings.from_values({
            "database_url": f"sqlite:///{root / 'bench.sqlite3'}",
            "imap": f"imaps://{USER}@localhost:{server.imaps}/INBOX",
            "imap_password_file": str(root / "password"), "imap_ca_file": str(server.cert)})
        db = Database(settings.database_url)
        upgrade(db)
        with server.client() as client:
            for n in range(args.mails):
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
        time.sleep(1.0)  # logged in, waiting with IDLE
        delays = []
        with server.client() as client:
            for n in range(args.rounds):
                seen.clear()
                client.append("INBOX", mail(args.mails + n))
                appended = time.perf_counter()
                if not seen.wait(60):
                    raise SystemExit("the intake did not take a mail within a minute")
                delays.append(time.perf_counter() - appended)
                time.sleep(0.2)
        intake.stop()
        print(f"IDLE: APPEND to commit, {len(delays)} mails: median "
              f"{statistics.median(delays) * 1000:.0f} ms, worst {max(delays) * 1000:.0f} ms")
        db.dispose()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
