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
from email.message import Message
from email.parser import BytesHeaderParser, BytesParser
from email.policy import Compat32, Policy, compat32
from itertools import islice

from pbmserv.bounces.reading import MAX_READ as MAX_BOUNCE_READ
from pbmserv.bounces.reading import BounceReport, read_bounce
from pbmserv.i18n import language_tag
from pbmserv.mail.addresses import (
    BOUNCE_PREFIX,
    UNSUBSCRIBE_PREFIX,
    address_key,
    marked_tag,
    tag_of,
    without_tag_marks,
)
from pbmserv.mail.headers import MAX_HEADER_VALUE, address_of, header
from pbmserv.mail.html import html_to_text
from pbmserv.mail.mailboxes import first_mailbox, raw_header
from pbmserv.mail.quotes import own_words, quote_intro, without_quoted_html
from pbmserv.mail.text import clean_text, payload_text

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

#: what mail programs put before a Subject they reply to or forward, in the languages
#: they speak (the word, any case; a count "[2]" "(2)" "^2" may follow; the colon may be
#: a full-width one and have a blank before it, as French writes it)
_PREFIX_WORDS = (
    "re", "fwd", "fw", "aw", "wg", "sv", "vs", "vb", "vl", "tr", "rv", "antw", "doorst",
    "réf", "ref", "rép", "rif", "r", "i", "enc", "res", "odp", "pd", "ynt", "ilt", "vá",
    "továbbítás", "atb", "pārs", "ats", "odg", "απ", "σχετ", "πρθ", "ответ", "отв",
    "пересл", "回复", "回覆", "答复", "答覆", "转发", "轉寄", "轉發", "返信", "転送", "답장",
    "회신", "전달", "השב", "הועבר", "رد", "توجيه", "پاسخ",
)
#: any run of those words, and of the tags a list or a mail gateway puts first
#: ("[EXT]", "[teamname]", "[SPAM]")
_PREFIX = re.compile(
    r"^(?:\s*(?:\[[^\[\]]{1,40}\]|(?:" + "|".join(sorted(_PREFIX_WORDS, key=len, reverse=True))
    + r")\.?\s?(?:\[\d{1,6}\]|\(\d{1,6}\)|\^\d{1,6})?\s?[:\uff1a]))+\s*", re.I)
# the Subject of one of our board mails (after any Re:): not a command, even though
# "board" is also a verb ("<game> board 101 uid pw move" has three more words)
#: the most of a body's first line kept to say what was not understood
MAX_FIRST_LINE = 200
_BOARD_SUBJECT = re.compile(
    r"(?:(?:new|nag:) )?(\S+(?: \S+)?) board ([0-9]{1,10}):?"
    r"((?: \S+){0,2}| chat from \S+| how to move)", re.I)
_ADDRESS_LIKE = re.compile(r"[^\s<>(),;:\"\[\]]{1,200}@[^\s<>(),;:\"\[\]]{1,200}")
# a line ends as the mail parser (email.feedparser) ends it: CRLF, LF or a bare CR;
# a line begins at the start of the mail or after any of them
_EOL = rb"(?:\r\n|\r(?!\n)|\n)"
_BOL = rb"(?:^|(?<=[\r\n]))"
# a Content-Type line of a multipart or message part, in the mail lowered and with a
# line end put first: the literal first searched for, then whether a line begins
# there (10 MB in 15 ms; with the line's start matched first, 230)
_CONTAINER = re.compile(rb"content-type:(?<=[\r\n]content-type:)[ \t]*(?:" + _EOL
                        + rb"[ \t]+)*(?:multipart|message)/")
#: a byte-order mark some Windows tools write first
BOM = b"\xef\xbb\xbf"
_HEADER_END = re.compile(_EOL + _EOL)
_FIELD_START = re.compile(_BOL + rb"[^ \t\r\n]")


class Refusal:
    """Why a mail was not read; each has its own reply (templates/refused.txt.j2)."""

    NESTING = "nesting"
    PARTS = "parts"
    HEADERS = "headers"
    #: larger than ``max_size`` (only the IMAP intake stores such a mail, its header
    #: alone, to answer it)
    SIZE = "size"


@dataclass
class ParsedMail:
    message_id: str | None
    from_addr: str
    #: where answers go: the From's address (or the envelope sender's), or the
    #: Reply-To's when it is the same mailbox (another spelling or +tag of it)
    reply_to: str
    subject: str
    #: command lines in order
    commands: list[str] = field(default_factory=list)
    #: where the command came from: "subject", "body", "multiple" or "" (nothing found)
    source: str = ""
    comment: str = ""
    #: why the mail must not be answered ("" when it may be)
    silent_reason: str = ""
    #: the mark of the mailing list the mail came through ("List-Id", "Precedence:
    #: list"...), "" for none: it is never answered (``silent_reason`` says so), but
    #: what it proves to be an account's is carried out (pbmserv.processing.mail)
    via_list: str = ""
    #: why the mail was not read (a Refusal), "" when it was
    refusal: str = ""
    references: str = ""
    #: (game, board number) when the Subject is that of a board mail, left as it was
    board_reply: tuple[str, int] | None = None
    #: of which of that board's mails: "chat" (a chat message), "" (a board mail)
    board_reply_kind: str = ""
    #: the first line of the body, the writer's own, when it was no command (nor the
    #: move alone of a reply to a reply address)
    first_line: str = ""
    #: the TAG of the ``pbmserv+TAG@host`` address the mail was written to, if any
    reply_tag: str | None = None
    #: the bare move of a reply to such an address (its first line, or its Subject)
    reply_move: str | None = None
    #: a bounce (to the VERP address, or by its sender and form): what it says
    bounce: BounceReport | None = None
    #: the Reply-To's address when it is another mailbox than the From's: answers go
    #: there only if the mail proves it is its account's (pbmserv.processing.mail)
    named_reply_to: str = ""
    #: the shipped language its Content-Language names (pbmserv.i18n), if one
    language: str | None = None
    #: signs that a program wrote the mail, beyond the marks RFC 3834 asks for (a
    #: noreply sender, an out-of-office Subject...): "" when there are none
    robot: str = ""
    #: what our own mail server said against the mail: marked as spam, or failing
    #: SPF/DKIM/DMARC in the Authentication-Results of a trusted authserv-id
    suspect: str = ""

    @property
    def unsubscribe_tag(self) -> str | None:
        """The tag of the unsubscribe address the mail was written to, if one."""
        tag = self.reply_tag or ""
        return tag if tag.startswith(UNSUBSCRIBE_PREFIX) else None


def _any_text(line: str) -> bool:
    return bool(line.strip())


def parse_message(
    raw: bytes,
    own_addresses: tuple[str, ...] = (),
    envelope_from: str = "",
    is_command: Callable[[str], bool] = _any_text,
    trusted_authserv: tuple[str, ...] = (),
) -> ParsedMail:
    """Parse raw bytes.  ``is_command(line)`` tells a command line from prose;
    ``trusted_authserv``: the authserv-ids (lower case) whose Authentication-Results
    are our own mail server's."""
    if raw.startswith(BOM):  # a byte-order mark some Windows tools write first
        raw = raw[len(BOM):]
    # every mail is bounded alike before anything reads it, a bounce as much as a
    # person's: the nesting and the header by prescan, the parts as they are parsed
    msg, refusal = parse_bounded(raw)
    # addresses come from the raw headers: an encoded word never supplies one
    from_addr = first_mailbox(raw_header(msg, "From")) or address_of(envelope_from)
    named = first_mailbox(raw_header(msg, "Reply-To"))
    reply_to = named if named and address_key(named) == address_key(from_addr) else from_addr
    message_id = header(msg, "Message-ID")[:900] or None
    refs = " ".join(x for x in (header(msg, "References"), message_id or "") if x).strip()
    parsed = ParsedMail(
        message_id=message_id,
        from_addr=from_addr,
        reply_to=reply_to,
        subject=_clean_subject(header(msg, "Subject")),
        references=refs[-900:],
        named_reply_to=named if named and named != reply_to else "",
        language=language_tag(header(msg, "Content-Language")[:200]),
    )
    parsed.silent_reason, parsed.via_list = _silent_reason(
        msg, envelope_from, from_addr, reply_to, own_addresses, named)
    parsed.reply_tag = _reply_tag(msg, own_addresses)
    tag = parsed.reply_tag or ""
    if parsed.silent_reason == "bounce" or tag.startswith(BOUNCE_PREFIX) \
            or _is_delivery_report(msg):
        # stored and read, never answered (pbmserv.bounces.handling); one over a
        # limit is not read (and counts for nothing)
        parsed.refusal = refusal
        if refusal:
            parsed.bounce = BounceReport()
        else:  # its first MAX_READ bytes: a large returned mail is not read through
            parsed.bounce = read_bounce(
                msg if len(raw) <= MAX_BOUNCE_READ else parse_bounded(raw[:MAX_BOUNCE_READ])[0])
        return parsed
    if (parsed.silent_reason and not parsed.via_list) or tag.startswith(UNSUBSCRIBE_PREFIX):
        return parsed
    parsed.robot = robot_signs(msg, envelope_from)
    parsed.suspect = suspect_marks(msg, trusted_authserv)
    parts: list[Message] = []
    if not refusal:
        try:
            parts = list(islice(msg.walk(), MAX_PARTS + 1))
        except RecursionError:  # pragma: no cover - prescan bounds the nesting
            refusal = Refusal.NESTING
        else:  # pragma: no branch - parse_bounded stops at the limit
            if len(parts) > MAX_PARTS:  # pragma: no cover
                refusal = Refusal.PARTS
    if refusal:
        parsed.refusal = refusal
        return parsed
    body = body_text(parts)
    if parsed.reply_tag is None or not _find_reply_move(parsed, body, is_command):
        _find_commands(parsed, body, is_command)
    return parsed


_RECIPIENT_HEADERS = ("Delivered-To", "X-Original-To", "To", "Cc")


def _reply_tag(msg: Message, own: tuple[str, ...]) -> str | None:
    """The tag of the first ``pbmserv+TAG@host`` address among the recipients; else,
    where the mailbox has no sub-addresses (the setting ``subaddressing``), the
    ``[TAG]`` in the name of a recipient that is ours ("pbmserv [TAG]"
    <pbmserv@host>, as the client copied it from the Reply-To), else in the Subject."""
    for name in _RECIPIENT_HEADERS:
        for value in (msg.get_all(name) or [])[:10]:
            for candidate in _ADDRESS_LIKE.findall(str(value)[:MAX_HEADER_VALUE]):
                tag = tag_of(candidate, own)
                if tag:
                    return tag
    for name in ("To", "Cc"):
        for value in (msg.get_all(name) or [])[:10]:
            text = str(value)[:MAX_HEADER_VALUE]
            ours = any(tag_of(a, own) is not None for a in _ADDRESS_LIKE.findall(text))
            tag = marked_tag(text) if ours else None
            if tag:
                return tag
    return marked_tag(header(msg, "Subject"))


def _attribution_end(lines: list[str], i: int) -> int | None:
    """If an attribution starts at line ``i`` (pbmserv.mail.quotes: wrapped over up to
    three lines, in any of the languages clients write) and quoted text follows it,
    the index of its last line."""
    # a wrapped attribution's first line is never a move alone
    size = quote_intro(lines, i, wrapped=_move_alone(lines[i]) is None)
    return i + size - 1 if size else None


#: a move with its number written apart: "a3-a4 #11", "a3-a4 # 11"
_NUMBER_APART = re.compile(r"([^\s#]+)\s+#\s*([0-9]{1,10})")


def _move_alone(line: str) -> str | None:
    """The move a line holds alone: its one word, or a move and its ``#n`` written
    apart (given as "a3-a4#11"); None for any other line."""
    words = line.split()
    if len(words) == 1:
        return words[0]
    apart = _NUMBER_APART.fullmatch(line.strip()) if 1 < len(words) <= 3 else None
    return None if apart is None else f"{apart.group(1)}#{apart.group(2)}"


def _find_reply_move(parsed: ParsedMail, body: str, is_command: Callable[[str], bool]) -> bool:
    """A reply to a move-by-reply address: its move is the first line of the body if
    that is a move alone (one word, not a command; its ``#n`` may stand apart), else the
    Subject if that is one.  Quoted text and the client's line above it ("On ..., X
    wrote:") are passed over, so a reply written below the quote is read too."""
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
        move = _move_alone(line)
        if move is not None and not is_command(move) and line.rstrip() not in ("--", "-- "):
            parsed.reply_move = move
            parsed.comment = comment_text(lines[i + 1:])
            return True
        break
    move = _move_alone(parsed.subject)
    if move is not None and not is_command(move):
        parsed.reply_move = move
        parsed.comment = comment_text(lines)
        return True
    return False


def prescan(raw: bytes) -> str:
    """A Refusal if the mail is over a limit that parsing it would need, else "".
    Lines are counted as the parser counts them: ended by CRLF, LF or a bare CR."""
    end = _HEADER_END.search(raw, 0, MAX_HEADER_BYTES + 4)
    head = raw[: end.start()] if end else raw[: MAX_HEADER_BYTES + 1]
    if len(head) > MAX_HEADER_BYTES or (end is None and len(raw) > MAX_HEADER_BYTES):
        return Refusal.HEADERS
    if sum(1 for _ in islice(_FIELD_START.finditer(head), MAX_HEADER_FIELDS + 1)) \
            > MAX_HEADER_FIELDS:
        return Refusal.HEADERS
    if len(container_lines(raw, MAX_CONTAINERS + 1)) > MAX_CONTAINERS:
        return Refusal.NESTING
    return ""


def container_lines(raw: bytes, most: int) -> list[int]:
    """Where the first ``most`` Content-Type fields of multipart or message parts
    end (wherever they are: a cheap bound on how deep the parts nest)."""
    lowered = b"\n" + raw.lower()
    return [m.end() - 1 for m in islice(_CONTAINER.finditer(lowered), most)]


def header_end(raw: bytes) -> int | None:
    """Where the mail's header ends, its blank line with it, if within the first
    MAX_HEADER_BYTES (and a little)."""
    end = _HEADER_END.search(raw, 0, MAX_HEADER_BYTES + 4)
    return end.end() if end else None


class _TooManyParts(Exception):
    """The parser made more parts than a mail may hold: it stops there."""


def _part_counter() -> Compat32:
    """The parser's rules, with a factory of its parts that stops it at the part after
    MAX_PARTS (the mail itself is one of them)."""
    made = 0

    def new_part(policy: Policy[Message] = compat32) -> Message:
        nonlocal made
        made += 1
        if made > MAX_PARTS:
            raise _TooManyParts
        return Message(policy=policy)

    return compat32.clone(message_factory=new_part)


def parse_bounded(raw: bytes) -> tuple[Message, str]:
    """The mail parsed, and a Refusal ("" if none): a mail over the nesting or header
    limits (prescan) is parsed for its header alone, and the parser stops at the part
    after MAX_PARTS, so no mail costs more than its limits allow."""
    refusal = prescan(raw)
    if refusal:
        return _headers(raw), refusal
    try:
        return BytesParser(policy=_part_counter()).parsebytes(raw), ""
    except _TooManyParts:
        return _headers(raw), Refusal.PARTS
    except Exception:  # RecursionError, or a parser bug: keep what the headers say
        return _headers(raw), ""


def _headers(raw: bytes) -> Message:
    """The mail's header alone, its body never read (it is not even split into lines)."""
    end = _HEADER_END.search(raw, 0, MAX_HEADER_BYTES + 4)
    head = raw[:end.end()] if end else raw[:MAX_HEADER_BYTES]
    try:
        return BytesHeaderParser(policy=compat32).parsebytes(head)
    except Exception:  # pragma: no cover - a parser bug: a mail with no header
        return BytesHeaderParser(policy=compat32).parsebytes(b"")


def _clean_subject(subject: str) -> str:
    return _PREFIX.sub("", without_tag_marks(subject)).strip()


#: Precedence values of mail that no robot should answer (RFC 3834 2; auto_reply is
#: what many autoresponders set); "list" is a list's (see _LIST_HEADERS)
_SILENT_PRECEDENCE = ("bulk", "junk", "auto_reply")
#: headers whose mere presence marks mail from an autoresponder
_SILENT_HEADERS = ("X-Autoreply", "X-Autorespond")
#: headers a mailing list adds to the mail it passes on (RFC 2369, RFC 2919)
_LIST_HEADERS = ("List-Id", "List-Post", "List-Unsubscribe")
#: the content types of delivery, read and feedback reports (RFC 3462, 3464, 3798, 5965)
_REPORTS = ("multipart/report", "message/delivery-status", "message/disposition-notification",
            "message/feedback-report")


def _silent_reason(msg: Message, envelope_from: str, from_addr: str, reply_to: str,
                   own: tuple[str, ...], named: str = "") -> tuple[str, str]:
    """Why the mail must get no reply (RFC 3834: a robot answers no robot, no list, no
    report), whoever its envelope sender is, "" when it may get one; and the mark of
    the mailing list it came through, "" for none.  A list's mail is the one kind
    whose commands may still be carried out (a person wrote it; the list passed it
    on): whatever else marks it (an autoresponder's, a report's, our own mail come
    back) wins."""
    env = envelope_from.strip().lower()  # "<>": the null sender; "": not known
    if env == "<>" or env.startswith("mailer-daemon") or from_addr.startswith("mailer-daemon"):
        return "bounce", ""
    report = _report_type(msg)
    if report:
        return f"a delivery or read report ({report})", ""
    auto = header(msg, "Auto-Submitted").lower()[:40]
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}", ""
    try:
        present = {str(k).lower() for k, _ in islice(msg.raw_items(), MAX_HEADER_FIELDS)}
    except Exception:
        present = set()
    precedence = header(msg, "Precedence").lower()
    listed = next((name for name in _LIST_HEADERS if name.lower() in present), "")
    if not listed and precedence == "list":
        listed = "Precedence: list"
    if precedence in _SILENT_PRECEDENCE and not listed:
        return f"Precedence: {precedence}", ""
    for name in _SILENT_HEADERS:
        if name.lower() in present:
            return f"mail from an autoresponder ({name})", ""
    if from_addr in own or reply_to in own or named in own or header(msg, LOOP_HEADER):
        return "our own mail came back", ""
    if not reply_to:
        return "no sender", ""
    if listed:
        return f"mail through a mailing list ({listed})", listed
    return "", ""


#: a sender that is a program, in its address or display name: noreply, no-reply,
#: do-not-reply, mailer-daemon (any case; "-", "_", "." or a blank between the words)
_ROBOT_SENDER = re.compile(
    r"(?<![a-z0-9])(?:no[-_. ]?reply|do[-_. ]?not[-_. ]?reply|mailer[-_. ]?daemon)(?![a-z])",
    re.I)
#: headers that only programs write (Exchange's, on the mail its rules and agents make)
_ROBOT_HEADERS = ("X-Auto-Response-Suppress", "X-MS-Exchange-Generated-Message-Source")
#: the Subject of an automatic answer: an out-of-office or auto-reply (in the words of
#: the common mail programs), a report of undelivered mail, a helpdesk's acknowledgement
_ROBOT_SUBJECT = re.compile(
    r"\[\s*auto(?:matic|mated)?[-_ ]?(?:generated|reply|response)\s*\]"
    r"|^\s*(?:(?:re|aw|sv|fw|fwd)\s*:\s*)?(?:automatic reply|auto[-_ ]?reply|"
    r"auto[-_ ]?response|automated (?:reply|response)|out of (?:the )?office|"
    r"abwesenheitsnotiz|automatische antwort|r[ée]ponse automatique|"
    r"respuesta autom[áa]tica|risposta automatica|resposta autom[áa]tica|"
    r"automatisch antwoord|autosvar|automatisk svar|automaattinen vastaus|"
    r"odpowied[źz] automatyczna|undeliverable|undelivered mail|"
    r"delivery status notification|mail delivery failed|returned mail)\b"
    r"|(?:\[|\(|\b)(?:ticket|case|request|incident|inquiry|enquiry)\s*"
    r"(?:#|no\.|nr\.|number|id)\s*:?\s*[a-z]{0,5}[-_]?[0-9]{3,}"
    r"|\b(?:we(?:'ve| have)? received your (?:e-?mail|message|request|inquiry|enquiry)"
    r"|(?:request|ticket|case|inquiry|enquiry) (?:has been |was )?"
    r"(?:received|created|opened|logged)|thank(?:s| you) for contacting)\b",
    re.I)
#: the envelope sender (or Return-Path, Errors-To) of a bulk mailer's or a list's
#: mail: bounces@, bounce-<id>@, <id>@bounce.<domain> (VERP addresses), a list's
#: LIST-request@ and LIST-bounces@
_BULK_RETURN = re.compile(r"^bounces?(?:@|[-+_.=])|@bounces?[.-]|-(?:request|bounces)(?:@|\+)",
                          re.I)


def robot_signs(msg: Message, envelope_from: str) -> str:
    """The signs that a program wrote the mail, where it set none of RFC 3834's marks
    ("" for none): a noreply / no-reply / mailer-daemon sender or display name,
    Exchange's automatic-mail headers, an automatic Subject, a bulk mailer's envelope."""
    sender = header(msg, "From")
    if _ROBOT_SENDER.search(sender) or _ROBOT_SENDER.search(header(msg, "Sender")):
        return f"a program's sender ({sender[:80]})"
    try:
        present = {str(k).lower() for k, _ in islice(msg.raw_items(), MAX_HEADER_FIELDS)}
    except Exception:
        present = set()
    for name in _ROBOT_HEADERS:
        if name.lower() in present:
            return f"a program's mail ({name})"
    subject = header(msg, "Subject")
    if _ROBOT_SUBJECT.search(subject):
        return f"an automatic Subject ({subject[:80]})"
    for value in (envelope_from, header(msg, "Return-Path"), header(msg, "Errors-To"),
                  header(msg, "Sender"), sender):
        address = address_of(value)
        if address and _BULK_RETURN.search(address):
            return f"a bulk mailer's or a list's address ({address})"
    return ""


#: the headers spam filters mark spam with: SpamAssassin's X-Spam-Flag (YES) and
#: X-Spam-Status (Yes, score=...), Rspamd's X-Spam (Yes) and X-Spam-Status
_SPAM_HEADERS = ("X-Spam-Flag", "X-Spam-Status", "X-Spam")
#: a comment in a header (RFC 5322), nested at most this deep
_COMMENT = re.compile(r"\([^()]*\)")
_AUTH_RESULT = re.compile(r";\s*(spf|dkim|dmarc)\s*=\s*([a-z]+)", re.I)


def suspect_marks(msg: Message, trusted_authserv: tuple[str, ...]) -> str:
    """What the mail servers said against the mail ("" for nothing): a spam filter's
    mark (whoever wrote it: a mark can only cost its own mail an answer), or a failed
    SPF, DKIM or DMARC check in an Authentication-Results header whose authserv-id is
    one of ``trusted_authserv`` (our own server's; one from elsewhere may be forged,
    or be a forwarder's fair failure)."""
    for name in _SPAM_HEADERS:
        for value in (msg.get_all(name) or [])[:10]:
            if str(value)[:20].strip().lower().startswith("yes"):
                return f"marked as spam ({name}: {str(value)[:3]})"
    if not trusted_authserv:
        return ""
    results: dict[str, set[str]] = {}
    for value in (msg.get_all("Authentication-Results") or [])[:20]:
        text = str(value)[:MAX_HEADER_VALUE]
        for _ in range(3):
            text = _COMMENT.sub(" ", text)
        authserv, _, rest = text.partition(";")
        words = authserv.split()
        if not words or words[0].lower().rstrip(".") not in trusted_authserv:
            continue
        for method, result in _AUTH_RESULT.findall(";" + rest):
            results.setdefault(method.lower(), set()).add(result.lower())
    dmarc, spf, dkim = (results.get(m, set()) for m in ("dmarc", "spf", "dkim"))
    if "pass" in dmarc:
        return ""
    if "fail" in dmarc:
        return "failed DMARC (Authentication-Results: dmarc=fail)"
    if "fail" in spf:
        return "failed SPF (Authentication-Results: spf=fail)"
    if "fail" in dkim and "pass" not in dkim:
        return "failed DKIM (Authentication-Results: dkim=fail)"
    return ""


def _content_type(part: Message) -> str:
    return header(part, "Content-Type").partition(";")[0].strip().lower()


def _is_delivery_report(msg: Message) -> bool:
    """A delivery status notification (RFC 3464), whatever its envelope sender."""
    kind = _report_type(msg)
    return kind == "message/delivery-status" or (
        kind == "multipart/report" and "delivery-status" in header(msg, "Content-Type").lower())


def _report_type(msg: Message) -> str:
    """The report type of a report, "" for any other mail: the mail's own type, or
    (where a mail program wrapped the report) that of one of its top-level parts."""
    kind = _content_type(msg)
    if kind in _REPORTS:
        return kind
    if kind.startswith("multipart/") and msg.is_multipart():
        payload = msg.get_payload()
        for part in payload[:MAX_PARTS] if isinstance(payload, list) else ():
            if isinstance(part, Message) and _content_type(part) in _REPORTS:
                return _content_type(part)
    return ""


# -- body text ----------------------------------------------------------------------
def _part_text(part: Message) -> str:
    text = payload_text(part)
    params = {str(k).lower(): str(v).lower() for k, v in part.get_params(failobj=[]) or []}
    if params.get("format") == "flowed":
        text = _unflow(text, params.get("delsp") == "yes")
    return clean_text(text)


def _unflow(text: str, delsp: bool) -> str:
    """format=flowed text as lines (RFC 3676): a line ending in a space goes on in the
    next line of the same quote depth."""
    out: list[str] = []
    buf = ""
    depth = -1
    for line in text.replace("\r\n", "\n").split("\n"):
        level = len(line) - len(line.lstrip(">"))
        prefix, line = line[:level], line[level:]
        if line.startswith(" "):
            line = line[1:]  # space-stuffing
        if buf and level != depth:  # a quote begins or ends: the flowed line ends
            out.append(buf)
            buf = ""
        if not buf:
            buf = f"{prefix} " if prefix else ""
        depth = level
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
    if html is None:
        return ""
    return clean_text(html_to_text(without_quoted_html(_part_text(html))))


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
    # a game's title may be two words ("Ex nihilo"); its name is one ("exnihilo")
    game = board_subject.group(1).replace(" ", "").lower() if board_subject else ""
    if board_subject is not None and is_command(game) and int(board_subject.group(2)) < 2**31:
        parsed.board_reply = (game, int(board_subject.group(2)))
        if board_subject.group(3).lower().startswith(" chat from "):
            parsed.board_reply_kind = "chat"
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
            if quote_intro(lines, i) == 0:  # not the client's "On ..., X wrote:"
                parsed.first_line = line.strip()[:MAX_FIRST_LINE]
            break
    if parsed.subject and parsed.board_reply is None:
        # no command anywhere: report the Subject as the unknown command
        parsed.source = "subject"
        parsed.commands = [parsed.subject]


def comment_text(lines: list[str]) -> str:
    """The player's own words: no quoted text, attribution, header block or signature
    (pbmserv.mail.quotes), trimmed."""
    return "\n".join(own_words(lines, MAX_COMMENT)).strip("\n")[:MAX_COMMENT]
