"""A server run from a mailbox, with Postfix as the provider's submission server: it
takes the mailbox's login through Dovecot (SASL), only over TLS (STARTTLS), and relays
nothing for anyone without it.  pbmserv reads the Dovecot mailbox by IMAP and answers
through that Postfix; Postfix hands the answers to the players' MX (a sink).

Needs Postfix (as for tests/test_postfix.py) and Dovecot (tests/mailservers.py)."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from email import message_from_bytes, policy
from pathlib import Path

import pytest

from tests.mailservers import PASSWORD, USER, Dovecot, dovecot, wait_for
from tests.test_imap_serve import ADDRESS, Served, command
from tests.test_postfix import Instance, Sink, _why_not, private_postfix, sink

__all__ = ["dovecot", "sink"]  # the fixtures, used by name
pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


def submission_cf(server: Dovecot) -> str:
    """main.cf lines: Postfix's smtpd as a provider's submission port."""
    return f"""
smtpd_tls_cert_file = {server.cert}
smtpd_tls_key_file = {server.key}
smtpd_tls_security_level = encrypt
smtpd_tls_auth_only = yes
smtpd_sasl_auth_enable = yes
smtpd_sasl_type = dovecot
smtpd_sasl_path = {server.auth_socket}
# the loopback is no trusted network here: a login, or nothing
smtpd_relay_restrictions = permit_sasl_authenticated, reject
"""


@pytest.fixture
def postfix(dovecot: Dovecot, sink: tuple[Sink, int]) -> Iterator[Instance]:
    dovecot.key.chmod(0o644)  # smtpd reads it as the user postfix
    with private_postfix(sink[1], submission_cf(dovecot)) as instance:
        yield instance


def test_answers_go_out_through_postfix_with_the_mailbox_login(
        dovecot: Dovecot, postfix: Instance, sink: tuple[Sink, int], tmp_path: Path) -> None:
    keeper, _ = sink
    # without a login Postfix relays nothing: it is a real submission server
    with smtplib.SMTP("127.0.0.1", postfix.port, timeout=30) as client:
        client.starttls(context=dovecot.context())
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            client.sendmail("x@games.test", ["someone@example.org"], b"Subject: x\r\n\r\nx\r\n")
    # the mailbox's own login and password, checked by Dovecot for Postfix
    served = Served(tmp_path, dovecot, postfix.port, relay_user=USER, relay_password=PASSWORD)
    try:
        served.start()
        served.wait_idle()
        dovecot.deliver(command("signup alice secret-a", "alice@example.org", 1))
        wait_for(lambda: bool(keeper.to("alice@example.org")),
                 lambda: "no answer reached the players' MX:\n" + served.text()
                 + postfix.log()[-3000:])
    finally:
        served.stop()
    [raw] = keeper.to("alice@example.org")
    answer = message_from_bytes(raw, policy=policy.default)
    assert answer["In-Reply-To"] == "<imap1@example.org>"
    assert answer["From"] == f"pbmserv <{ADDRESS}>"
    assert f"sasl_method=PLAIN, sasl_username={USER}" in postfix.log()
