"""Reading a stored mail: who sent it, whether to answer, and its command lines.

Nothing here raises on bad input: any mail yields a ParsedMail, possibly with no
commands, so intake never loses or chokes on a message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr
from html.parser import HTMLParser

MAX_COMMAND_LINES = 50
#: set on every mail the server sends; a mail carrying it is our own, come back
LOOP_HEADER = "X-Pbmserv-Loop"
_PREFIX = re.compile(r"^\s*(?:(?:re|fwd?|aw|sv|wg|tr|antw|vs)\s*(?:\[\d+\])?\s*:\s*)+", re.I)
_QUOTE_INTRO = re.compile(r"^(on .* wrote:|.* schrieb .*:|-+\s*original message\s*-+)$", re.I)


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
    references: str = ""


def _any_text(line: str) -> bool:
    return bool(line.strip())


def parse_message(
    raw: bytes,
    own_addresses: tuple[str, ...] = (),
    envelope_from: str = "",
    is_command: Callable[[str], bool] = _any_text,
) -> ParsedMail:
    """Parse raw bytes.  ``is_command(line)`` tells a command line from prose."""
    msg = _parse(raw)
    from_addr = address_of(_header(msg, "From")) or envelope_from.lower()
    reply_to = address_of(_header(msg, "Reply-To")) or from_addr
    message_id = _header(msg, "Message-ID").strip() or None
    refs = " ".join(x for x in (_header(msg, "References"), message_id or "") if x).strip()
    parsed = ParsedMail(
        message_id=message_id,
        from_addr=from_addr,
        reply_to=reply_to,
        subject=_clean_subject(_header(msg, "Subject")),
        references=refs[-900:],
    )
    parsed.silent_reason = _silent_reason(msg, envelope_from, from_addr, reply_to, own_addresses)
    body = body_text(msg)
    _find_commands(parsed, body, is_command)
    return parsed


def _parse(raw: bytes) -> Message:
    try:
        return BytesParser(policy=policy.default).parsebytes(raw)
    except Exception:  # pragma: no cover - the parser is lenient; belt and braces
        return BytesParser(policy=policy.compat32).parsebytes(raw)


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
        return "" if value is None else " ".join(str(value).split())
    except Exception:
        try:
            raw = msg.get_all(name, failobj=[])
            return " ".join(str(raw[0]).split()) if raw else ""
        except Exception:
            return ""


def address_of(value: str) -> str:
    if not value:
        return ""
    try:
        pairs = getaddresses([value])
        addr = pairs[0][1] if pairs else parseaddr(value)[1]
    except Exception:
        return ""
    return addr.strip().lower() if "@" in addr else ""


def _clean_subject(subject: str) -> str:
    return _PREFIX.sub("", subject).strip()


def _silent_reason(msg: Message, envelope_from: str, from_addr: str, reply_to: str,
                   own: tuple[str, ...]) -> str:
    env = envelope_from.strip().lower()  # "<>": the null sender; "": not known
    if env == "<>" or env.startswith("mailer-daemon") or from_addr.startswith("mailer-daemon"):
        return "bounce"
    if from_addr.startswith("postmaster@") and _header(msg, "Content-Type").lower().startswith(
        "multipart/report"
    ):
        return "bounce"
    auto = _header(msg, "Auto-Submitted").lower()
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}"
    precedence = _header(msg, "Precedence").lower()
    if precedence in ("bulk", "junk", "list"):
        return f"Precedence: {precedence}"
    if from_addr in own or reply_to in own or _header(msg, LOOP_HEADER):
        return "our own mail came back"
    if not reply_to:
        return "no sender"
    return ""


# -- body text ----------------------------------------------------------------------
class _HTMLText(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("br", "p", "div", "tr", "li", "blockquote"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        elif tag in ("p", "div"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _HTMLText()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        return re.sub(r"<[^>]*>", " ", html)
    return "".join(parts for parts in parser.parts)


def _part_text(part: Message) -> str:
    try:
        if isinstance(part, EmailMessage):
            text = part.get_content()
        else:
            payload = part.get_payload(decode=True)
            text = payload.decode(part.get_content_charset() or "utf-8", "replace") \
                if isinstance(payload, bytes) else str(payload or "")
    except Exception:
        payload = part.get_payload(decode=True)
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(text, str):
        return ""
    params = {k.lower(): v.lower() for k, v in part.get_params(failobj=[]) or []}
    if params.get("format") == "flowed":
        text = _unflow(text, params.get("delsp") == "yes")
    return text.replace("\r\n", "\n").replace("\r", "\n")


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


def body_text(msg: Message) -> str:
    """The first text/plain part, else the first text/html part as text."""
    html: Message | None = None
    try:
        parts = list(msg.walk())
    except Exception:
        return ""
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
    return html_to_text(_part_text(html)) if html is not None else ""


# -- commands -----------------------------------------------------------------------
def _find_commands(parsed: ParsedMail, body: str, is_command: Callable[[str], bool]) -> None:
    lines = body.split("\n")
    if parsed.subject.lower() == "multiple":
        parsed.source = "multiple"
        for line in lines:
            if line.rstrip() in ("--", "-- ") or (not line.strip() and parsed.commands):
                break
            if line.strip() and not line.lstrip().startswith(">"):
                parsed.commands.append(line.strip())
                if len(parsed.commands) >= MAX_COMMAND_LINES:
                    break
        return
    if parsed.subject and is_command(parsed.subject):
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
                parsed.commands = [line.strip()]
                parsed.comment = comment_text(lines[i + 1 :])
                return
            break
    if parsed.subject:  # no command anywhere: report the Subject as the unknown command
        parsed.source = "subject"
        parsed.commands = [parsed.subject]


def comment_text(lines: list[str]) -> str:
    """The player's own words: no quoted text, no signature, trimmed."""
    out: list[str] = []
    for line in lines:
        if line.rstrip() in ("--", "-- "):
            break
        stripped = line.strip()
        if stripped.startswith(">"):
            continue
        if _QUOTE_INTRO.match(stripped):
            break
        out.append(line.rstrip())
    text = "\n".join(out).strip("\n")
    return text[:4000]
