"""The writer's own words of a reply: the quoted mail, attributions and signatures cut.

Mail programs put the mail being answered below (or above) the answer in many ways:

* quoted with ``>`` (or ``|``), under an attribution line such as
  "On Sun, 22 Nov 2026 at 18:02, Bob <bob@example.org> wrote:", which clients wrap
  over two or three lines and write in the reader's language ("Am ... schrieb",
  "Le ... a écrit :", "El ... escribió:", "W dniu ... napisał:", "... написал:",
  "... 写道:");
* not quoted at all, under such an attribution (Gmail on phones), or under a header
  block (Outlook: "From: / Sent: / To: / Subject:", "Von: / Gesendet: / An: /
  Betreff:", "De : / Envoyé : / À : / Objet :" ... often after a separator such as
  "-----Original Message-----" or a line of underscores);
* in HTML, inside ``<blockquote>`` or an element whose class or id names a quote
  (Gmail's ``gmail_quote``, Thunderbird's ``moz-cite-prefix``, Yahoo's
  ``yahoo_quoted``), or below a separator (Outlook's ``divRplyFwdMsg``, a top border,
  a ``<hr>``).

``own_words`` reads the lines of a text body and keeps the writer's: it stops at a
signature ("-- ", "Sent from my iPhone" and the like), a separator, a header block or
an attribution over unquoted text; an attribution over ``>`` quoted text is passed
over with the quote, so an answer written below the quote (or between its parts) is
kept.  ``without_quoted_html`` takes the quoted parts out of an HTML body before it is
read as text.  ``mask_addresses`` hides e-mail addresses in a text to be published.

Every function here does bounded work whatever the input: each line is looked at a
fixed number of times, with patterns of bounded repetition, on at most MAX_LINES
lines of at most MAX_LINE characters.
"""

from __future__ import annotations

import re

from pbmserv.mail.html import MAX_HTML

#: lines of a body looked at, and the characters of each line that a pattern reads
MAX_LINES = 2000
MAX_LINE = 1000
#: how many lines an attribution may be wrapped over
_ATTRIBUTION_LINES = 3
#: header lines of a header block are looked for among this many following lines
_HEADER_WINDOW = 8

# -- attributions --------------------------------------------------------------------
# the verb of "X wrote:" in the languages mail programs speak
_WROTE = (
    r"wrote|writes|schrieb|schreibt|schreef|a\s+écrit|écrit|escribió|escreveu|scrisse|"
    r"ha\s+scritto|skrev|skriver|kirjoitti|pisze|napisał(?:\(a\))?|napisała|napisal|napsal[a]?|"
    r"написал(?:\(а\)|а)?|написав(?:\(ла\)|ла)?|пишет|пише|írta|yazdı|rašė|kirjutas|"  # noqa: RUF001
    r"rakstīja|skrifaði|έγραψε|כתב|كتب"
)
_WROTE_RE = re.compile(rf"(?i)(?<!\w)(?:{_WROTE})(?!\w)|写道|寫道|書きました|작성")
# an address, a time or a date: what makes "... wrote:" an attribution and not prose
_ADDRESS_HINT = re.compile(r"@[\w-]+\.[\w.-]+|<[^<>\s]+@|\[mailto:")
_DATE_HINT = re.compile(
    r"\d{1,2}[:.]\d{2}(?!\d)|\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|(?<!\d)(?:19|20)\d{2}(?!\d)|"
    r"\d{4}年|\d{1,2}月")
# how attributions begin, when they begin with a word ("On", "Le", "Am"...)
_STARTER = re.compile(
    r"(?i)^(?:on|le|am|el|il|in\s+data|op|em|den|dne|dnia|w\s+dniu|в|у|ve|dana|at|"  # noqa: RUF001
    r"the|quoting|citando|zitat\s+von)\b")
_ENDS_COLON = re.compile(r"[:：]\s*$")  # noqa: RUF001
_ENDS_WROTE = re.compile(rf"(?i)(?:{_WROTE})\s*[-:]*\s*$")
# "2013/7/20 Sam <sam@example.org>": Gmail's old attribution, with no verb or colon
_DATE_THEN_ADDRESS = re.compile(r"^\d{4}[/-]\d{1,2}[/-]\d{1,2}\s.{1,200}<[^<>\s]+@[^<>\s]+>$")
_LEAD = re.compile(r"^[\s>*_-]+")


_SURE, _WEAK = 2, 1


def _attribution_kind(text: str) -> int:
    """_SURE for an attribution, _WEAK for a line that is one only if a quote follows
    ("Bob wrote:", "On Sunday, Bob wrote:"), else 0."""
    text = _LEAD.sub("", text[: MAX_LINE * _ATTRIBUTION_LINES]).strip()
    if not text or len(text) > 600:
        return 0
    hints = bool(_ADDRESS_HINT.search(text)) + bool(_DATE_HINT.search(text))
    if _WROTE_RE.search(text) and (_ENDS_COLON.search(text) or _ENDS_WROTE.search(text)):
        return _SURE if hints else _WEAK
    if _ENDS_COLON.search(text) and hints == 2:
        return _SURE  # "26.06.2014, 14:41, "Alexander" <a@example.com>:"
    if _DATE_THEN_ADDRESS.match(text):
        return _SURE
    # "* Bob [2026-11-22 18:02]:", "Quoting Bob (2026-11-22 18:02):", "Excerpts from
    # Bob's message of 2026-11-22 18:02:": one only if a quote follows
    return _WEAK if _ENDS_COLON.search(text) and _DATE_HINT.search(text) else 0


def _attribution_at(lines: list[str], i: int) -> tuple[int, int]:
    """(lines, kind) of an attribution starting at line ``i``; (0, 0) if none does."""
    if not _has_hint(lines[i]) and not _STARTER.match(_LEAD.sub("", lines[i])) \
            and not lines[i].rstrip().endswith("<"):
        # a line without date, address, opening word or an address broken off after
        # "<" is no wrapped attribution's first line: "Thanks" above "Bob
        # <bob@example.org> wrote:" stays the writer's
        return 1, _attribution_kind(lines[i])
    joined = ""
    for n in range(_ATTRIBUTION_LINES):
        if i + n >= len(lines) or not lines[i + n].strip():
            break
        joined = f"{joined} {lines[i + n].strip()}" if joined else lines[i + n].strip()
        kind = _attribution_kind(joined)
        if kind:
            return n + 1, kind
    return 0, 0


def quote_intro(lines: list[str], i: int, *, wrapped: bool = True) -> int:
    """How many lines an attribution starting at line ``i`` takes, when quoted text
    follows it (0 when there is none); ``wrapped``: it may go on over the next lines."""
    size, kind = _attribution_at(lines, i) if wrapped else (1, _attribution_kind(lines[i]))
    return size if kind and _quote_follows(lines, i + size) else 0


def _has_hint(line: str) -> bool:
    line = line[:MAX_LINE]
    return bool(_ADDRESS_HINT.search(line) or _DATE_HINT.search(line))


# -- header blocks, separators, signatures -------------------------------------------
_HEADER_NAMES = (
    r"from|sent|date|to|cc|bcc|subject|reply-to|von|gesendet|datum|an|betreff|kopie|"
    # Greek, Romanian, Croatian, Serbian, Slovenian, Slovak, Bulgarian, Estonian,
    # Latvian, Lithuanian, Portuguese, Catalan, Indonesian and Malay, Vietnamese,
    # Hebrew, Arabic, Thai (as Outlook writes them)
    r"από|στάλθηκε|προς|κοιν|θέμα|de\s+la|trimis|către|subiect|šalje|poslano|prima|"
    r"predmet|шаље|послато|прима|za|zadeva|odoslané|изпратено|до|относно|saatja|"
    r"saadetud|adressaat|teema|no|nosūtīts|kam|tēma|nuo|išsiųsta|tema|enviada|"
    r"enviat\s+el|per\s+a|assumpte|dari|dikirim|kepada|perihal|tanggal|daripada|dihantar|"
    r"subjek|từ|đã\s+gửi|đến|chủ\s+đề|מאת|נשלח|אל|נושא|עותק|من|تاريخ\s+الإرسال|إلى|"
    r"الموضوع|نسخة|จาก|ส่ง|ถึง|เรื่อง|"
    r"de|envoyé|envoyé\s+le|à|a|objet|message\s+du|copie\s+à|sujet|date\s+d'envoi|van|verzonden|aan|onderwerp|datum|da|inviato|"
    r"data|oggetto|från|skickat|till|ämne|kopia|fra|sendt|til|emne|od|wysłano|wysłane|"
    r"do|temat|dw|от|отправлено|кому|копия|тема|дата|від|надіслано|тема|enviado|para|"
    r"asunto|assunto|remitente|feladó|elküldve|címzett|tárgy|dátum|lähettäjä|lähetetty|"
    r"vastaanottaja|aihe|odesláno|komu|předmět|kimden|gönderildi|kime|konu|"
    r"发件人|发送时间|收件人|抄送|主题|日期|寄件者|寄件日期|送件日期|收件者|副本|主旨|"
    r"差出人|送信日時|宛先|件名|보낸\s*사람|받는\s*사람|제목|날짜"
)
_HEADER_LINE = re.compile(rf"(?i)^[\s*_>]{{0,12}}({_HEADER_NAMES})[*_]{{0,2}}\s{{0,3}}[:：]")  # noqa: RUF001
_SEPARATOR = re.compile(
    r"(?i)^[\s*>]*(?:-{2,}|={2,}|_{2,})\s*(?:original\s+message|ursprüngliche\s+nachricht|"
    r"message\s+d'origine|mensaje\s+original|messaggio\s+originale|originalmeddelande|"
    r"oorspronkelijk\s+bericht|origineel\s+bericht|opprinnelig\s+melding|"
    r"oprindelig\s+meddelelse|alkuperäinen\s+viesti|wiadomość\s+oryginalna|"
    r"oryginalna\s+wiadomość|původní\s+zpráva|исходное\s+сообщение|"
    r"оригинальное\s+сообщение|eredeti\s+üzenet|mensagem\s+original|"
    r"forwarded\s+message|weitergeleitete\s+nachricht|message\s+transféré|"
    r"mensaje\s+reenviado|пересылаемое\s+сообщение|doorgestuurd\s+bericht|"
    r"messaggio\s+inoltrato|vidarebefordrat\s+meddelande|原始邮件|原始郵件|"
    r"元のメッセージ|reply\s+message)\s*[-=_]*[\s*]*$"
    r"|^\s*(?:begin\s+forwarded\s+message|anfang\s+der\s+weitergeleiteten\s+nachricht|"
    r"début\s+du\s+message\s+réexpédié)\s*:"
    r"|^\s*_{10,}\s*$"
    # "-------- Oprindelig besked --------": a title between dashes, in any language
    r"|^\s*-{3,}\s*[^-\s][^-]{0,40}-{3,}\s*$")
_SIGNATURE = re.compile(
    r"(?i)^\s*(?:sent\s+(?:from|via|with|using)|get\s+outlook\s+for|"
    r"envoyé\s+à\s+partir\s+de|obtenir\s+outlook\s+pour|obtener\s+outlook\s+para|"
    r"von\s+meinem|gesendet\s+(?:von|mit)|envoyé\s+(?:de|depuis)|enviado\s+(?:desde|do|de)|"
    r"inviato\s+da|verzonden\s+(?:met|vanaf)|verstuurd\s+(?:met|vanaf)|"
    r"skickat\s+från|sendt\s+fra|lähetetty|wysłane\s+z|odesláno\s+z|"
    r"отправлено\s+(?:с|из)|надіслано\s+з|küldve|iphone.{0,20}から送信|"  # noqa: RUF001
    r"发自我的|發自我的|从我的)"
    r"[^,;!?]{0,60}[.!]?\s*$")
_LINK = re.compile(r"<[^<>]{0,300}>")
_SIGNATURE_DELIMITER = re.compile(r"^(?:--|—)\s*$")
_DECORATION = re.compile(r"^[\s\-_=*~.#]*$")


def _is_header_block(lines: list[str], i: int) -> bool:
    """Line ``i`` starts a header block: header lines of three names, or of two when
    one of them gives an address or a date, among the next lines (blank lines
    between them are passed over).  "From: a1\nTo: a2" is a player's, not a block."""
    first = _HEADER_LINE.match(lines[i][:MAX_LINE])
    if first is None:
        return False
    names = {first.group(1).lower()}
    hinted = _has_hint(lines[i])
    seen = 0
    for line in lines[i + 1:i + 1 + 4 * _HEADER_WINDOW]:
        if not line.strip():
            continue
        seen += 1
        if seen > _HEADER_WINDOW:
            break
        match = _HEADER_LINE.match(line[:MAX_LINE])
        if match is not None:
            names.add(match.group(1).lower())
            hinted = hinted or _has_hint(line)
            if len(names) >= 3 or (len(names) == 2 and hinted):
                return True
    return False


_SUPERCITE = re.compile(r"^\s*[A-Z]{1,3}>")
#: a quoted line this long was likely wrapped by a mail program: the unquoted line
#: below it, with quoted text again below that, is the rest of it
_WRAPPED = 60


def _quoted(line: str) -> bool:
    return line.lstrip().startswith((">", "|")) or _SUPERCITE.match(line) is not None


# Lotus Notes' title line above its header table: the sender, the date between three
# dashes, the first words of the mail ("Bob ---22.11.2026 18:02:06---Hello", after the
# alt text of its twisty, "Inactive hide details for")
_NOTES_TITLE = re.compile(
    r"-{3}\s?(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|\d{4}年\d{1,2}月\d{1,2}日)[ ,]{1,3}"
    r"\d{1,2}[:.]\d{2}(?:[:.]\d{2})?(?:\s?[AaPp]\.?[Mm]\.?)?\s?-{3}")
# a title between dashes, of any length, that names a date, an address or "wrote":
# "----- Forwarded by Bob/Sales/ACME on 22.11.2026 18:05 -----", "-----Bob
# <bob@example.org> wrote: -----" (Lotus Notes)
_DASHED_TITLE = re.compile(r"^\s*-{3,}\s*\S.{0,200}?-{3,}\s*$")


def _is_separator(line: str) -> bool:
    if _SEPARATOR.match(line) or _NOTES_TITLE.search(line):
        return True
    return bool(_DASHED_TITLE.match(line)) and (_has_hint(line) or bool(_WROTE_RE.search(line)))


# Lotus Notes 6 and 7 lay their header table out in columns as text, each label alone
# at the right end of its line: "                        To", "                 cc"
_NOTES_LABEL = re.compile(
    r"^\s{20,}(?:to|cc|bcc|subject|an|kopie|blindkopie|betreff|à|objet|copie|a|oggetto|"
    r"para|asunto|aan|onderwerp|till|ämne)\s*$", re.I)


def _is_signature(line: str) -> bool:
    return bool(_SIGNATURE_DELIMITER.match(line)
                or _SIGNATURE.match(_LINK.sub("", line)))


def _wrapped_quote(lines: list[str], i: int) -> bool:
    """Line ``i`` is the rest of the long quoted line above it (quoted text below)."""
    return (0 < i < len(lines) - 1 and _quoted(lines[i - 1])
            and len(lines[i - 1].strip()) >= _WRAPPED and _quoted(lines[i + 1]))


def _attribution_debris(line: str) -> bool:
    """A line left above an attribution that its client broke up with blank lines
    ("On Thu, 31 Mar 2016 at 11:16 Bob", "<")."""
    text = line.strip()
    return (not text or _DECORATION.match(text) is not None or text in ("<", "\"")
            or (_STARTER.match(text) is not None and _DATE_HINT.search(text) is not None
                and not text.endswith((".", "!", "?"))))


def _quote_follows(lines: list[str], i: int) -> bool:
    """The first line after ``i`` with text on it is quoted."""
    for line in lines[i:i + 5]:
        if line.strip():
            return _quoted(line)
    return False


def own_words(lines: list[str], max_chars: int = 16_000) -> list[str]:
    """The writer's own lines of a body (lines as they were, the quote left out);
    reading stops once ``max_chars`` characters are kept."""
    lines = lines[:MAX_LINES]
    out: list[str] = []
    kept = 0
    i = 0
    while i < len(lines) and kept <= max_chars:
        line = lines[i]
        head = line[:MAX_LINE]
        stripped = head.strip()
        if not stripped:
            if out and out[-1]:
                out.append("")  # one blank line for a run of them
            i += 1
            continue
        if _quoted(head) or _wrapped_quote(lines, i):
            i += 1
            continue
        if _NOTES_LABEL.match(head):  # the table's left column is above: not the writer's
            while out and (not out[-1].strip() or out[-1].startswith(" " * 8)):
                out.pop()
            break
        if _is_signature(head) or _is_separator(head) or _is_header_block(lines, i):
            break
        size, kind = _attribution_at(lines, i)
        if kind == _WEAK and not _quote_follows(lines, i + size):
            kind = 0  # "As I wrote:" and the writer's own words below it
        if kind:
            if not _quote_follows(lines, i + size):
                # the original follows unquoted: nothing more is the writer's
                while out and _attribution_debris(out[-1]):
                    out.pop()
                break
            i += size  # the quote is passed over: an answer may follow it
            continue
        out.append(line.rstrip())
        kept += len(line)
        i += 1
    while out and _DECORATION.match(out[-1]):
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return out


# -- HTML ----------------------------------------------------------------------------
_TAG = re.compile(r"<(/?)\s*([A-Za-z][A-Za-z0-9]*)([^<>]*)>")
#: elements that hold a quote, by class or id: left out with all they contain
_QUOTE_NAMES = re.compile(
    r"""(?i)\b(?:class|id)\s*=\s*["']?[^"'>]*\b(?:gmail_quote|gmail_signature|"""
    r"""moz-cite-prefix|moz-signature|yahoo_quoted|ydp[0-9a-f]*yahoo_quoted|"""
    r"""protonmail_quote|zmail_extra|"""
    r"""ecxgmail_quote|mail-quote-collapse|bloop_sign|applemailsignature)\b""")
#: where the original begins, below the answer: the rest is left out
_CUT_NAMES = re.compile(
    r"""(?i)\b(?:id\s*=\s*["']?(?:x_)?(?:divRplyFwdMsg|appendonsend|stopSpelling)|"""
    r"""class\s*=\s*["']?[^"'>]*\bOutlookMessageHeader)\b"""
    r"""|border-top\s*:\s*solid\s+#(?:B5C4DF|E1E1E1)""")
_QUOTE_MARK = "<br>&gt;<br>"
_HIDDEN = frozenset({"style", "script", "head", "title"})
_TEXT = re.compile(r"[^\s<>]")


def without_quoted_html(source: str) -> str:
    """``source`` without its quoted parts (see the module's docstring)."""
    source = source[:MAX_HTML]
    out: list[str] = []
    pos = 0  # where the text still to be kept begins
    prev = 0  # where the text after the last tag begins
    skipping: str | None = None  # the name of the element being left out
    depth = 0
    hidden: str | None = None  # inside <style>, <script>, <head> or <title>
    seen_text = False
    for match in _TAG.finditer(source):
        closing, name, attrs = match.group(1) == "/", match.group(2).lower(), match.group(3)
        if skipping is None and hidden is None and not seen_text:
            seen_text = _TEXT.search(_visible(source[prev:match.start()])) is not None
        prev = match.end()
        if skipping is not None:
            if name == skipping and not attrs.rstrip().endswith("/"):
                depth += -1 if closing else 1
                if depth == 0:
                    skipping = None
                    pos = match.end()
            continue
        if hidden is not None:
            hidden = None if closing and name == hidden else hidden
            continue
        if closing:
            continue
        if name in _HIDDEN:
            hidden = name
        elif name == "hr" or _CUT_NAMES.search(attrs):
            if seen_text:  # the answer is above: the original below is left out
                out.append(source[pos:match.start()])
                return "".join(out)
        elif name == "blockquote" or _QUOTE_NAMES.search(attrs):
            # a quoted line stands in for the quote, so that the text still shows one
            # was there (an attribution above it is then known for one)
            out.append(source[pos:match.start()] + _QUOTE_MARK)
            skipping, depth = name, 1
    if skipping is None:
        out.append(source[pos:])
    return "".join(out)


def _visible(text: str) -> str:
    """The text between two tags without HTML comments and non-breaking spaces."""
    start = text.find("<!--")
    while start >= 0:
        end = text.find("-->", start + 4)
        text = text[:start] if end < 0 else text[:start] + " " + text[end + 3:]
        start = text.find("<!--", start)
    return text.replace("&nbsp;", " ").replace("&#160;", " ")


# -- addresses -----------------------------------------------------------------------
_ADDRESS = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}")
#: what an address is replaced by wherever a comment is published
ADDRESS_MASK = "[address hidden]"


def mask_addresses(text: str) -> str:
    """``text`` with every e-mail address in it replaced by ADDRESS_MASK."""
    return _ADDRESS.sub(ADDRESS_MASK, text) if "@" in text else text
