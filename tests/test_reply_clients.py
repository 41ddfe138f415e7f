"""Replies in the shapes of the mail programs people answer with, as each writes the
quoted mail below the answer: Lotus Notes (its title line, its header table, its
internet-style quote), Outlook and Exchange/OWA in many languages, Apple Mail,
Thunderbird, Gmail, Yahoo, K-9 Mail and FairEmail, Mutt and its kin.  Each mail is
made here, in the client's shape and words (not copied from anywhere), goes through
the real store and processor as a reply to a board mail's reply address, and the
comment the opponent reads must be the writer's own words exactly (see
tests/test_reply_comments.py for the common shapes)."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage

import pytest

from pbmserv.db.session import Database
from tests.conftest import Mailer
from tests.test_reply_comments import BOARD, OWN, QUOTED, SUBJECT, comment_seen, start

#: the board mail's Subject as a client quotes it in a header block
TITLE = "New Honey Donuts Board 101 alice"
FROM = "pbmserv <pbmserv@localhost>"
#: the first words of the board mail, as Lotus Notes puts them in its title line
FIRST = "Summary of Honey Donuts Board 101 Red: alice"

#: Outlook's header block in the languages it speaks: the names of From, Sent, To and
#: Subject, and a date as it writes it there
OUTLOOK: dict[str, tuple[tuple[str, str, str, str], str]] = {
    "greek": (("Από:", "Στάλθηκε:", "Προς:", "Θέμα:"), "Κυριακή, 22 Νοεμβρίου 2026 6:02 μμ"),
    "romanian": (("De la:", "Trimis:", "Către:", "Subiect:"), "duminică, 22 noiembrie 2026"),
    "croatian": (("Šalje:", "Poslano:", "Prima:", "Predmet:"), "nedjelja, 22. studenoga 2026."),
    "slovenian": (("Od:", "Poslano:", "Za:", "Zadeva:"), "nedelja, 22. november 2026 18:02"),
    "slovak": (("Od:", "Odoslané:", "Komu:", "Predmet:"), "nedeľa 22. novembra 2026 18:02"),
    "bulgarian": (("От:", "Изпратено:", "До:", "Относно:"), "неделя, 22 ноември 2026 18:02"),
    "serbian": (("Шаље:", "Послато:", "Прима:", "Тема:"), "недеља, 22. новембар 2026. 18:02"),
    "estonian": (("Saatja:", "Saadetud:", "Adressaat:", "Teema:"), "22. november 2026 18:02"),
    "latvian": (("No:", "Nosūtīts:", "Kam:", "Tēma:"), "2026. gada 22. novembris 18:02"),
    "lithuanian": (("Nuo:", "Išsiųsta:", "Kam:", "Tema:"), "2026 m. lapkričio 22 d. 18:02"),
    "portuguese": (("De:", "Enviada:", "Para:", "Assunto:"), "domingo, 22 de novembro de 2026"),
    "catalan": (("De:", "Enviat el:", "Per a:", "Assumpte:"), "diumenge, 22 de novembre de 2026"),
    "indonesian": (("Dari:", "Dikirim:", "Kepada:", "Perihal:"), "Minggu, 22 November 2026 18.02"),
    "vietnamese": (("Từ:", "Đã gửi:", "Đến:", "Chủ đề:"), "Chủ Nhật, 22 tháng 11, 2026 18:02"),
    "hebrew": (("מאת:", "נשלח:", "אל:", "נושא:"), "יום ראשון 22 נובמבר 2026 18:02"),
    "arabic": (("من:", "تاريخ الإرسال:", "إلى:", "الموضوع:"), "الأحد، 22 نوفمبر، 2026 06:02 م"),
    "japanese": (("差出人:", "送信日時:", "宛先:", "件名:"), "2026年11月22日 18:02"),
    "korean": (("보낸 사람:", "보낸 날짜:", "받는 사람:", "제목:"), "2026년 11월 22일 오후 6:02"),
    "turkish": (("Kimden:", "Gönderildi:", "Kime:", "Konu:"), "22 Kasım 2026 Pazar 18:02"),  # noqa: RUF001
    "finnish": (("Lähettäjä:", "Lähetetty:", "Vastaanottaja:", "Aihe:"), "22.11.2026 18.02"),
    "ukrainian": (("Від:", "Надіслано:", "Кому:", "Тема:"), "22 листопада 2026 18:02"),
}


def header_block(*lines: str) -> str:
    return "\n".join(lines)


# -- plain text: what stands between the answer and the quoted (or copied) board ----------
PLAIN = {
    # Lotus Notes 8.5 and 9, text part: a title line (the sender, ---date---, the first
    # words of the mail), then its header table, then the mail unquoted
    "notes title line": f"{FROM[:7]} ---22.11.2026 18:02:06---{FIRST}\n\n"
                        + header_block(f"From:\t{FROM}", "To:\talice@example.org",
                                       "Date:\t22.11.2026 18:02", f"Subject:\t{TITLE}")
                        + f"\n\n\n{BOARD}",
    "notes title line, us date": f"Inactive hide details for pbmserv ---11/22/2026 06:02:06 "
                                 f"PM---{FIRST}\n\n"
                                 + header_block(f"From: {FROM}", "To: alice@example.org",
                                                "Date: 11/22/2026 06:02 PM",
                                                f"Subject: {TITLE}") + f"\n\n{BOARD}",
    "notes title line, german": f"pbmserv ---22.11.2026 18:02:06---{FIRST}\n\n"
                                + header_block(f"Von:\t{FROM}", "An:\talice@example.org",
                                               "Datum:\t22.11.2026 18:02",
                                               f"Betreff:\t{TITLE}") + f"\n\n{BOARD}",
    "notes title line, no seconds": f"[image removed] pbmserv --- 22/11/2026 18:02 --- "
                                    f"{FIRST}\n\n"
                                    + header_block(f"From: {FROM}", "To: alice@example.org",
                                                   "Date: 22/11/2026 18:02",
                                                   f"Subject: {TITLE}") + f"\n\n{BOARD}",
    "notes title line alone": f"pbmserv ---2026/11/22 18:02:06---{FIRST}\n\n{BOARD}",
    # Lotus Notes, "reply with internet-style history": its own dashed line
    "notes dashed": '-----"pbmserv" <pbmserv@localhost> wrote: -----\n\n'
                    + header_block("To: alice@example.org", 'From: "pbmserv" '
                                   "<pbmserv@localhost>", "Date: 11/22/2026 06:02PM",
                                   f"Subject: {TITLE}") + f"\n\n{BOARD}",
    "notes dashed, german": "-----pbmserv <pbmserv@localhost> schrieb: -----\n\n"
                            + header_block("An: alice@example.org",
                                           "Von: pbmserv <pbmserv@localhost>",
                                           "Datum: 22.11.2026 18:02", f"Betreff: {TITLE}")
                            + f"\n\n{BOARD}",
    "notes wrote on": '"pbmserv" <pbmserv@localhost> wrote on 22.11.2026 18:02:06:\n\n'
                      + "> " + "\n> ".join(("From: pbmserv", "To: alice@example.org",
                                            f"Subject: {TITLE}", "")) + "\n" + QUOTED,
    # Lotus Notes 6 and 7: the header table laid out in columns, labels on the right
    "notes 6 header table": "\n".join((
        "             pbmserv" + " " * 46,
        "             <pbmserv@localhost>" + " " * 36,
        " " * 72 + "To",
        "             22.11.2026 18:02          alice@example.org",
        " " * 72 + "cc",
        "",
        " " * 67 + "Subject",
        "                                       " + TITLE,
        "", "")) + BOARD,
    "notes forwarded by": "----- Forwarded by Alice Example/Sales/ACME on 22.11.2026 18:05 "
                          f"-----\n\n{FROM[:7]} ---22.11.2026 18:02:06---{FIRST}\n\n{BOARD}",
    # Outlook and Exchange/OWA header blocks, in the languages Outlook speaks
    **{f"outlook {language}": header_block(*(f"{name} {value}" for name, value in zip(
        names, (FROM, sent, "alice@example.org", TITLE), strict=True))) + f"\n\n{BOARD}"
       for language, (names, sent) in OUTLOOK.items()},
    "outlook for mac": header_block(f"From: {FROM}", "Date: Sunday, 22 November 2026 at 18:02",
                                    "To: Alice <alice@example.org>", f"Subject: {TITLE}")
                       + f"\n\n{BOARD}",
    "owa with cc": "________________________________\n" + header_block(
        f"From: {FROM}", "Sent: Sunday, November 22, 2026 6:02:06 PM",
        "To: Alice <alice@example.org>", "Cc: Bob <bob@example.org>", f"Subject: {TITLE}")
        + f"\n\n{BOARD}",
    "outlook swedish original": "-----Ursprungligt meddelande-----\n" + header_block(
        f"Från: {FROM}", "Skickat: den 22 november 2026 18:02", "Till: alice@example.org",
        f"Ämne: {TITLE}") + f"\n\n{BOARD}",
    # Apple Mail and iOS Mail
    "apple mail": f"> On 22 Nov 2026, at 18:02, {FROM} wrote:\n>\n{QUOTED}",
    "apple mail unquoted attribution": f"On 22 Nov 2026, at 18:02, {FROM} wrote:\n\n{QUOTED}",
    "apple mail german": f"Am 22.11.2026 um 18:02 schrieb {FROM}:\n\n{QUOTED}",
    "apple mail forward": f"Begin forwarded message:\n\nFrom: {FROM}\nSubject: {TITLE}\n"
                          f"Date: 22 November 2026 at 18:02:06 CET\nTo: alice@example.org\n\n"
                          f"{BOARD}",
    # Thunderbird
    "thunderbird german": f"Am 22.11.26 um 18:02 schrieb pbmserv:\n{QUOTED}",
    "thunderbird french": f"Le 22/11/2026 à 18:02, pbmserv a écrit :\n{QUOTED}",
    "thunderbird original message": "-------- Original Message --------\n" + header_block(
        f"Subject: \t{TITLE}", "Date: \tSun, 22 Nov 2026 18:02:06 +0100",
        f"From: \t{FROM}", "To: \talice@example.org") + f"\n\n\n\n{BOARD}",
    "thunderbird weitergeleitete": "-------- Weitergeleitete Nachricht --------\n"
                                   + header_block(f"Betreff: \t{TITLE}",
                                                  "Datum: \tSun, 22 Nov 2026 18:02:06 +0100",
                                                  f"Von: \t{FROM}",
                                                  "An: \talice@example.org") + f"\n\n{BOARD}",
    # Gmail
    "gmail": f"On Sun, Nov 22, 2026 at 6:02 PM {FROM} wrote:\n\n{QUOTED}",
    "gmail german": f"Am So., 22. Nov. 2026 um 18:02 Uhr schrieb {FROM}:\n\n{QUOTED}",
    "gmail japanese": f"2026年11月22日(日) 18:02 {FROM}:\n\n{QUOTED}",
    "gmail forward": "---------- Forwarded message ---------\n" + header_block(
        f"From: {FROM}", "Date: Sun, Nov 22, 2026 at 6:02 PM", f"Subject: {TITLE}",
        "To: <alice@example.org>") + f"\n\n\n{BOARD}",
    # Yahoo
    "yahoo": f"    On Sunday, November 22, 2026, 06:02:06 PM GMT+1, {FROM} wrote:  \n \n "
             + BOARD.replace("\n", "\n "),
    "yahoo german": f"Am Sonntag, 22. November 2026, 18:02:06 MEZ hat {FROM} Folgendes "
                    f"geschrieben:\n\n{QUOTED}",
    "yahoo french": f"Le dimanche 22 novembre 2026 à 18:02:06 UTC+1, {FROM} a écrit :\n\n"
                    f"{QUOTED}",
    "yahoo spanish": f"El domingo, 22 de noviembre de 2026, 18:02:06 CET, {FROM} escribió:"
                     f"\n\n{QUOTED}",
    "yahoo italian": f"Il domenica 22 novembre 2026, 18:02:06 CET, {FROM} ha scritto:\n\n"
                     f"{QUOTED}",
    "yahoo portuguese": f"Em domingo, 22 de novembro de 2026 18:02:06 BRT, {FROM} escreveu:"
                        f"\n\n{QUOTED}",
    # K-9 Mail and FairEmail
    "k-9": f"On November 22, 2026 6:02:06 PM GMT+01:00, {FROM} wrote:\n{QUOTED}",
    "k-9 german": f"{FROM} schrieb am 22. November 2026 18:02:06 MEZ:\n{QUOTED}",
    "k-9 original message": "-------- Original Message --------\n" + header_block(
        f"From: {FROM}", "Sent: November 22, 2026 6:02:06 PM GMT+01:00",
        "To: alice@example.org", f"Subject: {TITLE}") + f"\n\n{BOARD}",
    "fairemail": f"22 Nov 2026 18:02:06 {FROM}:\n\n{QUOTED}",
    "fairemail extended": "-------- Original Message --------\n" + header_block(
        f"From: {FROM}", "To: alice@example.org", "Sent: Sunday, 22 November 2026 18:02",
        f"Subject: {TITLE}") + f"\n\n{QUOTED}",
    # Mutt, NeoMutt, and the mail programs of Emacs and the terminal
    "mutt": f"On Sun, Nov 22, 2026 at 06:02:06PM +0100, pbmserv wrote:\n{QUOTED}",
    "mutt starred": f"* {FROM} [2026-11-22 18:02:06 +0100]:\n\n{QUOTED}",
    "mutt starred, no address": f"* pbmserv [2026-11-22 18:02]:\n{QUOTED}",
    "gnus": f"{FROM} writes:\n\n{QUOTED}",
    "sup and alot": f"Excerpts from pbmserv's message of 2026-11-22 18:02:06 +0100:\n{QUOTED}",
    "quoting": f"Quoting pbmserv (2026-11-22 18:02:06):\n{QUOTED}",
    "mh and nmh": f'In message <b101@localhost>, "pbmserv" writes:\n{QUOTED}',
    "pine and alpine": f"On Sun, 22 Nov 2026, pbmserv wrote:\n\n{QUOTED}",
    "claws": f"On Sun, 22 Nov 2026 18:02:06 +0100\n{FROM} wrote:\n\n{QUOTED}",
    "evolution": f"On Sun, 2026-11-22 at 18:02 +0100, pbmserv wrote:\n{QUOTED}",
    "roundcube": f"Am 22.11.2026 18:02, schrieb pbmserv:\n{QUOTED}",
    "roundcube english": f"On 2026-11-22 18:02, pbmserv wrote:\n{QUOTED}",
    "protonmail": f"------- Original Message -------\nOn Sunday, November 22nd, 2026 at 18:02, "
                  f"pbmserv <pbmserv@localhost> wrote:\n\n{QUOTED}",
    "zimbra": "----- Original Message -----\n" + header_block(
        f"From: {FROM}", "To: alice@example.org", "Sent: Sunday, November 22, 2026 6:02:06 PM",
        f"Subject: {TITLE}") + f"\n\n{BOARD}",
    "zimbra german": "----- Ursprüngliche Mail -----\n" + header_block(
        f"Von: {FROM}", "An: alice@example.org", "Gesendet: Sonntag, 22. November 2026 18:02:06",
        f"Betreff: {TITLE}") + f"\n\n{BOARD}",
}


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_a_client_reply_cuts_cleanly(mailer: Mailer, db: Database, name: str) -> None:
    to = start(mailer)
    out = mailer.send(SUBJECT, f"a1-a2\n{OWN}\n\n{PLAIN[name]}", To=to)
    comment_seen(db, out, OWN)


# -- HTML only -----------------------------------------------------------------------
HTML = {
    # Lotus Notes 8.5: the title line beside its twisty, a header table, a rule, the
    # mail in <tt>
    "notes 8.5": '<br><br><img width="16" height="16" src="cid:1__=0ABB" border="0" '
                 f'alt="Inactive hide details for pbmserv ---22.11.2026 18:02:06---{FIRST}">'
                 f'<font size="2" color="#424282">pbmserv ---22.11.2026 18:02:06---{FIRST}'
                 '</font><br><br><font size="1" color="#5F5F5F">From:</font>'
                 '<font size="1">pbmserv &lt;pbmserv@localhost&gt;</font><br>'
                 '<font size="1" color="#5F5F5F">To:</font><font size="1">alice@example.org'
                 '</font><br><font size="1" color="#5F5F5F">Date:</font><font size="1">'
                 '22.11.2026 18:02</font><br><font size="1" color="#5F5F5F">Subject:</font>'
                 f'<font size="1">{TITLE}</font><br><hr width="100%" size="2" align="left" '
                 'noshade style="color:#8091A5; "><br><br><br><tt>{board}</tt>',
    # Lotus Notes 9 (and IBM Notes): the title line and the header in tables
    "notes 9": '<br><br><table width="100%" border="0" cellspacing="0" cellpadding="0">'
               '<tr valign="top"><td width="1%"><img width="96" height="1" src="cid:2__=0ABB" '
               'border="0" alt=""><br><img src="cid:3__=0ABB" alt="Inactive hide details for '
               f'pbmserv ---11/22/2026 06:02:06 PM---{FIRST}"></td><td width="100%">'
               f'<font size="2" color="#424282">pbmserv ---11/22/2026 06:02:06 PM---{FIRST}'
               '</font><br><br><table width="100%" border="0" cellspacing="0" cellpadding="0">'
               '<tr valign="top"><td width="1%"><font size="1" color="#5F5F5F">From:</font>'
               '</td><td width="100%"><font size="1">pbmserv &lt;pbmserv@localhost&gt;</font>'
               '</td></tr><tr valign="top"><td><font size="1" color="#5F5F5F">To:</font></td>'
               '<td><font size="1">alice@example.org</font></td></tr><tr valign="top"><td>'
               '<font size="1" color="#5F5F5F">Date:</font></td><td><font size="1">'
               '11/22/2026 06:02 PM</font></td></tr><tr valign="top"><td><font size="1" '
               'color="#5F5F5F">Subject:</font></td><td><font size="1">'
               f'{TITLE}</font></td></tr></table><hr width="100%" size="2" align="left" '
               'noshade style="color:#8091A5; "><br></td></tr></table><br><tt>{board}</tt>',
    # Outlook desktop, in German: the header block in a div with a top border
    "outlook german": '<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt '
                      '0cm 0cm 0cm"><p class="MsoNormal"><b>Von:</b> pbmserv &lt;pbmserv@'
                      'localhost&gt; <br><b>Gesendet:</b> Sonntag, 22. November 2026 18:02<br>'
                      f'<b>An:</b> alice@example.org<br><b>Betreff:</b> {TITLE}</p></div>'
                      "<p>{board}</p>",
    # Outlook 2007: the blue top border
    "outlook 2007": '<div style="border:none;border-top:solid #B5C4DF 1.0pt;padding:3.0pt 0in '
                    '0in 0in"><p><b>From:</b> pbmserv [mailto:pbmserv@localhost]<br>'
                    f"<b>Sent:</b> Sunday, November 22, 2026 6:02 PM<br><b>Subject:</b> {TITLE}"
                    "</p></div><p>{board}</p>",
    # OWA and new Outlook: a rule, then divRplyFwdMsg
    "owa": '<div id="appendonsend"></div><hr style="display:inline-block;width:98%" '
           'tabindex="-1"><div id="divRplyFwdMsg" dir="ltr"><font face="Calibri"><b>From:</b> '
           "pbmserv &lt;pbmserv@localhost&gt;<br><b>Sent:</b> Sunday, November 22, 2026 "
           f"6:02 PM<br><b>To:</b> Alice<br><b>Subject:</b> {TITLE}</font><div>&nbsp;</div>"
           "</div><div>{board}</div>",
    # Outlook on the web with the header block alone, no rule (a reply in a thread)
    "owa without a rule": '<div id="divRplyFwdMsg"><b>From:</b> pbmserv<br><b>Sent:</b> '
                          f"Sunday, November 22, 2026 6:02 PM<br><b>Subject:</b> {TITLE}"
                          "</div><div>{board}</div>",
    # Apple Mail: the attribution inside the quote
    "apple mail": '<div><br><blockquote type="cite"><div>On 22 Nov 2026, at 18:02, pbmserv '
                  "&lt;pbmserv@localhost&gt; wrote:</div><br><div>{board}</div></blockquote>"
                  "</div>",
    # Gmail and Yahoo, in other languages
    "gmail german": '<div class="gmail_quote"><div dir="ltr" class="gmail_attr">Am So., 22. '
                    "Nov. 2026 um 18:02 Uhr schrieb pbmserv &lt;pbmserv@localhost&gt;:<br>"
                    '</div><blockquote class="gmail_quote">{board}</blockquote></div>',
    "yahoo german": '<div id="yahoo_quoted_1234" class="yahoo_quoted"><div>Am Sonntag, 22. '
                    "November 2026, 18:02:06 MEZ hat pbmserv &lt;pbmserv@localhost&gt; "
                    "Folgendes geschrieben:</div><div>{board}</div></div>",
    # Thunderbird
    "thunderbird german": '<div class="moz-cite-prefix">Am 22.11.26 um 18:02 schrieb pbmserv:'
                          '<br></div><blockquote type="cite">{board}</blockquote>',
    # K-9 and FairEmail in HTML
    "k-9": '<div class="gmail_quote">On November 22, 2026 6:02:06 PM GMT+01:00, pbmserv '
           '&lt;pbmserv@localhost&gt; wrote:<blockquote class="gmail_quote">{board}'
           "</blockquote></div>",
    "fairemail": "<p>22 Nov 2026 18:02:06 pbmserv &lt;pbmserv@localhost&gt;:</p>"
                 '<blockquote style="margin:0 0 0 3px;border-left:3px solid #ccc">{board}'
                 "</blockquote>",
}


def html_reply(to: str, quote: str) -> bytes:
    board = BOARD.replace("<", "&lt;").replace(">", "&gt;").replace("\n", "<br>\n")
    own = "<div>Good luck, Bob!</div><div>This one is for the cup.</div>"
    html = (f"<html><head><style>p {{ margin: 0 }}</style></head><body>"
            f"<div>a1-a2</div>{own}{quote.replace('{board}', board)}</body></html>")
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "alice@example.org", to, SUBJECT
    msg.set_content(html, subtype="html")
    return msg.as_bytes(policy=policy.SMTP)


@pytest.mark.parametrize("name", sorted(HTML))
def test_a_client_html_reply_cuts_cleanly(mailer: Mailer, db: Database, name: str) -> None:
    to = start(mailer)
    out = mailer.send_raw(html_reply(to, HTML[name]))
    comment_seen(db, out, OWN)


def test_a_notes_reply_in_both_parts_reads_the_text_part(mailer: Mailer,
                                                         db: Database) -> None:
    """Lotus Notes sends the text and the HTML: the text part's title line goes too."""
    to = start(mailer)
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "alice@example.org", to, SUBJECT
    msg.set_content(f"a1-a2\n{OWN}\n\n{PLAIN['notes title line']}")
    msg.add_alternative(html_reply(to, HTML["notes 8.5"]).split(b"\r\n\r\n", 1)[1].decode(),
                        subtype="html")
    out = mailer.send_raw(msg.as_bytes(policy=policy.SMTP))
    comment_seen(db, out, OWN)


def test_a_line_with_a_time_and_a_colon_is_the_writers_without_a_quote(
        mailer: Mailer, db: Database) -> None:
    """"* Bob [2026-11-22 18:02]:" is an attribution only above a quote: the writer's
    own line that names a time and ends in a colon stays theirs."""
    own = "Tomorrow at 18:02 I am away, so:\nthe corner is yours."
    to = start(mailer)
    out = mailer.send(SUBJECT, f"a1-a2\n{own}\n", To=to)
    comment_seen(db, out, own)
