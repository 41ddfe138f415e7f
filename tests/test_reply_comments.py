"""The comment of a reply is the player's own words: what the mail programs people use
put around them (the quoted board mail, an attribution, an Outlook header block, a
signature, an HTML quote) never reaches the opponent, the web pages or the records.

Every mail here is made by the test in the shape a real client gives it, and goes
through the real store and processor; the assertions are on the exact comment the
opponent reads and the database keeps."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.models import Board, Move, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.records import to_json, to_text
from pbmserv.render import wrap
from pbmserv.service.archive import record_of
from pbmserv.web import create_app
from tests.conftest import Mailer

SUBJECT = "Re: New Honey Donuts Board 101 alice"
PLAYED = "Your move a1-a2 on Honey Donuts board 101 has been played."
# the board mail as a mail program quotes it, or copies it below the reply unquoted
BOARD = ("Summary of Honey Donuts Board 101\n"
         "Red: alice <alice@example.org>\n"
         "Blue: bob\n"
         "Alice, it is your move.\n")
QUOTED = "".join(f"> {line}\n" for line in BOARD.splitlines())
PIPED = "".join(f"| {line}\n" for line in BOARD.splitlines())
OWN = "Good luck, Bob!\nThis one is for the cup."


def start(mailer: Mailer) -> str:
    """A board between alice and bob; the reply address of alice's board mail."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")
    [mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert mail.reply_to is not None
    return mail.reply_to


def comment_seen(db: Database, out: list[OutboxMessage], expected: str) -> None:
    """The move was played and ``expected`` is the comment, exactly: in bob's mail and
    in the database."""
    assert PLAYED in out[0].body, out[0].body
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    if expected:
        block = f"alice writes:\n{wrap(expected, 72, '  ')}\n"
        assert block in to_bob.body, to_bob.body
        tail = to_bob.body.split(block, 1)[1]
        assert "writes:" not in tail and "Summary of Honey Donuts" not in tail
    else:
        assert "alice writes:" not in to_bob.body
    with db.transaction() as s:
        [move] = s.scalars(select(Move)).all()
        assert (move.notation, move.comment or "") == ("a1-a2", expected)


def send_text(mailer: Mailer, to: str, body: str, **headers: str) -> list[OutboxMessage]:
    return mailer.send(SUBJECT, body, To=to, **headers)


# -- plain text ----------------------------------------------------------------------
ATTRIBUTIONS = {
    "gmail": "On Sun, 22 Nov 2026 at 18:02, pbmserv <pbmserv@localhost> wrote:",
    "gmail wrapped in two": "On Sun, 22 Nov 2026 at 18:02, pbmserv <\n"
                            "pbmserv+b1u1m1t0-abc@localhost> wrote:",
    "iphone in three": "On Nov 22, 2026, at 18:02, pbmserv\n<pbmserv@localhost>\nwrote:",
    "german": "Am So., 22. Nov. 2026 um 18:02 Uhr schrieb pbmserv <pbmserv@localhost>:",
    "spanish": "El dom, 22 nov 2026 a las 18:02, pbmserv (<pbmserv@localhost>)\nescribió:",
    "french": "Le dim. 22 nov. 2026 à 18:02, pbmserv <pbmserv@localhost> a écrit :",
    "dutch": "Op zo 22 nov. 2026 om 18:02 schreef pbmserv <pbmserv@localhost>:",
    "russian": "вс, 22 нояб. 2026 г. в 18:02, pbmserv <pbmserv@localhost>:",  # noqa: RUF001
    "russian android": "22.11.2026 18:02 пользователь \"pbmserv\" <pbmserv@localhost>"
                       " написал:",
    "ukrainian": "22 лист. 2026 р. о 18:02 pbmserv <pbmserv@localhost> пише:",  # noqa: RUF001
    "polish": "W dniu nd., 22.11.2026 o 18:02 pbmserv <pbmserv@localhost>\nnapisał(a):",
    "polish thunderbird": "W dniu 22.11.2026 o 18:02, pbmserv pisze:",
    "portuguese": "Em dom., 22 de nov. de 2026 às 18:02, pbmserv <pbmserv@localhost>"
                  " escreveu:",
    "hungarian": "pbmserv <pbmserv@localhost> ezt írta (időpont: 2026. nov. 22., V,"
                 " 18:02):",
    "norwegian": "søn. 22. nov. 2026 kl. 18:02 skrev pbmserv <pbmserv@localhost>:",
    "swedish": "Den sön 22 nov. 2026 kl 18:02 skrev pbmserv <pbmserv@localhost>:",
    "italian": "Il giorno dom 22 nov 2026 alle ore 18:02 pbmserv <pbmserv@localhost>\n"
               "ha scritto:",
    "czech": "ne 22. 11. 2026 v 18:02 odesílatel pbmserv <pbmserv@localhost> napsal:",
    "chinese": "pbmserv <pbmserv@localhost> 于2026年11月22日周日 18:02写道：",  # noqa: RUF001
    "japanese": "2026年11月22日(日) 18:02 pbmserv <pbmserv@localhost>:",
    "yandex": "22.11.2026, 18:02, \"pbmserv\" <pbmserv@localhost>:",
    "zoho": "---- On Sun, 22 Nov 2026 18:02:00 +0100 pbmserv@localhost wrote ----",
    "thunderbird": "On 22/11/2026 18:02, pbmserv wrote:",
}


@pytest.mark.parametrize("name", sorted(ATTRIBUTIONS))
def test_an_attribution_over_the_quoted_board(mailer: Mailer, db: Database, name: str) -> None:
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{OWN}\n\n{ATTRIBUTIONS[name]}\n\n{QUOTED}")
    comment_seen(db, out, OWN)


@pytest.mark.parametrize("name", sorted(ATTRIBUTIONS))
def test_an_attribution_over_the_unquoted_board(mailer: Mailer, db: Database,
                                                name: str) -> None:
    """Gmail on phones, and many webmails, copy the original below without '>'."""
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{OWN}\n\n{ATTRIBUTIONS[name]}\n\n{BOARD}")
    comment_seen(db, out, OWN)


@pytest.mark.parametrize("name", sorted(ATTRIBUTIONS))
def test_a_move_written_below_the_quote(mailer: Mailer, db: Database, name: str) -> None:
    """Bottom posting, whatever the client's language: the attribution and the quote
    are passed over, the move is read below them, and the words under it kept."""
    to = start(mailer)
    out = send_text(mailer, to, f"{ATTRIBUTIONS[name]}\n{QUOTED}\na1-a2\n{OWN}\n")
    comment_seen(db, out, OWN)


def test_an_attribution_without_date_or_address(mailer: Mailer, db: Database) -> None:
    """"pbmserv wrote:" (older Thunderbird, Apple Mail) is an attribution only above a
    quote: the same words above the writer's own lines are theirs."""
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{OWN}\n\npbmserv wrote:\n\n{QUOTED}")
    comment_seen(db, out, OWN)


def test_as_i_wrote_stays(mailer: Mailer, db: Database) -> None:
    to = start(mailer)
    own = "As I wrote:\nthe corner is the key.\nOn Sunday, you wrote:\nnothing at all."
    out = send_text(mailer, to, f"a1-a2\n{own}\n")
    comment_seen(db, out, own)


def test_an_attribution_right_below_the_words(mailer: Mailer, db: Database) -> None:
    """No blank line between the words and a wrapped attribution: the last own line
    stays, though the attribution's first line says no date or address."""
    to = start(mailer)
    out = send_text(mailer, to, "a1-a2\nThanks\npbmserv via Honey Donuts <\n"
                                "pbmserv@localhost> schrieb am So., 22. Nov. 2026:\n" + QUOTED)
    comment_seen(db, out, "Thanks")


HEADER_BLOCKS = {
    "outlook": "________________________________\nFrom: pbmserv <pbmserv@localhost>\n"
               "Sent: Sunday, November 22, 2026 6:02 PM\nTo: Alice <alice@example.org>\n"
               "Subject: New Honey Donuts Board 101 alice",
    "outlook original message": "-----Original Message-----\nFrom: pbmserv "
                                "[mailto:pbmserv@localhost]\nSent: Sunday, November 22, "
                                "2026 6:02 PM\nTo: alice@example.org\nSubject: Board 101",
    "outlook bold": "*From:* pbmserv [mailto:pbmserv@localhost]\n*Sent:* Sunday, "
                    "November 22, 2026 6:02 PM\n*To:* alice@example.org\n*Subject:* Board",
    "german": "-----Ursprüngliche Nachricht-----\nVon: pbmserv <pbmserv@localhost>\n"
              "Gesendet: Sonntag, 22. November 2026 18:02\nAn: alice@example.org\n"
              "Betreff: New Honey Donuts Board 101 alice",
    "french": "De : pbmserv <pbmserv@localhost>\nEnvoyé : dimanche 22 novembre 2026 18:02\n"
              "À : alice@example.org\nObjet : New Honey Donuts Board 101 alice",
    "french webmail": "-------- Message d'origine --------\nDe : pbmserv <pbmserv@localhost>\n"
                      "Date : 22/11/26 18:02 (GMT+01:00)\nÀ : alice@example.org",
    "dutch": "Van: pbmserv <pbmserv@localhost>\nVerzonden: zondag 22 november 2026 18:02\n"
             "Aan: alice@example.org\nOnderwerp: New Honey Donuts Board 101 alice",
    "italian": "Da: pbmserv <pbmserv@localhost>\nInviato: domenica 22 novembre 2026 18:02\n"
               "A: alice@example.org\nOggetto: New Honey Donuts Board 101 alice",
    "swedish": "Från: pbmserv <pbmserv@localhost>\nSkickat: den 22 november 2026 18:02\n"
               "Till: alice@example.org\nÄmne: New Honey Donuts Board 101 alice",
    "spanish": "-----Mensaje original-----\nDe: pbmserv <pbmserv@localhost>\n"
               "Enviado: domingo, 22 de noviembre de 2026 18:02\nPara: alice@example.org\n"
               "Asunto: New Honey Donuts Board 101 alice",
    "chinese": "发件人: pbmserv <pbmserv@localhost>\n发送时间: 2026年11月22日 18:02\n"
               "收件人: alice\n主题: New Honey Donuts Board 101 alice",
    "outlook with blank lines": "From: pbmserv\n\nSent: Sunday, November 22, 2026\n\n"
                                "To: alice\n\nSubject: Board 101",
    "forward": "---------- Forwarded message ---------\nFrom: pbmserv <pbmserv@localhost>\n"
               "Date: Sun, Nov 22, 2026 at 6:02 PM\nSubject: New Honey Donuts Board 101",
}


@pytest.mark.parametrize("name", sorted(HEADER_BLOCKS))
def test_a_header_block_over_the_board(mailer: Mailer, db: Database, name: str) -> None:
    """Outlook's way: no quote marks at all, a header block, then the whole board mail
    (with the player's own address, name and the like)."""
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{OWN}\n\n{HEADER_BLOCKS[name]}\n\n{BOARD}")
    comment_seen(db, out, OWN)


SIGNATURES = {
    "dash dash space": "-- \nAlice Example\n+1 555 0100\nalice@example.org",
    "iphone": "Sent from my iPhone",
    "android": "Sent from my Galaxy",
    "outlook mobile": "Get Outlook for Android<https://aka.ms/ghei36>",
    "outlook ios french": "Envoyé à partir de Outlook pour iOS<https://aka.ms/o0ukef>",
    "german iphone": "Von meinem iPhone gesendet",
    "french iphone": "Envoyé de mon iPhone",
    "spanish": "Enviado desde mi iPhone",
    "dutch": "Verstuurd vanaf mijn iPhone",
    "norwegian": "Sendt fra min iPad",
    "windows mail": "Sent from Mail for Windows 10",
    "yahoo": "Sent from Yahoo Mail on Android",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_a_signature_ends_the_comment(mailer: Mailer, db: Database, name: str) -> None:
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{OWN}\n\n{SIGNATURES[name]}\n\n"
                                f"{ATTRIBUTIONS['gmail']}\n{QUOTED}")
    comment_seen(db, out, OWN)


def test_words_that_only_look_like_a_signature_or_attribution_stay(
        mailer: Mailer, db: Database) -> None:
    own = ("Sent from my desk, which is much easier than my phone.\n"
           "On Sunday I wrote: nothing beats an early corner.\n"
           "From: a1\nTo: a2\n"
           "And here is a fix -- this is not a signature.")
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{own}\n\n{ATTRIBUTIONS['gmail']}\n{QUOTED}")
    comment_seen(db, out, own)


def test_a_board_quoted_with_bars(mailer: Mailer, db: Database) -> None:
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n{OWN}\n\n{PIPED}")
    comment_seen(db, out, OWN)


def test_an_answer_below_the_quote_and_between_its_parts(mailer: Mailer, db: Database) -> None:
    """Bottom posting and answers written between the quoted lines are the writer's."""
    to = start(mailer)
    body = (f"{ATTRIBUTIONS['thunderbird']}\n> Summary of Honey Donuts Board 101\n\n"
            "a1-a2\nThe corner is mine.\n\n> Alice, it is your move.\n\nIt was!\n")
    out = send_text(mailer, to, body)
    comment_seen(db, out, "The corner is mine.\n\nIt was!")


def test_a_long_quoted_line_wrapped_by_the_client(mailer: Mailer, db: Database) -> None:
    """A client that wraps a long quoted line leaves its rest unquoted between quoted
    lines: that rest is part of the quote."""
    to = start(mailer)
    body = ("a1-a2\nNice.\n\n" + ATTRIBUTIONS["thunderbird"] + "\n"
            "> Bob writes: this is a very long line of the board mail that the client\n"
            "wrapped here\n> and the quote goes on.\n")
    out = send_text(mailer, to, body)
    comment_seen(db, out, "Nice.")


def test_a_reply_with_nothing_of_the_writers_own(mailer: Mailer, db: Database) -> None:
    to = start(mailer)
    out = send_text(mailer, to, f"a1-a2\n\n{HEADER_BLOCKS['outlook']}\n\n{BOARD}")
    comment_seen(db, out, "")


def test_a_flowed_reply_keeps_the_words_below_the_quote(mailer: Mailer, db: Database) -> None:
    """format=flowed: a quoted line ending in a space does not flow into the unquoted
    line below it (Thunderbird's bottom posting)."""
    to = start(mailer)
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "alice@example.org", to, SUBJECT
    msg.set_content("a1-a2\nOn 22/11/2026 18:02, pbmserv wrote:\n> Your move \nGood game\n",
                    params={"format": "flowed"})
    out = mailer.send_raw(msg.as_bytes(policy=policy.SMTP))
    comment_seen(db, out, "Good game")


def test_a_command_mail_comment_is_cut_too(mailer: Mailer, db: Database) -> None:
    """Not only replies by reply address: a command in the body, and its comment."""
    start(mailer)
    body = (f"honeydonuts move 101 alice pw-alice a1-a2\n{OWN}\n\n"
            f"{HEADER_BLOCKS['german']}\n\n{BOARD}\n")
    out = mailer.send(SUBJECT, body)
    comment_seen(db, out, OWN)


# -- HTML only -----------------------------------------------------------------------
HTML = {
    "thunderbird": '<div class="moz-cite-prefix">On 22/11/2026 18:02, pbmserv wrote:<br>'
                   '</div><blockquote type="cite" cite="mid:x@localhost"><pre>{board}</pre>'
                   "</blockquote>",
    "gmail": '<div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Sun, 22 Nov '
             "2026 at 18:02, pbmserv &lt;pbmserv@localhost&gt; wrote:<br></div>"
             '<blockquote class="gmail_quote" style="margin:0 0 0 .8ex">{board}'
             "</blockquote></div>",
    "outlook divRplyFwdMsg": '<hr style="display:inline-block;width:98%" tabindex="-1">'
                             '<div id="divRplyFwdMsg" dir="ltr"><b>From:</b> pbmserv<br>'
                             "<b>Sent:</b> Sunday, November 22, 2026 6:02 PM<br><b>To:</b> "
                             "alice</div><div>{board}</div>",
    "outlook border-top": '<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:'
                          '3.0pt 0in 0in 0in"><p class="MsoNormal"><b>From:</b> pbmserv'
                          "<br><b>Sent:</b> Sunday<br><b>To:</b> alice</p></div>"
                          "<p>{board}</p>",
    "outlook 2003 hr": '<div><hr size=3 width="100%" align=center tabindex=-1>'
                       "<font><b>From:</b> pbmserv<br><b>Sent:</b> Sunday</font></div>"
                       "<p>{board}</p>",
    "hotmail": '<hr id="stopSpelling">Date: Sun, 22 Nov 2026 18:02:00 +0100<br>'
               "Subject: Board<br>From: pbmserv@localhost<br>To: alice<br><br>{board}",
    "yahoo": '<div class="yahoo_quoted"><div>On Sunday, November 22, 2026, 6:02 PM, '
             "pbmserv &lt;pbmserv@localhost&gt; wrote:</div><div>{board}</div></div>",
    "mail.ru": "<div>Sun, 22 Nov 2026 18:02:00 +0100 от pbmserv &lt;pbmserv@localhost"
               '&gt;:<br><blockquote style="border-left:1px solid #0857A6">{board}'
               "</blockquote></div>",
    "yandex": "<div>22.11.2026, 18:02, \"pbmserv\" &lt;pbmserv@localhost&gt;:</div>"
              "<blockquote>{board}</blockquote>",
    "apple mail": "<div><br><blockquote type=\"cite\"><div>pbmserv wrote:</div><br>"
                  "<div>{board}</div></blockquote></div>",
    "apple mail, attribution outside": "<div>pbmserv wrote:</div><blockquote type=\"cite\">"
                                       "<div>{board}</div></blockquote>",
    "plain hr": "<hr>{board}",
}


def html_reply(to: str, own_html: str, quote: str) -> bytes:
    board = BOARD.replace("<", "&lt;").replace(">", "&gt;").replace("\n", "<br>\n")
    html = (f"<html><head><style>p {{ margin: 0 }}</style></head><body>"
            f"<div>a1-a2</div>{own_html}{quote.format(board=board)}</body></html>")
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "alice@example.org", to, SUBJECT
    msg.set_content(html, subtype="html")
    return msg.as_bytes(policy=policy.SMTP)


@pytest.mark.parametrize("name", sorted(HTML))
def test_an_html_only_reply(mailer: Mailer, db: Database, name: str) -> None:
    to = start(mailer)
    own = "<div>Good luck, Bob!</div><div>This one is for the cup.</div><div><br></div>"
    out = mailer.send_raw(html_reply(to, own, HTML[name]))
    comment_seen(db, out, OWN)


def test_an_html_reply_laid_out_in_its_source(mailer: Mailer, db: Database) -> None:
    """Line breaks and indents of the HTML source are no text: the comment reads as
    the mail program shows it."""
    to = start(mailer)
    own = ("\n  <div>\n      Good luck,   Bob!\n  </div>\n  <div>This one\n"
           "      is for the cup.</div>\n  <pre>\n</pre>")
    out = mailer.send_raw(html_reply(to, own, HTML["thunderbird"]))
    comment_seen(db, out, OWN)


def test_an_html_reply_written_below_the_quote(mailer: Mailer, db: Database) -> None:
    """Thunderbird bottom posting in HTML: the quote is left out, the move below read."""
    to = start(mailer)
    quote = HTML["thunderbird"].format(board="Summary of Honey Donuts Board 101")
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "alice@example.org", to, SUBJECT
    msg.set_content(f"<html><body>{quote}<p>a1-a2</p><p>Your turn!</p></body></html>",
                    subtype="html")
    out = mailer.send_raw(msg.as_bytes(policy=policy.SMTP))
    comment_seen(db, out, "Your turn!")


# -- addresses -----------------------------------------------------------------------
def test_an_address_in_a_comment_is_masked_everywhere(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    """In bob's mail, in the database, on the web page and in the records."""
    to = start(mailer)
    out = send_text(mailer, to, "a1-a2\nWrite to me at alice.home@example.net (or "
                                "<a+b@mail.example.co.uk>) any time.\n")
    comment_seen(db, out, "Write to me at [address hidden] (or <[address hidden]>) any time.")
    with TestClient(create_app(db, settings)) as client:
        page = client.get("/boards/honeydonuts/101?ply=1").text
    assert "Write to me at [address hidden] (or &lt;[address hidden]&gt;) any time." in page
    assert "example.net" not in page and "mail.example" not in page


def test_an_address_stored_before_masking_is_masked_when_published(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    """A comment kept from before the upgrade is masked on the page and in records."""
    to = start(mailer)
    send_text(mailer, to, "a1-a2\nhello\n")
    with db.transaction() as s:
        move = s.scalars(select(Move)).one()
        move.comment = "old news: bob.old@example.net"
    with TestClient(create_app(db, settings)) as client:
        page = client.get("/boards/honeydonuts/101?ply=1").text
    assert "old news: [address hidden]" in page and "bob.old@" not in page
    with db.transaction() as s:
        board = s.scalars(select(Board)).one()
        record = record_of(s, board, "test")
    assert [m.comment for m in record.moves] == ["old news: [address hidden]"]
    assert "{old news: [address hidden]}" in to_text(record)
    assert to_json(record)["moves"][0]["comment"] == "old news: [address hidden]"


def test_an_address_in_a_chat_is_masked(mailer: Mailer) -> None:
    start(mailer)
    out = mailer.send("honeydonuts chat 101 alice pw-alice", "Mail me: alice@example.net\n")
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    assert "Mail me: [address hidden]" in to_bob.body and "alice@example.net" not in to_bob.body

