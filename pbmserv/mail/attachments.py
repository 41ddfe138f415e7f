"""What is stored of a large mail: its text and its shape, not its attachments.

A reply may come with attachments (an Outlook reply with two PDFs is 1.5 MB); the
server reads none of them, so a mail over ``KEEP_WHOLE`` bytes is stored in a
*stored form*: every header and every part as they were, but

* the body of each part that is not text (a PDF, an image, any type but text/*) left
  out, and a header ``X-Pbmserv-Dropped`` added to that part saying what was there
  ("812345 bytes of application/pdf (offer.pdf)");
* a text part kept up to ``MAX_TEXT_PART`` bytes, and the text parts together up to
  ``MAX_TEXT``, cut at a line's end (the note says how much went);
* in a mail that may be a bounce or a report (a null or MAILER-DAEMON envelope
  sender or From, a bounce address, a delivery report anywhere), every part is kept
  as text is: a bounce's reader looks at every part of its first 256 KB for the
  Message-ID of the mail that came back (pbmserv.bounces.reading);
* a multipart's preamble and epilogue (text no mail program shows) left out.

So the store does not grow with attachments (at most ``MAX_STORED`` bytes a mail),
the sender's quota counts what is stored, and every reading of the mail (the
commands, the comment, a bounce, ``pbmserv inbox show``) costs what its text costs.

The parts are found as the mail parser (``email.feedparser``) finds them: the same
header/body split, the same boundary lines (an enclosing one ends a part), digests'
parts taken for mails, a delivery report's header blocks each a part; each part's
header is read by the email package itself.  The parser's limits hold for the stored
form as for the mail (``pbmserv.mail.parse``): a mail that is over one of them is
stored as far as it takes to be over it again (its header alone if that is too
large, up to the 21st nested part, up to the first line of the 101st part), and
nothing after.  ``tests/test_attachments.py`` checks that the parser sees the same
parts in both, and finds the same commands, comment and refusal.

The work is bounded: the boundaries and blank lines are found by regular
expressions that search for a literal (the speed of ``bytes.find``), each part's
header is parsed once, and there are at most MAX_PARTS parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32

from pbmserv.mail.addresses import BOUNCE_PREFIX
from pbmserv.mail.parse import (
    BOM,
    MAX_CONTAINERS,
    MAX_HEADER_BYTES,
    MAX_PARTS,
    Refusal,
    container_lines,
    header_end,
    prescan,
)

#: a mail of at most this many bytes is stored as it came
KEEP_WHOLE = 64 * 1024
#: the most kept of one text part, and of all of them together
MAX_TEXT_PART = 256 * 1024
MAX_TEXT = 512 * 1024
#: the most stored of any mail, whatever its headers
MAX_STORED = 1024 * 1024
#: the header added to a part whose body was left out or cut
NOTE = b"X-Pbmserv-Dropped"

# a header line as the parser tells it (email.feedparser.headerRE): "From ", a
# name and a colon, or a continuation; then the rest of the line
_HEADER_LINES = re.compile(
    rb"(?:(?:From |[\x21-\x39\x3b-\x7e]*:|[ \t])[^\r\n]*(?:\r\n|\r|\n|\Z))*")
# where a blank line begins: a line end right after another (CR LF CR LF, LF LF,
# a bare CR then anything); the match's first character ends the line before it
_BLANK_AFTER = re.compile(rb"\n[\r\n]|\r\r")
_EOL = re.compile(rb"\r\n|\r|\n")
_FILENAME = re.compile(r"[^A-Za-z0-9._,+()\- ]")


@dataclass
class StoredForm:
    """What ``stored_form`` made of a mail."""

    raw: bytes
    #: the size of the mail as it came
    received: int
    #: what was left out, for the log: "" when the mail is stored whole
    dropped: str = ""
    #: the parts the parser makes of the mail (the mail itself one of them), as far
    #: as MAX_PARTS + 1; 0 when the mail was not looked into
    parts: int = 0


@dataclass
class _Walk:
    raw: bytes
    #: (start, end, replacement) of raw, in order
    edits: list[tuple[int, int, bytes]] = field(default_factory=list)
    parts: int = 0
    #: where the stored form ends (a limit was met there), if it does
    stop: int | None = None
    text_left: int = MAX_TEXT
    #: every part kept as text is (a mail that may be a bounce)
    keep_all: bool = False
    dropped_parts: int = 0
    dropped_bytes: int = 0
    #: the note in the mail's own header, if one (left out if it puts the header
    #: over the parser's limits)
    top_note: tuple[int, int, bytes] | None = None

    # -- one entity: a header, then a body ---------------------------------------
    def entity(self, start: int, end: int, default_type: str = "") -> None:
        if self.stop is not None:
            return
        self.parts += 1
        if self.parts > MAX_PARTS:  # the parser stops at this part's first line
            self.stop = _line_end(self.raw, start, end)
            return
        raw = self.raw
        match = _HEADER_LINES.match(raw, start, end)
        head_end = match.end() if match else start
        body = head_end
        if body < end and raw[body] in b"\r\n":  # the blank line that ends the header
            body = _line_end(raw, body, end)
        msg = _header_of(raw[start:min(head_end, start + MAX_HEADER_BYTES)], default_type)
        ctype = msg.get_content_type()
        if ctype == "message/delivery-status":
            self.report_blocks(body, end)
            self.keep_text(msg, start, head_end, body, end)
        elif msg.get_content_maintype() == "message":
            self.entity(body, end)
        elif msg.get_content_maintype() == "multipart" and msg.get_boundary() is not None:
            boundary = msg.get_boundary()
            assert boundary is not None
            self.multipart(body, end, boundary.encode("ascii", "surrogateescape"),
                           "message/rfc822" if ctype == "multipart/digest" else "")
        elif msg.get_content_maintype() == "text" or self.keep_all:
            self.keep_text(msg, start, head_end, body, end)
        else:
            self.drop(msg, start, head_end, body, end)

    def multipart(self, body: int, end: int, boundary: bytes, child_type: str) -> None:
        """The parts between the boundary lines; the preamble and epilogue left out."""
        sep = re.escape(b"--" + boundary)
        lines = re.compile(sep + rb"(?<=[\r\n]" + sep + rb")(--)?[ \t]*(?=\r\n|\r|\n|\Z)")
        found = lines.finditer(self.raw, body, end)
        line = next(found, None)
        if line is None:  # no boundary at all: the parser keeps no part either
            self.left_out(body, end)
            return
        self.left_out(body, line.start())  # the preamble
        while line is not None and not line.group(1) and self.stop is None:
            start = _line_end(self.raw, line.end(), end)
            line = next(found, None)
            while line is not None and line.start() == start:  # boundary after boundary
                start = _line_end(self.raw, line.end(), end)
                line = next(found, None)
            self.entity(start, line.start() if line is not None else end, child_type)
        if line is not None and self.stop is None:  # the closing line: then the epilogue
            self.left_out(_line_end(self.raw, line.end(), end), end)

    def report_blocks(self, body: int, end: int) -> None:
        """A delivery report's blocks of fields, each a part to the parser: the block
        to the next blank line, the blank line, and one more if anything follows."""
        at = body
        while self.stop is None:
            self.parts += 1
            if self.parts > MAX_PARTS:
                self.stop = _line_end(self.raw, at, end)
                return
            if at < end and self.raw[at] in b"\r\n":
                blank = at
            else:
                found = _BLANK_AFTER.search(self.raw, at, end)
                blank = found.start() + 1 if found else end
            at = _line_end(self.raw, blank, end)
            if at >= end:
                return

    # -- bodies --------------------------------------------------------------------
    def keep_text(self, msg: Message, start: int, head_end: int, body: int,
                  end: int) -> None:
        size = end - body
        room = min(MAX_TEXT_PART, self.text_left)
        if size <= room:
            self.text_left -= size
            return
        cut = body + room
        last = max(self.raw.rfind(b"\n", body, cut), self.raw.rfind(b"\r", body, cut))
        cut = _line_end(self.raw, last, end) if last >= 0 else body
        self.text_left -= cut - body
        self.note(start, head_end, f"{end - cut} of {size} bytes of {_what(msg)}")
        self.edits.append((cut, end, b""))
        self.dropped_bytes += end - cut

    def drop(self, msg: Message, start: int, head_end: int, body: int, end: int) -> None:
        if body >= end:
            return
        self.note(start, head_end, f"{end - body} bytes of {_what(msg)}")
        self.edits.append((body, end, b""))
        self.dropped_parts += 1
        self.dropped_bytes += end - body

    def left_out(self, start: int, end: int) -> None:
        """Text no one reads (a preamble, an epilogue): left out without a note."""
        if start < end:
            self.edits.append((start, end, b""))
            self.dropped_bytes += end - start

    def note(self, start: int, head_end: int, what: str) -> None:
        eol = _EOL.search(self.raw, max(start, head_end - 2), head_end)
        line = NOTE + b": " + what.encode("ascii", "replace") + b" not stored" + (
            eol.group(0) if eol else b"\r\n")
        self.edits.append((head_end, head_end, line))
        if start == 0:
            self.top_note = self.edits[-1]

    def result(self, length: int) -> bytes:
        out: list[bytes] = []
        at = 0
        for start, end, replacement in self.edits:
            if start >= length:
                break
            out += [self.raw[at:start], replacement]
            at = min(end, length)
        out.append(self.raw[at:length])
        return b"".join(out)


def _line_end(raw: bytes, at: int, end: int) -> int:
    """Where the line that starts (or goes on) at ``at`` ends, its line end with it."""
    found = _EOL.search(raw, at, end)
    return found.end() if found else end


def _header_of(head: bytes, default_type: str) -> Message:
    msg = BytesHeaderParser(policy=compat32).parsebytes(head)
    if default_type:
        msg.set_default_type(default_type)
    return msg


def _what(msg: Message) -> str:
    """A part's type, and its file's name if it has one (made plain)."""
    try:
        name = msg.get_filename() or ""
    except Exception:  # a broken RFC 2231 name
        name = ""
    name = _FILENAME.sub("_", str(name))[:60]
    return msg.get_content_type() + (f" ({name})" if name else "")


def _over_limits(raw: bytes, refusal: str) -> bytes:
    """As much of a mail the parser refuses as it takes to refuse it again."""
    if refusal == Refusal.NESTING:
        ends = container_lines(raw, MAX_CONTAINERS + 1)
        return raw[:_line_end(raw, ends[-1], len(raw))]
    end = header_end(raw)
    return raw[:end] if end is not None else raw[:MAX_HEADER_BYTES + 4]


def _may_be_report(raw: bytes, envelope_from: str) -> bool:
    """Whether the mail may be read as a bounce or a report (pbmserv.mail.parse):
    every mail that is, and some that are not."""
    envelope = envelope_from.strip().lower()
    if envelope == "<>" or envelope.startswith("mailer-daemon"):
        return True
    head = raw[:header_end(raw) or MAX_HEADER_BYTES].lower()
    return (b"mailer-daemon" in head or BOUNCE_PREFIX.encode() in head
            or b"delivery-status" in raw.lower())


def stored_form(raw: bytes, keep_whole: int = KEEP_WHOLE,
                envelope_from: str = "") -> StoredForm:
    """The form in which ``raw`` is stored (see the module's docstring): the mail
    itself when it is at most ``keep_whole`` bytes."""
    if len(raw) <= keep_whole:
        return StoredForm(raw, len(raw))
    if raw.startswith(BOM):  # the parser passes over it: so does this, and keeps it
        rest = stored_form(raw[len(BOM):], keep_whole, envelope_from)
        return StoredForm(BOM + rest.raw, len(raw), rest.dropped, rest.parts)
    refusal = prescan(raw)
    if refusal:
        kept = _over_limits(raw, refusal)
        return StoredForm(kept, len(raw), f"over the parser's limits ({refusal}): "
                                          f"{len(raw) - len(kept)} bytes after them")
    walk = _Walk(raw, keep_all=_may_be_report(raw, envelope_from))
    walk.entity(0, len(raw))
    walk.edits.sort(key=lambda e: (e[0], e[1]))
    length = len(raw) if walk.stop is None else walk.stop
    out = walk.result(length)
    if walk.stop is not None:
        walk.dropped_bytes = len(raw) - len(out)
    if walk.top_note is not None and prescan(out):  # the note put the header over
        walk.edits.remove(walk.top_note)
        out = walk.result(length)
    if len(out) > MAX_STORED:
        out = out[:_line_end(out, max(out.rfind(b"\n", 0, MAX_STORED), 0), MAX_STORED)]
    if out == raw:
        return StoredForm(raw, len(raw), parts=walk.parts)
    parts = f"{walk.dropped_parts} part{'s' if walk.dropped_parts != 1 else ''}"
    return StoredForm(out, len(raw), f"{parts} and {len(raw) - len(out)} bytes left out",
                      walk.parts)
