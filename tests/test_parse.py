"""Reading mail: where commands come from, decoding, and what must not be answered."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from pbmserv.commands import is_command
from pbmserv.mail.parse import parse_message
from tests.conftest import make_mail


def parse(raw: bytes, envelope_from: str = "alice@example.org"):  # type: ignore[no-untyped-def]
    return parse_message(raw, ("pbmserv@localhost",), envelope_from, is_command)


@pytest.mark.parametrize("subject", [
    "Re: help", "RE: re: help", "Fwd: help", "FW: help", "AW: help", "SV: Re: help",
    "Re[2]: help", "  help  ",
])
def test_reply_prefixes_are_stripped(subject: str) -> None:
    assert parse(make_mail(subject)).commands == ["help"]


def test_subject_command_and_body_comment() -> None:
    mail = parse(make_mail("honeydonuts move 101 a pw a1-a2",
                           "Nice try!\n\nOn Monday bob wrote:\n> old stuff\n"))
    assert mail.source == "subject" and mail.comment == "Nice try!"


def test_body_fallback_skips_quotes_and_blank_lines() -> None:
    mail = parse(make_mail("", "\n> quoted help\n\nlist honeydonuts\nmy comment\n-- \nsig"))
    assert mail.commands == ["list honeydonuts"] and mail.source == "body"
    assert mail.comment == "my comment"


def test_multiple_stops_at_blank_line_or_signature() -> None:
    mail = parse(make_mail("Multiple", "help\nlist\n\nignored"))
    assert mail.commands == ["help", "list"]
    mail = parse(make_mail("multiple", "help\n-- \nlist"))
    assert mail.commands == ["help"]


def _mime(body: str, cte: str, charset: str = "utf-8", subtype: str = "plain",
          subject: str = "signup älice pw") -> bytes:
    msg = EmailMessage()
    msg["From"] = "Älice <alice@example.org>"
    msg["Subject"] = subject
    msg.set_content(body, subtype=subtype, charset=charset, cte=cte)
    return msg.as_bytes()


def test_encodings_are_decoded() -> None:
    for cte in ("quoted-printable", "base64", "8bit"):
        mail = parse(_mime("Grüße, très bien\n", cte))
        assert mail.commands == ["signup älice pw"]
        assert mail.comment == "Grüße, très bien"
    latin = parse(_mime("café\n", "quoted-printable", charset="iso-8859-1"))
    assert latin.comment == "café"


def test_html_only_mail_is_read() -> None:
    raw = _mime("<html><body><p>list</p><p>hi <b>there</b></p></body></html>", "7bit",
                subtype="html", subject="")
    mail = parse(raw)
    assert mail.commands == ["list"] and mail.source == "body"


def test_format_flowed_is_joined() -> None:
    raw = (b"From: a@example.org\r\nSubject:\r\nContent-Type: text/plain; format=flowed\r\n\r\n"
           b"honeydonuts move 101 a pw \r\na1-a2\r\n")
    assert parse(raw).commands == ["honeydonuts move 101 a pw a1-a2"]


def test_a_reply_to_of_another_mailbox_is_only_named() -> None:
    """Answers go to the sender: a Reply-To naming another mailbox is kept aside (the
    processor answers it only for a mail that proves it is that account's)."""
    mail = parse(make_mail("help", **{"Reply-To": "Other <other@example.org>"}))
    assert (mail.reply_to, mail.named_reply_to) == ("alice@example.org", "other@example.org")


@pytest.mark.parametrize("reply_to", ["Alice <alice+games@example.org>",
                                      "ALICE@Example.ORG"])
def test_a_reply_to_of_the_same_mailbox_wins_over_from(reply_to: str) -> None:
    mail = parse(make_mail("help", **{"Reply-To": reply_to}))
    assert mail.reply_to == reply_to.split("<")[-1].rstrip(">").lower()
    assert mail.named_reply_to == ""


@pytest.mark.parametrize(("headers", "envelope", "reason"), [
    ({}, "<>", "bounce"),
    ({}, "MAILER-DAEMON@example.org", "bounce"),
    ({"Auto-Submitted": "auto-replied"}, "a@example.org", "Auto-Submitted: auto-replied"),
    ({"Precedence": "bulk"}, "a@example.org", "Precedence: bulk"),
    ({"Precedence": "list"}, "a@example.org", "mail through a mailing list (Precedence: list)"),
    ({"List-Id": "<g.example.org>", "Precedence": "bulk"}, "a@example.org",
     "mail through a mailing list (List-Id)"),
    ({"List-Id": "<g.example.org>", "Auto-Submitted": "auto-replied"}, "a@example.org",
     "Auto-Submitted: auto-replied"),
    ({"List-Id": "<g.example.org>", "X-Pbmserv-Loop": "localhost"}, "a@example.org",
     "our own mail came back"),
    ({"X-Pbmserv-Loop": "localhost"}, "a@example.org", "our own mail came back"),
])
def test_mail_that_must_not_be_answered(headers: dict[str, str], envelope: str,
                                        reason: str) -> None:
    assert parse(make_mail("help", **headers), envelope).silent_reason == reason


def test_auto_submitted_no_is_answered() -> None:
    assert parse(make_mail("help", **{"Auto-Submitted": "no"})).silent_reason == ""


def test_our_own_address_is_not_answered() -> None:
    assert parse(make_mail("help", sender="pbmserv@localhost")).silent_reason


@pytest.mark.parametrize("raw", [
    b"", b"\x00\xff\xfe garbage", b"Subject: \xff\xfe\r\n\r\n\x00\x01",
    b"From: <<<>>>\r\nSubject: =?bogus?x?zz?=\r\n\r\nhelp",
    b"Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nbroken",
    b"From: a@example.org\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!notbase64",
])
def test_garbage_never_raises(raw: bytes) -> None:
    mail = parse(raw, "")
    assert isinstance(mail.commands, list)
