"""Moves and comments of real replies: the corpus of other projects' reply fixtures.

Every reply of ``../shared/corpus/real-mail/replies`` (Gmail, Outlook, Apple Mail,
iPhone, Android, Thunderbird, Yahoo, Hotmail, Mail.ru, Yandex... in a dozen languages)
is sent as a player would answer a board mail by reply: the move ``a1-a2`` is written
on a line of its own at the top of the reply (in each text and HTML part of it), the
rest of the reply is left as it was, and the mail goes to a move-by-reply address.
Each mail is read by the server's own parser (pbmserv.mail.parse.parse_message, the
registry's ``is_command``), and two things are counted:

* **move right**: the parser takes the reply for a move by reply and its move is
  ``a1-a2``;
* **comment clean**: the comment the opponent would read holds only the author's own
  words.  Checked mechanically, line by line, on the comment as the parser cut it
  (before any address masking): no quoted line (``>`` or ``|``), no attribution line
  ("On ... wrote:" and its forms in other languages, or a line that names a date and
  ends in a colon), no header block (``From:`` / ``Sent:`` / ``To:`` / ``Subject:``
  and localised forms; ``-----Original Message-----``, ``Ursprüngliche Nachricht``,
  ``Forwarded message``, Outlook's line of underscores), no signature (``-- ``,
  "Sent from my iPhone" and its kind), no e-mail address; and some text of the
  author's is kept (an empty comment is not clean when the author wrote something).
  Every comment was also read by eye (``--show-all``): ``REVIEWED`` below lists the
  faults the check finds that are none (the writer's own "I wrote something", a
  mail with nothing of the writer's in it), each with its reason; a fault of
  another kind in those mails still counts.

    .venv/bin/python bench/replies.py [--corpus DIR] [--show] [--cutter NAME]

``--show`` prints every comment that is not clean (``--show-all``: every comment) for
review; ``--cutter`` measures a library's cut in place of ours (``mail-parser-reply``
or ``email-reply-parser``, installed by hand: they are not dependencies).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from email import policy
from email.message import Message
from email.parser import BytesParser
from email.utils import formatdate
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbmserv.commands import is_command  # noqa: E402
from pbmserv.mail.html import html_to_text  # noqa: E402
from pbmserv.mail.parse import parse_message  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "real-mail" / "replies"
MOVE = "a1-a2"
OWN = ("pbmserv@localhost",)
TO = "pbmserv+b1u1m1t0-0123456789abcdef@localhost"

#: faults found by the mechanical check that are no faults, as read by eye:
#: fixture -> (the fault, as the check words it, and why it is none)
_NOTHING_OWN = "the writer wrote nothing of their own, so an empty comment is right"
REVIEWED: dict[str, tuple[str, str]] = {
    "discourse-email_reply_trimmer/quote_only.txt": ("empty", _NOTHING_OWN + ": a quote only"),
    "discourse-email_reply_trimmer/spam_1.txt": ("empty", _NOTHING_OWN + ": quotes of quotes"),
    "discourse-email_reply_trimmer/forwarded_message.txt": (
        "empty", _NOTHING_OWN + ": a forward (separator, headers, the forwarded text)"),
    "discourse-email_reply_trimmer/embedded_email_17.txt": (
        "empty", _NOTHING_OWN + ": an attribution over the unquoted original"),
    "discourse-email_reply_trimmer/embedded_email_18.txt": (
        "empty", _NOTHING_OWN + ": an attribution over the unquoted original"),
    "crisp-oss-email-reply-parser/email_not_a_signature.txt": (
        "separator: ---", "the line of dashes is the writer's own, under a table heading"),
    "discourse-email_reply_trimmer/embedded_email_6.txt": (
        "attribution: I wrote something", "the writer's prose"),
    "discourse-email_reply_trimmer/embedded_email_19.txt": (
        "attribution: figured it out, I wrote one", "the writer's prose"),
    "github-email_reply_parser/email_sent_from_my_not_signature.txt": (
        "signature: Sent from my desk,", "a sentence of the writer's, no signature"),
    "willdurand-EmailReplyParser/email_23_1.txt": (
        "attribution: Something wrote:",
        "names no date, address or client: the writer's own line"),
}

# -- the mechanical check ------------------------------------------------------------
_WROTE = (r"wrote|writes|schrieb|schreef|a\s+écrit|écrit|escribió|escreveu|scrisse|"
          r"skrev|kirjoitti|napisał|napisal|написал|написала|написав|написав\(ла\)|"
          r"írta|пишет|yazdı|написа|napsal|rašė|wrote\s+on")  # noqa: RUF001
_ATTRIBUTION = re.compile(
    rf"(?i)(\b(?:{_WROTE})\b.{{0,200}}:?\s*$)|"
    r"(^(?:on|am|le|el|il|op|em|den|dne|w\s+dniu|в|\d).{0,200}\b\d{1,2}[:.]\d{2}\b.{0,200}:\s*$)|"
    r"(写道|寫道|のメッセージ:|님이 작성)")
_HEADER = re.compile(
    r"(?i)^\s*\**\s*(from|sent|to|cc|subject|date|von|gesendet|an|betreff|datum|de|envoyé|"
    r"à|a|objet|van|verzonden|aan|onderwerp|da|inviato|oggetto|data|från|skickat|till|"
    r"ämne|fra|sendt|til|emne|od|wysłano|do|temat|от|отправлено|кому|тема|дата|"
    r"enviado|para|asunto|assunto|feladó|elküldve|címzett|tárgy|lähettäjä|lähetetty|"
    r"vastaanottaja|aihe|发件人|发送时间|收件人|主题|寄件者|送件日期|收件者|主旨|"
    r"差出人|送信日時|宛先|件名)\s*\**\s*[:：]")  # noqa: RUF001
_SEPARATOR = re.compile(
    r"(?i)(-{2,}\s*(original|ursprüngliche|oorspronkelijk|message d'origine|"
    r"mensaje original|messaggio originale|originalmeddelande|opprinnelig|"
    r"forwarded|weitergeleitete|исходное|пересылаемое|oryginalna|originalt).*-*)|"
    r"^_{20,}\s*$|^\s*begin forwarded message|^\s*-{5,}\s*$")
_SIGNATURE = re.compile(
    r"(?i)^(--\s*$|sent from (my|mail|yahoo|outlook)|get outlook for|envoyé de mon|"
    r"von meinem|enviado desde|enviado do meu|inviato da|verzonden (met|vanaf) mijn|"
    r"skickat från|sendt fra min|отправлено с|wysłane z|sent via|sent with)")  # noqa: RUF001
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")


def faults(comment: str) -> list[str]:
    """Why ``comment`` is not the author's own words alone (empty: it is clean)."""
    out = []
    for line in comment.split("\n"):
        text = line.strip()
        if text.startswith((">", "|")):
            out.append(f"quoted: {text[:60]}")
        elif _ATTRIBUTION.search(text) and len(text) < 400:
            out.append(f"attribution: {text[:60]}")
        elif _HEADER.match(text):
            out.append(f"header: {text[:60]}")
        elif _SEPARATOR.search(text):
            out.append(f"separator: {text[:60]}")
        elif _SIGNATURE.match(text):
            out.append(f"signature: {text[:60]}")
        elif _ADDRESS.search(text):
            out.append(f"address: {text[:60]}")
    return out


# -- the corpus as replies -----------------------------------------------------------
def _html_with_move(source: str) -> str:
    match = re.search(r"(?i)<body[^>]*>", source)
    at = match.end() if match else 0
    return f"{source[:at]}<div>{MOVE}</div>{source[at:]}"


def _with_move(part: Message, html: bool) -> None:
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    charset = part.get_content_charset() or "utf-8"
    try:
        text = payload.decode(charset, "replace")
    except LookupError:
        charset, text = "utf-8", payload.decode("utf-8", "replace")
    text = _html_with_move(text) if html else f"{MOVE}\n{text}"
    del part["Content-Transfer-Encoding"]
    part.set_payload(text.encode("utf-8"), "utf-8")


def _headers(subtype: str) -> str:
    return ("From: Alice <alice@example.org>\n"
            f"To: pbmserv <{TO}>\n"
            "Subject: Re: New Honeydonuts Board 1 alice\n"
            f"Date: {formatdate()}\n"
            "Message-ID: <bench@example.org>\n"
            "MIME-Version: 1.0\n"
            f"Content-Type: text/{subtype}; charset=utf-8\n"
            "Content-Transfer-Encoding: 8bit\n\n")


def as_reply(path: Path) -> bytes:
    """The fixture at ``path`` as a move-by-reply mail with the move on top."""
    data = path.read_bytes()
    if path.suffix == ".eml":
        msg = BytesParser(policy=policy.compat32).parsebytes(data)
        for part in msg.walk():
            ctype = part.get_content_type()
            if not part.is_multipart() and ctype in ("text/plain", "text/html"):
                _with_move(part, ctype == "text/html")
        for name, value in (("To", f"pbmserv <{TO}>"), ("From", "Alice <alice@example.org>")):
            del msg[name]
            msg[name] = value
        return msg.as_bytes()
    text = data.decode("utf-8", "replace")
    if path.suffix == ".html":
        return (_headers("html") + _html_with_move(text)).encode("utf-8")
    return (_headers("plain") + f"{MOVE}\n" + text).encode("utf-8")


# -- the libraries, for comparison ---------------------------------------------------
def _library(name: str) -> Callable[[str], str]:
    if name == "mail-parser-reply":
        from mailparser_reply import EmailReplyParser as Mpr  # type: ignore[import-not-found]
        languages = ["en", "de", "fr", "es", "it", "nl", "pl", "sv", "da", "ru", "ja", "zh",
                     "cs", "ko", "pt", "fi", "no", "hu", "uk"]

        def mpr(text: str) -> str:  # it drops the languages it does not know
            return str(Mpr(languages=languages).parse_reply(text=text))
        return mpr
    if name == "email-reply-parser":
        from email_reply_parser import EmailReplyParser  # type: ignore[import-not-found]
        return lambda text: str(EmailReplyParser.parse_reply(text))
    raise SystemExit(f"unknown cutter {name!r}")


def _body_after_move(raw: bytes) -> str:
    msg = BytesParser(policy=policy.compat32).parsebytes(raw)
    html = ""
    for part in msg.walk():
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        text = payload.decode(part.get_content_charset() or "utf-8", "replace")
        if part.get_content_type() == "text/plain":
            return text.replace("\r\n", "\n").split(f"{MOVE}\n", 1)[-1]
        if part.get_content_type() == "text/html" and not html:
            html = html_to_text(text)
    return html.split(MOVE, 1)[-1]


# -- the run -------------------------------------------------------------------------
@dataclass
class Outcome:
    name: str
    move_right: bool
    comment: str
    faults: list[str]

    @property
    def clean(self) -> bool:
        return not self.faults


def run_one(path: Path, corpus: Path, cutter: Callable[[str], str] | None) -> Outcome:
    name = str(path.relative_to(corpus))
    raw = as_reply(path)
    parsed = parse_message(raw, OWN, "alice@example.org", is_command)
    move_right = parsed.reply_tag is not None and parsed.reply_move == MOVE
    comment = parsed.comment if cutter is None else cutter(_body_after_move(raw)).strip()
    found = faults(comment)
    if not comment.strip():
        found.append("empty: the author's words are lost")
    if name in REVIEWED:
        accepted, _why = REVIEWED[name]
        found = [f for f in found if not f.startswith(accepted)]
    return Outcome(name, move_right, comment, found)


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--corpus", type=Path, default=CORPUS)
    args.add_argument("--show", action="store_true", help="print the comments not clean")
    args.add_argument("--show-all", action="store_true", help="print every comment")
    args.add_argument("--cutter", help="a library's cut in place of ours")
    opts = args.parse_args()
    corpus: Path = opts.corpus
    if not corpus.is_dir():
        print(f"skipped: no corpus at {corpus} (it lives in ../shared, beside the project)")
        return 0
    cutter = _library(opts.cutter) if opts.cutter else None
    paths = sorted(p for p in corpus.rglob("*") if p.is_file()
                   and p.suffix in (".txt", ".eml", ".html"))
    outcomes = [run_one(p, corpus, cutter) for p in paths]
    folders: dict[str, list[Outcome]] = {}
    for o in outcomes:
        folders.setdefault(o.name.split("/")[0], []).append(o)
    print(f"{'folder':40} {'replies':>7} {'moves right':>11} {'comments clean':>14}")
    for folder, group in sorted(folders.items()):
        print(f"{folder:40} {len(group):7} {sum(o.move_right for o in group):11} "
              f"{sum(o.clean for o in group):14}")
    moves = sum(o.move_right for o in outcomes)
    clean = sum(o.clean for o in outcomes)
    total = len(outcomes)
    print(f"{'all':40} {total:7} {moves:11} {clean:14}")
    print(f"moves right: {moves} of {total} ({100 * moves / total:.1f} %); "
          f"comments clean: {clean} of {total} ({100 * clean / total:.1f} %)")
    for o in outcomes:
        if not o.move_right:
            print(f"MOVE WRONG: {o.name}")
        if opts.show_all or (opts.show and not o.clean):
            print(f"\n===== {o.name}: {'clean' if o.clean else '; '.join(o.faults)}")
            print(o.comment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
