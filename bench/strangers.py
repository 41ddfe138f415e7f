"""Which strangers' mails get an answer: the real mail of ``../shared/corpus/real-mail``.

Every message of the corpus (other projects' test fixtures: spam, newsletters,
notifications, bounces and reports, people's mail and replies) is sent to the server
as a stranger's mail (nobody has an account), through the real store and processor,
each as the first mail of its sender (the outbox is emptied between two), and the
mails it makes are counted: an answer to its sender, a mail to anyone else.  A reply
fixture that is a body alone is sent with a From of its own (a person's reply).

Each message is of one kind, read by eye (``KINDS`` below; a message not named there
is a person's): ``spam`` (unasked commercial or fraudulent mail), ``robot`` (written
by a program that set none of RFC 3834's marks: newsletters, notifications, a
list's digest, web-form relays), ``report`` (bounces and delivery, read and
feedback reports: never answered, before or after), ``person``.  Messages with no
sender at all (no From, no envelope) are left out.

    .venv/bin/python bench/strangers.py [--corpus DIR] [--show]

To measure the code from before a change, put its tree first on the path:
``PYTHONPATH=/tmp/before .venv/bin/python bench/strangers.py``.  ``--in-order``
sends them all into one database in the corpus's order instead (an address that
writes again the same day is then answered at most once if its mails hold no command).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections import Counter
from email import policy
from email.parser import BytesParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after PYTHONPATH: a tree from before may come first

from sqlalchemy import delete, select  # noqa: E402

from pbmserv.config import Settings  # noqa: E402
from pbmserv.db.migrate import upgrade  # noqa: E402
from pbmserv.db.models import OutboxMessage  # noqa: E402
from pbmserv.db.session import Database  # noqa: E402
from pbmserv.intake.store import store_message  # noqa: E402
from pbmserv.processing import process_message  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "real-mail"
_SPAM = "spam"
_ROBOT = "robot"
#: the messages that are not a person's, by their path in the corpus (bounces and
#: reports are found by their form: see ``kind_of``)
KINDS: dict[str, str] = {
    # spam: loans, pills, stock tips, software, fraud, a marketing blast
    "odd/mikel-mail/error_emails/bad_date_header.eml": _SPAM,
    "odd/mikel-mail/error_emails/content_transfer_encoding_empty.eml": _SPAM,
    "odd/mikel-mail/error_emails/content_transfer_encoding_plain.eml": _SPAM,
    "odd/mikel-mail/error_emails/content_transfer_encoding_qp_with_space.eml": _SPAM,
    "odd/mikel-mail/error_emails/content_transfer_encoding_spam.eml": _SPAM,
    "odd/mikel-mail/error_emails/content_transfer_encoding_text-html.eml": _SPAM,
    "odd/mikel-mail/error_emails/content_transfer_encoding_with_semi_colon.eml": _SPAM,
    "odd/mikel-mail/error_emails/empty_group_lists.eml": _SPAM,
    "odd/mikel-mail/error_emails/invalid_subject_characters.eml": _SPAM,
    "odd/mikel-mail/error_emails/must_supply_encoding.eml": _SPAM,
    "odd/mikel-mail/plain_emails/raw_email_bad_time.eml": _SPAM,
    "odd/mikel-mail/plain_emails/raw_email_with_bad_date.eml": _SPAM,
    # programs: newsletters, notifications, a survey, leads and forms relayed, a
    # list's digest and announcements, a list's mail
    "odd/mikel-mail/error_emails/bad_date_header2.eml": _ROBOT,
    "odd/mikel-mail/error_emails/cant_parse_from.eml": _ROBOT,
    "odd/mikel-mail/error_emails/content_transfer_encoding_7-bit.eml": _ROBOT,
    "odd/mikel-mail/error_emails/content_transfer_encoding_with_8bits.eml": _ROBOT,
    "odd/mikel-mail/error_emails/bad_subject.eml": _ROBOT,
    "odd/mikel-mail/error_emails/encoding_madness.eml": _ROBOT,
    "odd/mikel-mail/error_emails/new_line_in_to_header.eml": _ROBOT,
    "odd/mikel-mail/error_emails/trademark_character_in_subject.eml": _ROBOT,
    "odd/mikel-mail/error_emails/weird_to_header.eml": _ROBOT,
    "odd/mikel-mail/error_emails/empty_in_reply_to.eml": _ROBOT,
    "odd/mikel-mail/mime_emails/raw_email_encoded_stack_level_too_deep.eml": _ROBOT,
    "odd/mikel-mail/plain_emails/raw_email_trailing_dot.eml": _ROBOT,
    "odd/mikel-mail/plain_emails/raw_email_multiple_from.eml": _ROBOT,
    "odd/cpython-test_email/msg_02.txt": _ROBOT,
    "odd/cpython-test_email/msg_32.txt": _ROBOT,
    "odd/cpython-test_email/msg_33.txt": _ROBOT,
    "odd/cpython-test_email/msg_36.txt": _ROBOT,
}
KIND_ORDER = ("spam", "robot", "report", "person")
_HEADER_LINE = re.compile(rb"^[A-Za-z][A-Za-z0-9-]{0,60}:")


def is_message(data: bytes) -> bool:
    """Whether a fixture is a whole message (headers first), not a body alone."""
    return bool(_HEADER_LINE.match(data.lstrip(b"\xef\xbb\xbf")))


def kind_of(name: str, data: bytes) -> str:
    if name in KINDS:
        return KINDS[name]
    msg = BytesParser(policy=policy.compat32).parsebytes(data)
    ctype = msg.get_content_type()
    sender = str(msg.get("From", "")).lower()
    if ctype in ("multipart/report", "message/delivery-status") \
            or "mailer-daemon" in sender or str(msg.get("Return-Path", "")).strip() == "<>":
        return "report"
    if ctype.startswith("multipart/") and any(
            part.get_content_type() in ("message/delivery-status", "message/feedback-report",
                                        "message/disposition-notification")
            for part in msg.walk()):
        return "report"
    return "person"


def as_mail(path: Path, number: int) -> tuple[bytes, str]:
    """The fixture as a mail to the server, and its envelope sender."""
    data = path.read_bytes()
    if is_message(data):
        msg = BytesParser(policy=policy.compat32).parsebytes(data)
        sender = str(msg.get("Return-Path", "")).strip().strip("<>")
        return data, sender if "@" in sender else ""
    writer = f"writer{number}@example.org"
    if path.suffix == ".html":
        head = "Content-Type: text/html; charset=utf-8\r\n"
    else:
        head = "Content-Type: text/plain; charset=utf-8\r\n"
    raw = (f"From: Writer <{writer}>\r\nTo: pbmserv@localhost\r\nSubject: Re: your mail\r\n"
           f"Message-ID: <writer{number}@example.org>\r\nMIME-Version: 1.0\r\n{head}\r\n")
    return raw.encode() + data, writer


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--corpus", type=Path, default=CORPUS)
    args.add_argument("--show", action="store_true",
                      help="name every message that is not a person's and got an answer")
    args.add_argument("--in-order", action="store_true",
                      help="one database for all, in the corpus's order")
    opts = args.parse_args()
    corpus: Path = opts.corpus
    if not corpus.is_dir():
        print(f"skipped: no corpus at {corpus} (it lives in ../shared, beside the project)")
        return 0
    paths = sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "README.md")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/strangers.sqlite3"
        db = Database(url)
        upgrade(db)
        settings = Settings(database_url=url, maildir=Path(tmp) / "mail")
        seen: Counter[str] = Counter()
        answered: Counter[str] = Counter()
        third: Counter[str] = Counter()
        shown: list[str] = []
        for number, path in enumerate(paths):
            name = str(path.relative_to(corpus))
            raw, envelope = as_mail(path, number)
            stored = store_message(db, raw, envelope)
            if stored is None:
                continue
            process_message(db, settings, stored)
            with db.transaction() as session:
                out = list(session.scalars(select(OutboxMessage)
                                           .where(OutboxMessage.inbound_id == stored)))
                if not opts.in_order:
                    session.execute(delete(OutboxMessage))
            kind = kind_of(name, raw if is_message(path.read_bytes()) else b"")
            frm = _sender(raw, envelope)
            if not frm:
                continue  # no sender: never answered, before or after
            seen[kind] += 1
            if out:
                answered[kind] += 1
                if kind != "person":
                    shown.append(f"  {kind:6} {name}")
            if any(_key(m.to_addr) != _key(frm) for m in out):
                third[kind] += 1
        db.dispose()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'kind':8} {'messages':>8} {'answered':>8} {'to a third party':>16}")
    for kind in KIND_ORDER:
        print(f"{kind:8} {seen[kind]:8} {answered[kind]:8} {third[kind]:16}")
    if opts.show and shown:
        print("answered, not a person's:")
        print("\n".join(shown))
    return 0


def _sender(raw: bytes, envelope: str) -> str:
    """The From's address (else the envelope's), as the server reads it."""
    from pbmserv.mail.mailboxes import first_mailbox, raw_header
    msg = BytesParser(policy=policy.compat32).parsebytes(raw)
    return first_mailbox(raw_header(msg, "From")) or envelope.lower()


def _key(address: str) -> str:
    """The address in one form (the code from before a change may not have one)."""
    try:
        from pbmserv.mail.addresses import address_key
    except ImportError:
        local, at, domain = address.strip().lower().rpartition("@")
        return f"{local.partition('+')[0]}{at}{domain}"
    return address_key(address)


if __name__ == "__main__":
    raise SystemExit(main())
