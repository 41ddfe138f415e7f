"""Real mail servers for the tests of a server run from a mailbox: a private Dovecot
(IMAP, on loopback, with its own configuration, a passwd-file user and a self-signed
certificate) and an authenticated submission server (aiosmtpd with AUTH, over
STARTTLS or TLS from the first byte, with that certificate).

Dovecot is Debian's ``dovecot-imapd`` (``.ci/run`` installs it); without it, or
without ``openssl`` to make the certificate, the tests that need it are skipped.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword

from tests.conftest import free_port

DOVECOT = shutil.which("dovecot", path="/usr/sbin:/usr/bin:/sbin:/bin")
DOVEADM = shutil.which("doveadm", path="/usr/sbin:/usr/bin:/sbin:/bin")
OPENSSL = shutil.which("openssl")
USER, PASSWORD = "clubgames", "app-password-1234"


def why_no_dovecot() -> str | None:
    if DOVECOT is None or DOVEADM is None:
        return "Dovecot is not installed (apt-get install dovecot-imapd)"
    if OPENSSL is None:
        return "openssl is not installed (it makes the test certificate)"
    if os.getuid() == 0:
        try:
            pwd.getpwnam("dovenull")
        except KeyError:
            return "the user dovenull (made by dovecot-core) is missing"
    return None


def wait_for(what: Callable[[], bool], describe: Callable[[], str], limit: float = 60) -> None:
    """Wait until ``what()`` holds; fail with ``describe()`` if it never does."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if what():
            return
        time.sleep(0.05)
    raise AssertionError(describe())


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, and its key."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    assert OPENSSL is not None
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


_CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <{cert}
ssl_key = <{key}
auth_mechanisms = plain login
default_internal_user = {internal}
default_internal_group = {internal_group}
default_login_user = {login}
first_valid_uid = {first_uid}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/home/%u
}}
mail_location = maildir:~/Maildir
namespace inbox {{
  inbox = yes
  separator = /
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
service auth {{
  user = {internal}
  # for a Postfix that lets users submit mail with the mailbox's login (SASL)
  unix_listener {root}/auth-postfix {{
    mode = 0666
  }}
}}
"""


#: what a Dovecot without IDLE says it can do (``Dovecot(idle=False)``): a server that
#: is polled
NO_IDLE = ("imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE SORT "
           "MULTIAPPEND UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED ESEARCH "
           "SEARCHRES WITHIN LIST-STATUS MOVE LITERAL+\n")


class Dovecot:
    """A private Dovecot: ``imaps`` and ``imap`` (STARTTLS) ports on 127.0.0.1; with
    ``idle`` False it does not offer IDLE (a mailbox that is polled)."""

    def __init__(self, root: Path, *, idle: bool = True) -> None:
        self.root = root
        self.cert, self.key = make_certificate(root)
        self.imaps, self.imap = free_port(), free_port()
        (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        (root / "home").mkdir()
        (root / "state").mkdir()
        me = pwd.getpwuid(os.getuid())
        if os.getuid() == 0:  # Dovecot keeps root out of its login and mail processes
            mail = pwd.getpwnam("nobody")
            uid, gid, login, first = mail.pw_uid, mail.pw_gid, "dovenull", 100
            shutil.chown(root / "home", uid, gid)
        else:
            uid, gid, login, first = me.pw_uid, me.pw_gid, me.pw_name, 0
        self.config = root / "dovecot.conf"
        self.config.write_text(_CONFIG.format(
            root=root, cert=self.cert, key=self.key, internal=me.pw_name,
            internal_group=_group(me.pw_gid), login=login, first_uid=first, uid=uid, gid=gid,
            imap=self.imap, imaps=self.imaps) + ("" if idle else NO_IDLE))
        self.proc: subprocess.Popen[bytes] | None = None
        #: Dovecot's authentication socket for Postfix (smtpd_sasl_type = dovecot)
        self.auth_socket = root / "auth-postfix"

    def start(self) -> None:
        assert DOVECOT is not None
        self.proc = subprocess.Popen([DOVECOT, "-F", "-c", str(self.config)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(self._answers, lambda: "Dovecot did not start:\n" + self.log(), 30)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def _answers(self) -> bool:
        try:
            with self.client():
                return True
        except Exception:
            return False

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))

    def client(self) -> Any:
        """A logged-in IMAPClient (a context manager: it logs out at the end)."""
        from imapclient import IMAPClient

        client = IMAPClient("127.0.0.1", self.imaps, ssl=True, ssl_context=self.context(),
                            timeout=10)
        client.login(USER, PASSWORD)
        return client

    def deliver(self, raw: bytes, folder: str = "INBOX") -> None:
        """Put a mail into a folder, as the provider's MTA would (IMAP APPEND)."""
        with self.client() as client:
            client.append(folder, raw)

    def create_folder(self, folder: str) -> None:
        with self.client() as client:
            client.create_folder(folder)

    def messages(self, folder: str = "INBOX") -> dict[int, tuple[bytes, ...]]:
        """The UIDs in a folder, each with its flags."""
        with self.client() as client:
            client.select_folder(folder, readonly=True)
            uids = client.search(["ALL"])
            if not uids:
                return {}
            return {int(uid): tuple(flags) for uid, flags in client.get_flags(uids).items()}

    def kick(self) -> None:
        """Cut every IMAP connection of the user (``doveadm kick``)."""
        assert DOVEADM is not None
        subprocess.run([DOVEADM, "-c", str(self.config), "kick", USER], check=True,
                       capture_output=True)


def _group(gid: int) -> str:
    import grp

    return grp.getgrgid(gid).gr_name


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    why = why_no_dovecot()
    if why is not None:
        pytest.skip(why)
    # not pytest's tmp_path: Dovecot's unprivileged processes must reach the folder
    root = Path(tempfile.mkdtemp(prefix="pbmserv-dovecot-"))
    root.chmod(0o755)
    server = Dovecot(root)
    try:
        server.start()
    except AssertionError as exc:
        server.stop()
        pytest.skip(f"Dovecot cannot run here: {str(exc)[-400:]}")
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


class Submission:
    """An authenticated submission server: it takes mail only after AUTH with the
    right login, only over TLS; it keeps what it takes."""

    def __init__(self, user: str, password: str) -> None:
        self.user, self.password = user, password
        self.received: list[Envelope] = []
        self.logins: list[tuple[str, bool]] = []

    def authenticate(self, server: SMTP, session: Any, envelope: Envelope, mechanism: str,
                     auth_data: Any) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = auth_data.login.decode()
        good = login == self.user and auth_data.password.decode() == self.password
        self.logins.append((login, good))
        return AuthResult(success=good, handled=False)

    async def handle_DATA(self, server: SMTP, session: Any, envelope: Envelope) -> str:
        self.received.append(envelope)
        return "250 2.0.0 Ok: queued"

    def to(self, address: str) -> list[bytes]:
        out = []
        for envelope in self.received:
            raw = envelope.original_content or envelope.content or b""
            if address in envelope.rcpt_tos:
                out.append(raw.encode() if isinstance(raw, str) else bytes(raw))
        return out


def start_submission(submission: Submission, cert: Path, key: Path, *,
                     implicit_tls: bool) -> tuple[Controller, int]:
    """The server on a free port of 127.0.0.1: STARTTLS required (port 587's way), or
    TLS from the first byte (port 465's)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    port = free_port()
    options: dict[str, Any] = {"authenticator": submission.authenticate,
                               "auth_required": True, "auth_require_tls": True}
    if implicit_tls:
        # aiosmtpd's auth_require_tls looks for STARTTLS only (and warns, per session,
        # of AUTH without it): here all of it is TLS
        options["auth_require_tls"] = False
        controller = Controller(submission, hostname="127.0.0.1", port=port,
                                ssl_context=context, server_hostname="localhost", **options)
    else:
        controller = Controller(submission, hostname="127.0.0.1", port=port,
                                tls_context=context, require_starttls=True,
                                server_hostname="localhost", **options)
    controller.start()
    return controller, port



class CuttingProxy:
    """A TCP proxy in front of a server (the Dovecot's imaps port) that cuts the
    connections through it as a network or a provider does: ``reset()`` ends each one
    with a TCP reset, no BYE said (a NAT router that forgot it, a provider's process
    killed); ``go_silent()`` drops everything sent either way and keeps the connections
    open (a cable pulled).  New connections are carried as usual after either."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._pairs: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        self._silent: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        #: connections carried so far
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                continue
            silent = threading.Event()
            with self._lock:
                self._pairs.append((client, server, silent))
                self.accepted += 1
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b, silent), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, silent: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if not silent.is_set():
                    sink.sendall(data)
        if not silent.is_set():
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_RDWR)

    def reset(self) -> int:
        """End every connection with a reset (SO_LINGER 0), both ways; how many."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, server, cut in pairs:
            cut.set()  # nothing more carried, no FIN sent by the pumps
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    # wakes the pump blocked in recv() (a close alone would wait for
                    # it, and send nothing meanwhile), and sends nothing itself
                    sock.shutdown(socket.SHUT_RD)
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.close()  # with SO_LINGER 0: a reset
        return len(pairs)

    def go_silent(self) -> int:
        """Carry nothing more on the connections open now, and keep them open."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            for client, server, silent in pairs:
                silent.set()
                self._silent += [client, server]
        return len(pairs)

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.reset()
        for sock in self._silent:
            with contextlib.suppress(OSError):
                sock.close()
