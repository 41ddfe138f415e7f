"""A real Postfix in front of pbmserv: mail delivered by LMTP (to ``pbmserv serve``) and
by pipe (``pbmserv deliver``), replies relayed back through Postfix.

The Postfix is a private instance (its own configuration, queue and data directories
in a temporary directory, loopback only, high ports), so the machine's own MTA, if
any, is left alone.  It needs root (Postfix starts as root) and Postfix installed
(``.ci/run`` installs it); otherwise the test is skipped, saying why.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import smtplib
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope

import pbmserv
from tests.conftest import free_port, make_mail

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
POSTFIX = shutil.which("postfix", path=SBIN)
POSTMAP = shutil.which("postmap", path=SBIN)
#: the user the pipe runs pbmserv as (Postfix refuses root)
PIPE_USER = "nobody"


def _why_not() -> str | None:
    if POSTFIX is None or POSTMAP is None:
        return "Postfix is not installed (.ci/run installs it)"
    if os.geteuid() != 0:
        return "a private Postfix needs root to start"
    for user in ("postfix", PIPE_USER):
        try:
            pwd.getpwnam(user)
        except KeyError:
            return f"there is no user {user}"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


class Sink:
    """The players' mail server: keeps every mail Postfix relays to it."""

    def __init__(self) -> None:
        self.received: list[Envelope] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:
        self.received.append(envelope)
        return "250 2.0.0 sunk"

    def to(self, address: str) -> list[bytes]:
        return [bytes(e.original_content or b"") for e in self.received
                if address in e.rcpt_tos]


@dataclass
class Instance:
    root: Path
    #: Postfix's SMTP port, and the LMTP port of pbmserv serve
    port: int
    lmtp: int
    #: how the pipe runs pbmserv (None: the pipe's user cannot)
    pipe: str | None = None

    @property
    def config(self) -> Path:
        return self.root / "etc"

    def log(self) -> str:
        path = self.root / "maillog"
        return path.read_text(errors="replace") if path.exists() else ""

    def flush(self) -> None:
        postqueue = shutil.which("postqueue", path=SBIN)
        assert postqueue is not None
        subprocess.run([postqueue, "-c", str(self.config), "-f"], check=True)


def map_text(path: Path) -> str:
    """A map pbmserv wrote, without its header line (the checksum)."""
    first, _, rest = path.read_text().partition("\n")
    assert first.startswith("# written by 'pbmserv postfix-maps' (checksum "), first
    return rest


def wait_for(what: Callable[[], bool], describe: Callable[[], str], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(describe())
        time.sleep(0.1)


MAIN_CF = """\
compatibility_level = 3.6
queue_directory = {root}/spool
data_directory = {root}/data
mail_owner = postfix
setgid_group = postdrop
myhostname = postfix.pbmserv.test
mydomain = pbmserv.test
myorigin = $myhostname
mydestination =
inet_interfaces = loopback-only
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
alias_maps =
alias_database =
local_recipient_maps =
# the game domain: addresses Postfix knows, handed on as the transport map says
relay_domains = games.test
recipient_delimiter = +
relay_recipient_maps = hash:{root}/lmtp/pbmserv_recipients, hash:{root}/pipe/pbmserv_recipients
transport_maps = hash:{root}/lmtp/pbmserv_transport, hash:{root}/pipe/pbmserv_transport,
    hash:{root}/etc/players
# postmaster@ and abuse@ of the game domain, to the administrator (RFC 2142)
virtual_alias_maps = hash:{root}/lmtp/pbmserv_aliases
maillog_file = {root}/maillog
maillog_file_prefixes = {root}
smtputf8_enable = no
biff = no
# strict about line ends, as against SMTP smuggling: a bare LF in a mail from anyone
# (the loopback too, which the default exclusions, $mynetworks, would let through) is
# refused with a 5xx; pbmserv's mails must reach the sink all the same
smtpd_forbid_bare_newline = reject
smtpd_forbid_bare_newline_exclusions =
"""

MASTER_CF = """\
127.0.0.1:{port} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
pbmserv   unix  -       n       n       -       2       pipe
  flags=Rq user={pipe_user}
  argv={pbmserv} --config {root}/pipe/pbmserv.toml deliver --sender ${{sender}}
"""


def pipe_command(root: Path) -> str | None:
    """How the pipe's user runs pbmserv: this interpreter if it may, else the system's
    Python 3 of the same version with this one's packages; None if neither works."""
    if _runs_as_pipe_user([sys.executable, "-c", "import pbmserv.cli"]):
        return f"{sys.executable} -m pbmserv"
    system = "/usr/bin/python3"
    if not Path(system).exists():
        return None
    launcher = root / "pbmserv-launcher"
    paths = [sysconfig.get_paths()["purelib"], str(Path(pbmserv.__file__).parent.parent)]
    launcher.write_text(f"#!{system}\nimport sys\nsys.path[:0] = {paths!r}\n"
                        "from pbmserv.cli import main\nmain()\n")
    launcher.chmod(0o755)
    return str(launcher) if _runs_as_pipe_user([str(launcher), "--version"]) else None


def _runs_as_pipe_user(command: list[str]) -> bool:
    try:
        return subprocess.run(command, user=PIPE_USER, capture_output=True,
                              timeout=60).returncode == 0
    except OSError:  # not even executable by that user
        return False


def settings_file(path: Path, database: Path, address: str, relay_port: int,
                  extra: str = "") -> None:
    path.write_text(f'database_url = "sqlite:///{database}"\naddresses = "{address}"\n'
                    f'relay = "127.0.0.1:{relay_port}"\nlog_level = "info"\n{extra}')
    path.chmod(0o644)


def pbmserv_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pbmserv", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=60)


@pytest.fixture
def sink() -> Iterator[tuple[Sink, int]]:
    keeper, port = Sink(), free_port()
    controller = Controller(keeper, hostname="127.0.0.1", port=port,
                            server_hostname="mx.example.org")
    controller.start()
    yield keeper, port
    controller.stop()


@contextmanager
def private_postfix(sink_port: int, main_cf: str = "") -> Iterator[Instance]:
    """A private Postfix on 127.0.0.1: the game domain games.test is a relay domain,
    its addresses and transports written by ``pbmserv postfix-maps``; mail for
    example.org (the players) goes to the sink.  ``main_cf``: more lines for main.cf."""
    assert POSTFIX is not None and POSTMAP is not None
    root = Path(tempfile.mkdtemp(prefix="pbmserv-postfix-"))
    root.chmod(0o755)
    instance = Instance(root, free_port(), free_port())
    started = False
    try:
        for sub in ("etc", "spool", "data", "lmtp", "pipe"):
            (root / sub).mkdir()
        shutil.chown(root / "data", "postfix")
        shutil.chown(root / "pipe", PIPE_USER)
        instance.pipe = pipe_command(root)
        (root / "etc" / "main.cf").write_text(MAIN_CF.format(root=root) + main_cf)
        (root / "etc" / "master.cf").write_text(MASTER_CF.format(
            port=instance.port, root=root, pipe_user=PIPE_USER,
            pbmserv=instance.pipe or "/bin/false"))
        (root / "etc" / "players").write_text(f"example.org\tsmtp:[127.0.0.1]:{sink_port}\n")
        subprocess.run([POSTMAP, "-c", str(root / "etc"), f"hash:{root}/etc/players"],
                       check=True)
        settings_file(root / "lmtp" / "pbmserv.toml", root / "lmtp" / "pbmserv.sqlite3",
                      "pbmserv@games.test", instance.port,
                      f'lmtp = "127.0.0.1:{instance.lmtp}"\nsmtp = "off"\n'
                      f'log_file = "{root}/lmtp/pbmserv.log"\n')
        settings_file(root / "pipe" / "pbmserv.toml", root / "pipe" / "pbmserv.sqlite3",
                      "pipe@games.test", instance.port)
        for where, extra in (("lmtp", []), ("pipe", ["--pipe", "pbmserv"])):
            # the maps, written by pbmserv itself (postmap reads this instance's main.cf)
            made = pbmserv_cli("--config", str(root / where / "pbmserv.toml"), "postfix-maps",
                               *extra, "--output-dir", str(root / where),
                               MAIL_CONFIG=str(root / "etc"), PBMSERV_CONFIG="")
            assert made.returncode == 0, made.stderr
        for name in ("check", "start"):
            done = subprocess.run([POSTFIX, "-c", str(root / "etc"), name],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"Postfix cannot {name} here: {done.stderr.strip()[-300:]} "
                            f"{instance.log()[-300:]}")
            started = name == "start"
        wait_for(lambda: _answers(instance.port), lambda: "Postfix did not listen: "
                 + instance.log(), limit=30)
        yield instance
    finally:
        if started:
            subprocess.run([POSTFIX, "-c", str(root / "etc"), "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postfix(sink: tuple[Sink, int]) -> Iterator[Instance]:
    with private_postfix(sink[1]) as instance:
        yield instance


def _answers(port: int) -> bool:
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=2) as client:
            return client.noop()[0] == 250
    except OSError:
        return False


def _lmtp_answers(port: int) -> bool:
    try:
        with smtplib.LMTP("127.0.0.1", port, timeout=2) as client:
            return client.ehlo()[0] == 250
    except OSError:
        return False


def test_postfix_delivers_by_lmtp(postfix: Instance, sink: tuple[Sink, int]) -> None:
    keeper, _ = sink
    root = postfix.root
    assert map_text(root / "lmtp" / "pbmserv_transport") == \
        f"pbmserv@games.test\tlmtp:inet:127.0.0.1:{postfix.lmtp}\n"
    assert map_text(root / "lmtp" / "pbmserv_recipients") == (
        "pbmserv@games.test\tOK\npostmaster@games.test\tOK\nabuse@games.test\tOK\n")
    assert map_text(root / "lmtp" / "pbmserv_aliases") == (
        "postmaster@games.test\troot@localhost\nabuse@games.test\troot@localhost\n")
    # pbmserv serve, on LMTP only, with its settings file (its worker process reads it too)
    server = subprocess.Popen(
        [sys.executable, "-m", "pbmserv", "--config", str(root / "lmtp" / "pbmserv.toml"),
         "serve"], env={**os.environ, "PBMSERV_CONFIG": "", "PBMSERV_LOG_LEVEL": "info"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _lmtp_answers(postfix.lmtp), lambda: "pbmserv serve did not listen")
        with smtplib.SMTP("127.0.0.1", postfix.port) as client:
            client.sendmail("alice@example.org", ["pbmserv@games.test"],
                            make_mail("signup alice pw-alice-1", message_id="<lmtp@example.org>"))
            with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
                client.sendmail("carol@example.org", ["other@games.test"], make_mail("help"))
        assert b"User unknown in relay recipient table" in \
            refused.value.recipients["other@games.test"][1]
        # stored, answered, the answer relayed through Postfix to the player
        wait_for(lambda: bool(keeper.to("alice@example.org")),
                 lambda: "no reply to alice:\n" + postfix.log())
        assert b"Subject: confirm alice " in keeper.to("alice@example.org")[0]
        wait_for(lambda: "status=sent (250 2.0.0 Message accepted as #1)" in postfix.log(),
                 lambda: postfix.log())
        # the mail can be followed from Postfix's log into pbmserv's and back
        wait_for(lambda: "sent outbox 1:" in (root / "lmtp" / "pbmserv.log").read_text(),
                 lambda: "pbmserv did not log the reply")
        ours = (root / "lmtp" / "pbmserv.log").read_text()
        assert "received #1: <lmtp@example.org> from <alice@example.org>" in ours
        assert "message-id=<lmtp@example.org>" in postfix.log()
        [sent] = [line for line in ours.splitlines() if "sent outbox 1:" in line]
        queue_id = sent.rsplit("queued as ", 1)[1].strip()
        wait_for(lambda: f"{queue_id}: to=<alice@example.org>" in postfix.log(),
                 lambda: f"{queue_id} not in Postfix's log:\n" + postfix.log())
        # a move-by-reply address (pbmserv+TOKEN@...) reaches pbmserv through the maps
        # (recipient_delimiter): a forged token gets its answer, not a bounce
        with smtplib.SMTP("127.0.0.1", postfix.port) as client:
            client.sendmail("carol@example.org", ["pbmserv+b1u1m1t0-aaaaaaaaaaaaaaaa@games.test"],
                            make_mail("e4", sender="carol@example.org"))
        wait_for(lambda: bool(keeper.to("carol@example.org")),
                 lambda: "no answer to the reply address:\n" + postfix.log())
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_postfix_delivers_by_pipe_and_keeps_mail_while_settings_are_broken(
        postfix: Instance, sink: tuple[Sink, int]) -> None:
    if postfix.pipe is None:
        pytest.skip(f"user {PIPE_USER} cannot run this Python with pbmserv")
    keeper, _ = sink
    root = postfix.root
    assert map_text(root / "pipe" / "pbmserv_transport") == "pipe@games.test\tpbmserv:\n"
    pipe_toml = root / "pipe" / "pbmserv.toml"
    good = pipe_toml.read_text()
    pipe_toml.write_text(good + "name_is_not_a_key = 1\n")  # broken for now
    with smtplib.SMTP("127.0.0.1", postfix.port) as client:
        client.sendmail("bob@example.org", ["pipe@games.test"],
                        make_mail("signup bob pw-bob-1", sender="bob@example.org",
                                  message_id="<pipe@example.org>"))
    # Postfix keeps the mail (deferred, not bounced) and logs why
    wait_for(lambda: "status=deferred" in postfix.log(),
             lambda: "the pipe did not defer:\n" + postfix.log())
    assert "relay=pbmserv" in postfix.log()
    assert "unknown setting 'name_is_not_a_key'" in postfix.log()
    assert "status=bounced" not in postfix.log() and not keeper.to("bob@example.org")
    # fixed settings: the queued mail goes through at the next try. The queue is
    # flushed until it does: a flush before the queue manager has moved the mail into
    # the deferred queue (a busy machine) finds nothing to retry
    pipe_toml.write_text(good)
    last_flush = 0.0

    def replied() -> bool:
        nonlocal last_flush
        if keeper.to("bob@example.org"):
            return True
        if time.monotonic() - last_flush > 2:
            postfix.flush()
            last_flush = time.monotonic()
        return False

    wait_for(replied, lambda: "no reply to bob:\n" + postfix.log())
    reply = keeper.to("bob@example.org")[0]
    assert b"Subject: confirm bob " in reply
    assert b"From: pbmserv <pipe@games.test>" in reply
    # the pipe's own line (written once the command has ended) says what was stored
    wait_for(lambda: "delivered via pbmserv service" in postfix.log(), lambda: postfix.log())
    assert "pbmserv: received #1: <pipe@example.org> from <bob@example.org>" in postfix.log()
    assert "status=bounced" not in postfix.log()


# -- DKIM: OpenDKIM as Postfix's milter signs what pbmserv sends ---------------------------
OPENDKIM = shutil.which("opendkim", path=SBIN)
OPENDKIM_GENKEY = shutil.which("opendkim-genkey", path=SBIN)
#: the selector of the test's key (docs/admin.md: the key's name in DNS)
SELECTOR = "pbmserv"

#: OpenDKIM's settings as docs/admin.md gives them, in the test's own folder
OPENDKIM_CONF = """\
Syslog no
Mode sv
Domain games.test
Selector {selector}
KeyFile {keys}/{selector}.private
Socket inet:{port}@127.0.0.1
Canonicalization relaxed/simple
OversignHeaders From
# as docs/admin.md section 8 says: the defaults, and List-Unsubscribe-Post
SignHeaders *,+List-Unsubscribe-Post
InternalHosts 127.0.0.1
PidFile {keys}/opendkim.pid
{user}
# the test's folder is under /tmp, which other users may write: the docs keep the key
# in /etc/opendkim/keys, where this check holds
RequireSafeKeys false
"""

#: the lines docs/admin.md adds to Postfix's main.cf
MILTER_MAIN_CF = """\
smtpd_milters = inet:127.0.0.1:{port}
non_smtpd_milters = $smtpd_milters
milter_default_action = accept
"""


@dataclass
class Signer:
    port: int
    #: the TXT record opendkim-genkey wrote for {selector}._domainkey.games.test
    record: bytes
    process: subprocess.Popen[bytes]


def _dkim_why_not() -> str | None:
    if OPENDKIM is None or OPENDKIM_GENKEY is None:
        return "OpenDKIM is not installed (.ci/run installs opendkim and opendkim-tools)"
    try:
        import dkim  # noqa: F401
    except ImportError:
        return "dkimpy is not installed (pip install -e '.[dev]')"
    return None


def txt_record(zone_line: str) -> bytes:
    """The TXT record of opendkim-genkey's zone file line: its quoted strings joined."""
    return "".join(re.findall(r'"([^"]*)"', zone_line)).encode()


@pytest.fixture
def opendkim(tmp_path: Path) -> Iterator[Signer]:
    why = _dkim_why_not()
    if why is not None:
        pytest.skip(why)
    assert OPENDKIM is not None and OPENDKIM_GENKEY is not None
    keys = Path(tempfile.mkdtemp(prefix="pbmserv-dkim-"))
    keys.chmod(0o755)
    try:
        subprocess.run([OPENDKIM_GENKEY, "-b", "2048", "-d", "games.test", "-s", SELECTOR,
                        "-D", str(keys)], check=True, capture_output=True, timeout=120)
        user = ""
        try:
            pwd.getpwnam("opendkim")
            shutil.chown(keys / f"{SELECTOR}.private", "opendkim")
            shutil.chown(keys, "opendkim")  # its pid file
            user = "UserID opendkim"
        except KeyError:
            pass
        port = free_port()
        conf = keys / "opendkim.conf"
        conf.write_text(OPENDKIM_CONF.format(selector=SELECTOR, keys=keys, port=port,
                                             user=user))
        process = subprocess.Popen([OPENDKIM, "-f", "-x", str(conf)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: process.poll() is not None or _listens(port),
                     lambda: "OpenDKIM did not listen")
            if process.poll() is not None:
                out = process.stdout.read().decode(errors="replace") if process.stdout else ""
                pytest.skip(f"OpenDKIM cannot start here: {out.strip()[-300:]}")
            record = txt_record((keys / f"{SELECTOR}.txt").read_text())
            yield Signer(port, record, process)
        finally:
            process.terminate()
            process.wait(timeout=30)
    finally:
        shutil.rmtree(keys, ignore_errors=True)


def _listens(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_mail_pbmserv_sends_leaves_postfix_signed(opendkim: Signer,
                                                    sink: tuple[Sink, int]) -> None:
    import dkim

    keeper, port = sink
    asked: list[bytes] = []

    def dns(name: bytes, timeout: int = 5) -> bytes | None:
        asked.append(name)
        return opendkim.record if name == f"{SELECTOR}._domainkey.games.test.".encode() \
            else None

    with private_postfix(port, MILTER_MAIN_CF.format(port=opendkim.port)) as postfix:
        root = postfix.root
        # pbmserv takes a mail (the pipe's command, run here by hand) and sends its
        # reply through this Postfix, which has OpenDKIM sign it
        done = subprocess.run(
            [sys.executable, "-m", "pbmserv", "--config", str(root / "lmtp" / "pbmserv.toml"),
             "deliver", "--sender", "alice@example.org"],
            input=make_mail("signup alice pw-alice-1", To="pbmserv@games.test"),
            capture_output=True, timeout=120, env={**os.environ, "PBMSERV_CONFIG": ""})
        assert done.returncode == 0, done.stderr
        wait_for(lambda: bool(keeper.to("alice@example.org")),
                 lambda: "no reply to alice:\n" + postfix.log())
    [mail] = keeper.to("alice@example.org")
    headers = mail.split(b"\r\n\r\n", 1)[0]
    assert b"From: pbmserv <pbmserv@games.test>" in headers
    [signature] = [h for h in re.split(rb"\r\n(?=\S)", headers)
                   if h.lower().startswith(b"dkim-signature:")]
    fields = dict(re.findall(rb"(\w+)=([^;]*)", re.sub(rb"\s+", b"", signature[15:])))
    assert fields[b"d"] == b"games.test" and fields[b"s"] == SELECTOR.encode()
    assert fields[b"c"] == b"relaxed/simple"
    signed = fields[b"h"].lower().split(b":")
    assert {b"from", b"to", b"subject", b"date"} <= set(signed)
    assert signed.count(b"from") == 2  # oversigned: no second From can be added
    # dkimpy checks it against the public key (given here instead of DNS)
    assert dkim.verify(mail, dnsfunc=dns) is True
    assert asked == [f"{SELECTOR}._domainkey.games.test.".encode()]
    # the check can fail: a changed Subject or body does not verify
    assert dkim.verify(mail.replace(b"Subject: confirm alice", b"Subject: confirm mallory"),
                       dnsfunc=dns) is False
    assert dkim.verify(mail.replace(b"alice", b"mallory", 3), dnsfunc=dns) is False


def test_postfix_delivers_to_an_lmtp_socket_of_its_group(postfix: Instance,
                                                         sink: tuple[Sink, int]) -> None:
    """Postfix's lmtp client runs as user postfix: a socket pbmserv makes for the group
    postfix (``lmtp_socket_group``) lets it in, one of pbmserv's own group would not."""
    keeper, _ = sink
    root = postfix.root
    socket_path = root / "run" / "lmtp.sock"
    (root / "run").mkdir(mode=0o755)
    toml = root / "lmtp" / "pbmserv.toml"
    toml.write_text(toml.read_text().replace(f'lmtp = "127.0.0.1:{postfix.lmtp}"',
                                             f'lmtp = "{socket_path}"')
                    + 'lmtp_socket_group = "postfix"\n')
    made = pbmserv_cli("--config", str(toml), "postfix-maps", "--output-dir",
                       str(root / "lmtp"), MAIL_CONFIG=str(postfix.config), PBMSERV_CONFIG="")
    assert made.returncode == 0, made.stderr
    assert map_text(root / "lmtp" / "pbmserv_transport") == \
        f"pbmserv@games.test\tlmtp:unix:{socket_path}\n"
    assert POSTFIX is not None
    subprocess.run([POSTFIX, "-c", str(postfix.config), "reload"], check=True,
                   capture_output=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "pbmserv", "--config", str(toml), "serve"],
        env={**os.environ, "PBMSERV_CONFIG": ""},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(socket_path.is_socket, lambda: "pbmserv serve made no socket")
        made_socket = socket_path.stat()
        assert made_socket.st_gid == grp.getgrnam("postfix").gr_gid
        assert made_socket.st_mode & 0o777 == 0o660
        with smtplib.SMTP("127.0.0.1", postfix.port) as client:
            client.sendmail("alice@example.org", ["pbmserv@games.test"],
                            make_mail("signup alice pw-alice-1", message_id="<sock@example.org>"))
        wait_for(lambda: bool(keeper.to("alice@example.org")),
                 lambda: "no reply to alice:\n" + postfix.log())
        assert f"[{socket_path}], " in postfix.log(), postfix.log()
        assert "status=sent (250 2.0.0 Message accepted as #1)" in postfix.log()
    finally:
        server.terminate()
        server.wait(timeout=30)
