"""Alerts that arrive, through a real Postfix set up as docs/admin.md section 5 says:
the game domain a relay domain whose recipient map once knew only the game address.
``config check`` finds that the relay refuses the admin address; an alert refused so
counts against no address, makes ``status`` exit 3 and goes to ``alert_command``;
``postfix-maps`` maps postmaster@ and abuse@ to the administrator (RFC 2142), after
which the alert arrives; a hand fix in a map is never lost silently."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.base import utcnow
from pbmserv.db.models import Bounce, MailSuspension, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, OutboxStatus
from pbmserv.sender.delivery import Sender
from pbmserv.service import incidents
from pbmserv.timers import run_alerts
from tests.test_postfix import (
    POSTFIX,
    POSTMAP,
    Sink,
    _why_not,
    map_text,
    pbmserv_cli,
    private_postfix,
    sink,
    wait_for,
)

__all__ = ["sink"]  # the fixture
pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


def _postmap(path: Path, config: Path) -> None:
    assert POSTMAP is not None
    subprocess.run([POSTMAP, "-c", str(config), f"hash:{path}"], check=True)


def test_an_alert_reaches_the_admin_only_once_postfix_maps_maps_postmaster(
        sink: tuple[Sink, int], tmp_path: Path) -> None:
    keeper, sink_port = sink
    with private_postfix(sink_port) as postfix:
        root = postfix.root
        # the maps as an older pbmserv wrote them: the game addresses alone
        for where, address in (("lmtp", "pbmserv@games.test"), ("pipe", "pipe@games.test")):
            (root / where / "pbmserv_recipients").write_text(f"{address}\tOK\n")
            _postmap(root / where / "pbmserv_recipients", postfix.config)
        (root / "lmtp" / "pbmserv_aliases").write_text("")
        _postmap(root / "lmtp" / "pbmserv_aliases", postfix.config)
        paged = tmp_path / "paged.txt"
        page = tmp_path / "page-me"
        page.write_text(f"#!/bin/sh\ncat >> {paged}\n")
        page.chmod(0o755)
        url = f"sqlite:///{tmp_path / 'pbmserv.sqlite3'}"
        config = tmp_path / "pbmserv.toml"
        config.write_text(f'database_url = "{url}"\naddresses = "pbmserv@games.test"\n'
                          f'relay = "127.0.0.1:{postfix.port}"\nsmtp = "off"\n'
                          f'lmtp = "127.0.0.1:{postfix.lmtp}"\n'
                          f'alert_command = "{page}"\n')
        env = {"PBMSERV_CONFIG": "", "MAIL_CONFIG": str(postfix.config)}
        db = Database(url)
        migrate.ensure(db)
        settings = Settings.load(config, env={})
        checked = pbmserv_cli("--config", str(config), "config", "check", **env)
        assert checked.returncode == 1, checked.stdout
        (line,) = [ln for ln in checked.stdout.splitlines() if " admin_address " in ln]
        assert line.startswith("FAIL admin_address the relay refuses mail to "
                               "postmaster@games.test: 550 5.1.1 <postmaster@games.test>: "
                               "Recipient address rejected: User unknown in relay recipient "
                               "table; alerts would not arrive (the game domain's postmaster@ "
                               "and abuse@ must go somewhere: 'pbmserv postfix-maps"), line

        # an incident: its alert is refused at RCPT, which counts against no address
        now = utcnow()
        with db.transaction() as s:
            incidents.record(s, AlertKind.OUTBOX_FAILED, "outbox 99 to x@example.org: 554",
                             now - timedelta(minutes=2), item="99")
            s.add(OutboxMessage(message_id="<f@games.test>", to_addr="x@example.org",
                                to_key="x@example.org", subject="s", body="b\n",
                                status=OutboxStatus.FAILED))
        assert run_alerts(db, settings, now) == 1
        Sender(db, settings).send_due()
        with db.reading() as s:
            (alert_mail,) = s.scalars(select(OutboxMessage)
                                      .where(OutboxMessage.alert_id.is_not(None)))
            assert alert_mail.status == OutboxStatus.FAILED
            assert "User unknown in relay recipient table" in (alert_mail.last_error or "")
            assert list(s.scalars(select(Bounce))) == []
            assert list(s.scalars(select(MailSuspension))) == []
        status = pbmserv_cli("--config", str(config), "status", **env)
        assert status.returncode == 3, status.stdout
        assert "attend   the administrator cannot be reached" in status.stdout
        run_alerts(db, settings, now + timedelta(minutes=2))
        assert "alerts do not reach the administrator" in paged.read_text()

        # the maps as pbmserv writes them now: postmaster@ to the administrator
        fixed = pbmserv_cli("--config", str(config), "postfix-maps", "--output-dir",
                            str(root / "lmtp"), **env, PBMSERV_ADMIN_ADDRESS="admin@example.org")
        assert fixed.returncode == 0, fixed.stderr
        assert map_text(root / "lmtp" / "pbmserv_aliases") == (
            "postmaster@games.test\tadmin@example.org\nabuse@games.test\tadmin@example.org\n")
        assert POSTFIX is not None
        subprocess.run([POSTFIX, "-c", str(postfix.config), "reload"], check=True,
                       capture_output=True)
        checked = pbmserv_cli("--config", str(config), "config", "check", **env)
        (line,) = [ln for ln in checked.stdout.splitlines() if " admin_address " in ln]
        assert line.startswith("ok   admin_address the relay takes mail for "
                               "postmaster@games.test"), checked.stdout
        assert pbmserv_cli("--config", str(config), "outbox", "retry", "--all",
                           **env).returncode == 0
        Sender(db, settings).send_due()
        wait_for(lambda: bool(keeper.to("admin@example.org")),
                 lambda: "the alert did not reach the admin:\n" + postfix.log())
        (arrived,) = keeper.to("admin@example.org")
        assert b"To: postmaster@games.test" in arrived
        assert b"Subject: pbmserv: 1 outgoing mail refused" in arrived
        # an hour on, nothing came back: the administrator is reached again, and told
        later = utcnow() + timedelta(hours=1, minutes=1)
        with db.transaction() as s:  # (the refused mail of the first alert, given up)
            s.execute(delete(OutboxMessage).where(OutboxMessage.id == 1))
        run_alerts(db, replace(settings, alert_command=None), later)
        with db.reading() as s:
            subjects = [m.subject for m in s.scalars(
                select(OutboxMessage).where(OutboxMessage.alert_id.is_not(None))
                .order_by(OutboxMessage.id))]
        assert any(x.startswith("pbmserv: resolved: alerts do not reach the administrator")
                   for x in subjects), subjects
        db.dispose()


def test_postfix_maps_never_loses_a_hand_fix_silently(tmp_path: Path) -> None:
    out = tmp_path / "postfix"
    out.mkdir()
    (out / "main.cf").write_text("compatibility_level = 3.6\n")  # for postmap
    env = {"PBMSERV_CONFIG": "", "PBMSERV_ADDRESSES": "pbmserv@games.test",
           "PBMSERV_LMTP": "127.0.0.1:8024", "PBMSERV_ADMIN_ADDRESS": "root@mail.test",
           "MAIL_CONFIG": str(out)}
    first = pbmserv_cli("postfix-maps", "--output-dir", str(out), **env)
    assert first.returncode == 0, first.stderr
    recipients = out / "pbmserv_recipients"
    recipients.write_text(recipients.read_text() + "hostmaster@games.test\tOK\n")
    again = pbmserv_cli("postfix-maps", "--output-dir", str(out), **env)
    assert again.returncode == 1
    assert f"{recipients} was changed since pbmserv wrote it (a fix by hand?): these lines " \
        "would be lost:\n    hostmaster@games.test\tOK\n" in again.stderr
    assert "hostmaster@games.test" in recipients.read_text()  # nothing written
    forced = pbmserv_cli("postfix-maps", "--output-dir", str(out), "--force", **env)
    assert forced.returncode == 0, forced.stderr
    assert f"kept the old pbmserv_recipients as {recipients}.bak" in forced.stdout
    assert "hostmaster@games.test" in (out / "pbmserv_recipients.bak").read_text()
    assert "hostmaster@games.test" not in recipients.read_text()
    # a map changed by the settings only (another LMTP address) is no hand fix
    moved = pbmserv_cli("postfix-maps", "--output-dir", str(out),
                        **{**env, "PBMSERV_LMTP": "/run/pbmserv/lmtp.sock"})
    assert moved.returncode == 0, moved.stderr
    assert map_text(out / "pbmserv_transport") == \
        "pbmserv@games.test\tlmtp:unix:/run/pbmserv/lmtp.sock\n"
    assert os.path.exists(out / "pbmserv_recipients.db")  # postmap ran
