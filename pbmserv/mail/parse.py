"""Reading a stored mail: who sent it, whether to answer, and its command lines.

Nothing here raises on bad input, and the work done is bounded whatever arrives:
a mail over one of the limits below is not parsed further but gets a ``refusal``
(the processor answers it with a clear reply), and every text taken from a mail is
cleaned of control characters before anyone stores or shows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email import policy
from email.message import Message
from email.parser import BytesHeaderParser, BytesParser
from itertools import islice

from pbmserv.mail.addresses import tag_of
from pbmserv.mail.headers import MAX_HEADER_VALUE, address_of, header
from pbmserv.mail.html import html_to_text
from pbmserv.mail.text import clean_text

MAX_COMMAND_LINES = 50
#: multipart and message parts a mail may hold (this bounds how deep they nest)
MAX_CONTAINERS = 20
#: parts of any kind
MAX_PARTS = 100
#: header lines of the mail itself, and their size
MAX_HEADER_FIELDS = 300
MAX_HEADER_BYTES = 64 * 1024
#: the comment kept from a mail's body
MAX_COMMENT = 4000
#: set on every mail the server sends; a mail carrying it is our own, come back
LOOP_HEADER = "X-Pbmserv-Loop"

_PREFIX = re.compile(r"^(?:(?:re|fwd?|aw|sv|wg|tr|antw|vs) ?(?:\[\d{1,6}\] ?)?: ?)+", re.I)
_QUOTE_INTRO = re.compile(r"^(on .* wrote:|.* schrieb .*:|-+ ?original message ?-+)$", re.I)
_QUOTE_INTRO_MAX = 300
# the Subject of one of our board mails (after any Re:): not a command, even though
# "board" is also a verb ("<game> board 101 uid pw move" has three more words)
_BOARD_SUBJECT = re.compile(
    r"(?:(?:new|nag:) )?(\S+) board ([0-9]{1,10}):?"
    r"((?: \S+){0,2}| chat from \S+| how to move)", re.I)
_ADDRESS_LIKE = re.compile(r"[^\s<>(),;:\"\[\]]{1,200}@[^\s<>(),;:\"\[\]]{1,200}")
_CONTAINER = re.compile(rb"(?im)^content-type:[ \t]*(?:\r?\n[ \t]+)*(?:multipart|message)/")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_FIELD_START = re.compile(rb"(?m)^[^ \t\r\n]")


class Refusal:
    """Why a mail was not read; each has its own reply (templates/refused.txt.j2)."""

    NESTING = "nesting"
    PARTS = "parts"
    HEADERS = "headers"


@dataclass
class ParsedMail:
    message_id: str | None
    from_addr: str
    reply_to: str
    subject: str
    #: command lines in order
    commands: list[str] = field(default_factory=list)
    #: where the command came from: "subject", "body", "multiple" or "" (nothing found)
    source: str = ""
    comment: str = ""
    #: why the mail must not be answered ("" when it may be)
    silent_reason: str = ""
    #: why the mail was not read (a Refusal), "" when it was
    refusal: str = ""
    references: str = ""
    #: (game, board number) when the Subject is that of a board mail, left as it was
    board_reply: tuple[str, int] | None = None
    #: the TAG of the ``pbmserv+TAG@host`` address the mail was written to, if any
    reply_tag: str | None = None
    #: the bare move of a reply to such an address (its first line, or its Subject)
    reply_move: str | None = None


def _any_text(line: str) -> bool:
    return bool(line.strip())


def parse_message(
    raw: bytes,
    own_addresses: tuple[str, ...] = (),
    envelope_from: str = "",
    is_command: Callable[[str], bool] = _any_text,
) -> ParsedMail:
    """Parse raw bytes.  ``is_command(line)`` tells a command line from prose."""
    refusal = prescan(raw)
    msg = _parse(raw, headers_only=bool(refusal))
    from_addr = address_of(header(msg, "From")) or address_of(envelope_from)
    reply_to = address_of(header(msg, "Reply-To")) or from_addr
    message_id = header(msg, "Message-ID")[:900] or None
    refs = " ".join(x for x in (header(msg, "References"), message_id or "") if x).strip()
    parsed = ParsedMail(
        message_id=message_id,
        from_addr=from_addr,
        reply_to=reply_to,
        subject=_clean_subject(header(msg, "Subject")),
        references=refs[-900:],
    )
    parsed.silent_reason = _silent_reason(msg, envelope_from, from_addr, reply_to, own_addresses)
    if parsed.silent_reason:
        return parsed
    parts: list[Message] = []
    if not refusal:
        try:
            parts = list(islice(msg.walk(), MAX_PARTS + 1))
        except RecursionError:  # pragma: no cover - prescan bounds the nesting
            refusal = Refusal.NESTING
        else:
            if len(parts) > MAX_PARTS:
                refusal = Refusal.PARTS
    if refusal:
        parsed.refusal = refusal
        return parsed
    body = body_text(parts)
    parsed.reply_tag = _reply_tag(msg, own_addresses)
    if parsed.reply_tag is None or not _find_reply_move(parsed, body, is_command):
        _find_commands(parsed, body, is_command)
    return parsed


_RECIPIENT_HEADERS = ("Delivered-To", "X-Original-To", "To", "Cc")


def _reply_tag(msg: Message, own: tuple[str, ...]) -> str | None:
    """The tag of the first ``pbmserv+TAG@host`` address among the recipients."""
    for name in _RECIPIENT_HEADERS:
        for value in (msg.get_all(name) or [])[:10]:
            for candidate in _ADDRESS_LIKE.findall(str(value)[:MAX_HEADER_VALUE]):
                tag = tag_of(candidate, own)
                if tag:
                    return tag
    return None


#: the line a mail client writes above the text it quotes ("On ..., X wrote:"), in the
#: languages clients most often use
_ATTRIBUTION = re.compile(
    r"\b(wrote|schrieb|a\s+écrit|escribió|scrisse|skrev|schreef|napisał|написал)\b"
    r".{0,200}:\s*$", re.IGNORECASE)


def _attribution_end(lines: list[str], i: int) -> int | None:
    """If an attribution starts at line ``i`` (one line, or two when the client wrapped
    it) and quoted text follows it, the index of its last line."""
    # a wrapped attribution's first line is never one word (that would be the move)
    for end in (i, i + 1) if len(lines[i].split()) > 1 else (i,):
        if end < len(lines) and _ATTRIBUTION.search(lines[end][:400]):
            rest = [line for line in lines[end + 1:end + 4] if line.strip()]
            if rest and rest[0].lstrip().startswith(">"):
                return end
    return None


def _find_reply_move(parsed: ParsedMail, body: str, is_command: Callable[[str], bool]) -> bool:
    """A reply to a move-by-reply address: its move is the first line of the body if
    that is one word (not a command), else the Subject if that is one word.  Quoted
    text and the client's line above it ("On ..., X wrote:") are passed over, so a
    reply written below the quote is read too."""
    lines = body.split("\n")
    skip_to = -1
    for i, line in enumerate(lines):
        if i <= skip_to:
            continue
        words = line.split()
        if not words or line.lstrip().startswith(">"):
            continue
        end = _attribution_end(lines, i)
        if end is not None:
            skip_to = end
            continue
        if len(words) == 1 and not is_command(words[0]) and line.rstrip() not in ("--", "-- "):
            parsed.reply_move = words[0]
            parsed.comment = comment_text(lines[i + 1:])
            return True
        break
    subject = parsed.subject.split()
    if len(subject) == 1 and not is_command(subject[0]):
        parsed.reply_move = subject[0]
        parsed.comment = comment_text(lines)
        return True
    return False


def prescan(raw: bytes) -> str:
    """A Refusal if the mail is over a limit that parsing it would need, else ""."""
    end = _HEADER_END.search(raw, 0, MAX_HEADER_BYTES + 4)
    head = raw[: end.start()] if end else raw[: MAX_HEADER_BYTES + 1]
    if len(head) > MAX_HEADER_BYTES or (end is None and len(raw) > MAX_HEADER_BYTES):
        return Refusal.HEADERS
    if sum(1 for _ in islice(_FIELD_START.finditer(head), MAX_HEADER_FIELDS + 1)) \
            > MAX_HEADER_FIELDS:
        return Refusal.HEADERS
    if sum(1 for _ in islice(_CONTAINER.finditer(raw), MAX_CONTAINERS + 1)) > MAX_CONTAINERS:
        return Refusal.NESTING
    return ""


def _parse(raw: bytes, *, headers_only: bool) -> Message:
    parser = BytesHeaderParser if headers_only else BytesParser
    try:
        return parser(policy=policy.compat32).parsebytes(raw)
    except Exception:  # RecursionError, or a parser bug: keep what the headers say
        return BytesHeaderParser(policy=policy.compat32).parsebytes(
            raw[:MAX_HEADER_BYTES].split(b"\n\n", 1)[0])


def _clean_subject(subject: str) -> str:
    return _PREFIX.sub("", subject).strip()


def _silent_reason(msg: Message, envelope_from: str, from_addr: str, reply_to: str,
                   own: tuple[str, ...]) -> str:
    env = envelope_from.strip().lower()  # "<>": the null sender; "": not known
    if env == "<>" or env.startswith("mailer-daemon") or from_addr.startswith("mailer-daemon"):
        return "bounce"
    if from_addr.startswith("postmaster@") and header(msg, "Content-Type").lower().startswith(
        "multipart/report"
    ):
        return "bounce"
    auto = header(msg, "Auto-Submitted").lower()[:40]
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}"
    precedence = header(msg, "Precedence").lower()
    if precedence in ("bulk", "junk", "list"):
        return f"Precedence: {precedence}"
    if from_addr in own or reply_to in own or header(msg, LOOP_HEADER):
        return "our own mail came back"
    if not reply_to:
        return "no sender"
    return ""


# -- body text ----------------------------------------------------------------------
def _part_text(part: Message) -> str:
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        return ""
    if not isinstance(payload, bytes):
        return ""
    try:
        charset = part.get_content_charset() or "utf-8"
        text = payload.decode(charset, "replace")
    except (LookupError, ValueError):
        text = payload.decode("utf-8", "replace")
    params = {str(k).lower(): str(v).lower() for k, v in part.get_params(failobj=[]) or []}
    if params.get("format") == "flowed":
        text = _unflow(text, params.get("delsp") == "yes")
    return clean_text(text)


def _unflow(text: str, delsp: bool) -> str:
    out: list[str] = []
    buf = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith(" "):
            line = line[1:]  # space-stuffing
        if line.endswith(" ") and line != "-- ":
            buf += line[:-1] if delsp else line
        else:
            out.append(buf + line)
            buf = ""
    if buf:
        out.append(buf)
    return "\n".join(out)


def body_text(parts: list[Message]) -> str:
    """The first text/plain part, else the first text/html part as text."""
    html: Message | None = None
    for part in parts:
        try:
            if part.is_multipart():
                continue
            disposition = (part.get_content_disposition() or "").lower()
            ctype = part.get_content_type()
        except Exception:
            continue
        if disposition == "attachment":
            continue
        if ctype == "text/plain":
            return _part_text(part)
        if ctype == "text/html" and html is None:
            html = part
    return clean_text(html_to_text(_part_text(html))) if html is not None else ""


# -- commands -----------------------------------------------------------------------
def _find_commands(parsed: ParsedMail, body: str, is_command: Callable[[str], bool]) -> None:
    lines = body.split("\n")
    if parsed.subject.lower() == "multiple":
        parsed.source = "multiple"
        for line in lines:
            if line.rstrip() in ("--", "-- ") or (not line.strip() and parsed.commands):
                break
            if line.strip() and not line.lstrip().startswith(">"):
                parsed.commands.append(" ".join(line.split()))
                if len(parsed.commands) >= MAX_COMMAND_LINES:
                    break
        return
    board_subject = _BOARD_SUBJECT.fullmatch(parsed.subject)
    if board_subject is not None and is_command(board_subject.group(1)) \
            and int(board_subject.group(2)) < 2**31:
        parsed.board_reply = (board_subject.group(1).lower(), int(board_subject.group(2)))
    elif parsed.subject and is_command(parsed.subject):
        parsed.source = "subject"
        parsed.commands = [parsed.subject]
        parsed.comment = comment_text(lines)
        return
    for i, line in enumerate(lines):
        if line.rstrip() in ("--", "-- "):
            break
        if line.strip() and not line.lstrip().startswith(">"):
            if is_command(line.strip()):
                parsed.source = "body"
                parsed.commands = [" ".join(line.split())]
                parsed.comment = comment_text(lines[i + 1 :])
                return
            break
    if parsed.subject and parsed.board_reply is None:
        # no command anywhere: report the Subject as the unknown command
        parsed.source = "subject"
        parsed.commands = [parsed.subject]


def comment_text(lines: list[str]) -> str:
    """The player's own words: no quoted text, no signature, trimmed."""
    out: list[str] = []
    size = 0
    for line in lines:
        if line.rstrip() in ("--", "-- "):
            break
        stripped = line.strip()
        if stripped.startswith(">"):
            continue
        if len(stripped) <= _QUOTE_INTRO_MAX and _QUOTE_INTRO.match(stripped):
            break
        out.append(line.rstrip())
        size += len(line)
        if size > MAX_COMMENT:
            break
    text = "\n".join(out).strip("\n")
    return text[:MAX_COMMENT]
