"""The second route of an alert, for when mail cannot carry it (the relay takes no
mail, the administrator's address refuses it, outgoing mail is late): the log at
ERROR (the journal, ``log_file``), syslog (facility mail, whenever its socket is
there, as the audit goes), and ``alert_command``, run with the alert's text on its
standard input (a pager, a chat webhook).

``mail_alerts`` decides what goes this way, in its transaction; ``tell`` runs after
it is committed, so no command runs while the database is held.
"""

from __future__ import annotations

import logging
import shlex
import subprocess

from pbmserv.config import Settings
from pbmserv.logs import ALERT

log = logging.getLogger(ALERT)
#: the longest an alert_command may run
COMMAND_SECONDS = 30


def tell(settings: Settings, subject: str, text: str, why: str) -> None:
    """Log an alert mail cannot carry at ERROR (and to syslog), and run
    ``alert_command`` with it; a command that fails is logged, never raised."""
    first = " ".join(text.strip().split("\n\n", 1)[0].split())
    log.error("ALERT %s (not by mail alone: %s): %s", subject, why, first[:1000])
    if settings.alert_command is None:
        return
    try:
        done = subprocess.run(shlex.split(settings.alert_command),
                              input=f"Subject: {subject}\n\n{text}".encode(),
                              capture_output=True, timeout=COMMAND_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.error("alert_command %r could not tell the alert: %s", settings.alert_command,
                  exc)
        return
    if done.returncode != 0:
        log.error("alert_command %r exited %s: %s", settings.alert_command,
                  done.returncode, done.stderr.decode(errors="replace").strip()[-300:])
