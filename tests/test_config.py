"""One settings file (TOML), overridden by the environment; config show and check;
--version; failures in one line."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pbmserv.cli import main
from pbmserv.config import DEFAULT_SMTP, FORMERLY, SETTINGS, Settings, SettingsError, as_toml
from pbmserv.db.migrate import head
from pbmserv.version import revision
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=stdin)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pbmserv.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_file_then_environment(tmp_path: Path) -> None:
    path = write(tmp_path, """
database_url = "postgresql://pbmserv@localhost/pbmserv"
addresses = ["Games@Example.org", "pbem@example.org"]
server_name = "Example PBeM server"
relay = "localhost:25"
maildir = "/var/lib/pbmserv/mail"
max_message_size = 100000
lmtp = "127.0.0.1:8024"
smtp = "off"
workers = 2
log_level = "warning"
syslog = true
""")
    settings = Settings.load(path, {})
    assert settings.source == path
    assert settings.database_url == "postgresql+psycopg://pbmserv@localhost/pbmserv"
    assert settings.addresses == ("games@example.org", "pbem@example.org")
    assert settings.server_name == "Example PBeM server"  # a space: no shell involved
    assert settings.relay == ("localhost", 25) and settings.smtp is None
    assert (settings.lmtp, settings.workers, settings.syslog) == ("127.0.0.1:8024", 2, True)
    env = {"PBMSERV_RELAY": "off", "PBMSERV_ADDRESSES": "a@b.org, c@d.org", "PBMSERV_WORKERS": "0"}
    overridden = Settings.load(path, env)
    assert overridden.relay is None and overridden.addresses == ("a@b.org", "c@d.org")
    assert overridden.workers == 0 and overridden.max_message_size == 100000


def test_which_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, 'server_name = "from the file"\n')
    assert Settings.load(None, {"PBMSERV_CONFIG": str(path)}).server_name == "from the file"
    assert Settings.load(None, {"PBMSERV_CONFIG": ""}).source is None
    assert Settings.load(path, {"PBMSERV_CONFIG": ""}).server_name == "from the file"
    monkeypatch.setattr("pbmserv.config.DEFAULT_CONFIG", path)
    assert Settings.load(None, {}).source == path
    monkeypatch.setattr("pbmserv.config.DEFAULT_CONFIG", tmp_path / "none.toml")
    defaults = Settings.load(None, {})
    assert defaults.source is None and defaults.smtp == DEFAULT_SMTP and defaults.lmtp is None


@pytest.mark.parametrize(("text", "said"), [
    ('relay = "localhost:25', "is not valid TOML"),
    ("bogus = 1", "unknown setting 'bogus'"),
    ('relay = "localhost"', r"relay \(PBMSERV_RELAY\): write host:port"),
    ("max_message_size = 10", "at least 1024 bytes"),
    ('log_level = "loud"', "one of debug, info"),
    ('lmtp = "somewhere"', "a Unix socket"),
    ('addresses = "nobody"', "is not a mail address"),
    ('database_url = "not a url"', "is not a database URL"),
    ("workers = true", "expected a number"),
])
def test_bad_files_are_named_and_explained(tmp_path: Path, text: str, said: str) -> None:
    path = write(tmp_path, text + "\n")
    with pytest.raises(SettingsError, match=said) as err:
        Settings.load(path, {})
    assert str(path) in str(err.value) or "PBMSERV" in str(err.value)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not exist"):
        Settings.load(tmp_path / "none.toml", {})
    if os.getuid() != 0:  # root reads any file
        path = write(tmp_path, "")
        path.chmod(0)
        with pytest.raises(SettingsError, match="cannot be read by this user"):
            Settings.load(path, {})


def test_config_show_masks_secrets_and_reads_back(tmp_path: Path) -> None:
    path = write(tmp_path, 'database_url = "postgresql+psycopg://pb:s3cret@db/pb"\n'
                           'relay = "mail.example.org:587"\n')
    shown = run("--config", str(path), "config", "show")
    assert shown.exit_code == 0, shown.output
    assert "s3cret" not in shown.output and "pb:***@db/pb" in shown.output
    assert "# SQLAlchemy URL of the database (PBMSERV_DATABASE_URL)" in shown.output
    again = tomllib.loads(shown.output)
    assert again["relay"] == "mail.example.org:587" and again["smtp"] == DEFAULT_SMTP
    assert Settings.from_values(again).relay == ("mail.example.org", 587)
    assert as_toml(Settings()).count("\n# ") == len(SETTINGS)  # one per setting
    hushed = run("config", "show", env={"PBMSERV_SECRET": "hush-hush"})
    assert "hush-hush" not in hushed.output and 'secret = "***"' in hushed.output


def test_config_check(tmp_path: Path, db_url: str) -> None:
    maildir = tmp_path / "mail"
    path = write(tmp_path, f'database_url = "{db_url}"\nmaildir = "{maildir}"\n'
                           f'log_file = "{tmp_path / "log" / "pbmserv.log"}"\n')
    good = run("--config", str(path), "config", "check")
    assert good.exit_code == 0, good.output
    lines = good.output.splitlines()
    assert lines[0].startswith("ok   settings") and str(path) in lines[0]
    assert any(line.startswith("ok   schema") and f"{head()}, current" in line
               for line in lines)
    assert any(line.startswith("ok   maildir") for line in lines)
    assert any(line.startswith("ok   log_file") for line in lines)
    relay = f"127.0.0.1:{free_port()}"
    bad = run("--config", str(path), "config", "check",
              env={"PBMSERV_RELAY": relay,
                   "PBMSERV_DATABASE_URL": f"sqlite:///{tmp_path / 'new.sqlite3'}"})
    assert bad.exit_code == 1
    assert f"FAIL relay        no SMTP answer from {relay}" in bad.output
    # a database that is not there yet is said so, and not made
    assert (f"warn database     {tmp_path / 'new.sqlite3'} does not exist yet: 'pbmserv "
            "serve' makes it at its first start (or 'pbmserv db upgrade' now)") in bad.output
    assert not (tmp_path / "new.sqlite3").exists()
    (tmp_path / "empty.sqlite3").touch()
    empty = run("--config", str(path), "config", "check",
                env={"PBMSERV_DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"})
    assert empty.exit_code == 1
    assert "FAIL schema       the database has no pbmserv tables yet: run 'pbmserv db upgrade'" \
        in empty.output
    assert ("ok   secret       none set: the server makes one at its first start and keeps "
            "it in the database") in good.output


def test_config_check_refuses_a_weak_secret(tmp_path: Path, db_url: str) -> None:
    path = write(tmp_path, f'database_url = "{db_url}"\nmaildir = "{tmp_path / "mail"}"\n'
                           'secret = "x"\n')
    weak = run("--config", str(path), "config", "check")
    assert weak.exit_code == 1
    assert ("FAIL secret       too weak to sign move-by-reply addresses (anyone who guesses "
            "it can move for any player): give at least 32 random characters") in weak.output
    same = run("--config", str(path), "config", "check", env={"PBMSERV_SECRET": "a" * 40})
    assert same.exit_code == 1 and "FAIL secret" in same.output  # long, but one letter
    assert "a" * 40 not in same.output  # never shown
    strong = run("--config", str(path), "config", "check",
                 env={"PBMSERV_SECRET": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"})
    assert strong.exit_code == 0 and "ok   secret       40 characters" in strong.output


def test_config_show_says_where_each_value_came_from(tmp_path: Path) -> None:
    path = write(tmp_path, 'relay = "mail.example.org:587"\nserver_name = "Games"\n')
    shown = run("--config", str(path), "--log-level", "error", "config", "show",
                env={"PBMSERV_SERVER_NAME": "Board games", "PBMSERV_WORKERS": "3"})
    assert shown.exit_code == 0, shown.output
    values = {line.split(" = ")[0]: line.split(" = ", 1)[1]
              for line in shown.output.splitlines() if " = " in line and line[0] != "#"}
    assert values["relay"] == '"mail.example.org:587"  # file'
    assert values["server_name"] == '"Board games"  # environment'  # the environment wins
    assert values["workers"] == "3  # environment"
    assert values["log_level"] == '"error"  # command line'
    assert values["max_message_size"] == "10240000  # default"
    assert tomllib.loads(shown.output)["server_name"] == "Board games"  # still TOML


def test_old_keys_are_read_as_their_new_ones_with_a_warning(tmp_path: Path) -> None:
    assert FORMERLY == {"address": "addresses", "name": "server_name",
                        "max_size": "max_message_size", "max_reply": "max_reply_size",
                        "trusted_authserv_id": "trusted_authserv_ids",
                        "confirm_days": "confirm_hours"}
    path = write(tmp_path, 'address = "Games@Example.org"\nname = "Old games"\n'
                           'max_size = 100000\nmax_reply = 8192\n'
                           'trusted_authserv_id = "MX.example.org"\nconfirm_days = 7\n')
    old = Settings.load(path, {})
    assert (old.addresses, old.server_name, old.max_message_size, old.max_reply_size,
            old.trusted_authserv_ids, old.confirm_hours) == (
        ("games@example.org",), "Old games", 100000, 8192, ("mx.example.org",), 7 * 24)
    assert old.origin("addresses") == old.origin("confirm_hours") == "file"
    renamed = ("address", "name", "max_size", "max_reply", "trusted_authserv_id")
    assert old.warnings == (
        *(f"{key} is the old name of {FORMERLY[key]}: rename it (the old name is still "
          "read, for now)" for key in renamed),
        "confirm_days is the old name of confirm_hours, in other units: it is read as "
        "confirm_hours = 168; write that instead")
    # the environment's old names override the file's new keys, and say so by their name
    new = write(tmp_path, 'addresses = "new@example.org"\nconfirm_hours = 5\n')
    env = Settings.load(new, {"PBMSERV_ADDRESS": "env@example.org", "PBMSERV_CONFIRM_DAYS": "2"})
    assert (env.addresses, env.confirm_hours) == (("env@example.org",), 48)
    assert env.origin("addresses") == "environment"
    assert env.warnings[0] == ("PBMSERV_ADDRESS is the old name of PBMSERV_ADDRESSES: rename "
                               "it (the old name is still read, for now)")
    assert Settings.load(new, {}).warnings == ()
    # both names in one place: the new one counts
    both = write(tmp_path, 'addresses = "new@example.org"\naddress = "old@example.org"\n')
    assert Settings.load(both, {}).addresses == ("new@example.org",)
    assert Settings.load(both, {}).warnings == (
        "address is the old name of addresses, which is set too: address is ignored; "
        "remove it",)


@pytest.mark.parametrize(("text", "said"), [
    ("confirm_days = 0", r"confirm_days \(PBMSERV_CONFIRM_DAYS\): must be at least 1"),
    ('confirm_days = "week"', r"confirm_days \(PBMSERV_CONFIRM_DAYS\): invalid literal"),
    ('address = "nobody"', r"address \(PBMSERV_ADDRESS\): 'nobody' is not a mail address"),
    ("max_size = 10", r"max_size \(PBMSERV_MAX_SIZE\): the largest message must be at least"),
])
def test_a_bad_value_of_an_old_key_is_told_by_that_key(tmp_path: Path, text: str,
                                                       said: str) -> None:
    with pytest.raises(SettingsError, match=said):
        Settings.load(write(tmp_path, text + "\n"), {})


def test_an_old_key_is_told_in_the_log_config_show_and_config_check(
        tmp_path: Path, db_url: str) -> None:
    path = write(tmp_path, f'database_url = "{db_url}"\nmaildir = "{tmp_path / "mail"}"\n'
                           'name = "Old games"\n')
    said = "name is the old name of server_name: rename it (the old name is still read, for now)"
    shown = run("--config", str(path), "config", "show")
    assert shown.exit_code == 0, shown.output
    assert f"settings: {said}" in shown.stderr  # the log
    assert f"# warning: {said}\n" in shown.stdout
    assert tomllib.loads(shown.stdout)["server_name"] == "Old games"
    checked = run("--config", str(path), "config", "check")
    assert checked.exit_code == 0, checked.output  # a warning, not a failure
    assert f"warn settings     {said}" in checked.stdout.splitlines()
    renamed = write(tmp_path, f'database_url = "{db_url}"\nmaildir = "{tmp_path / "mail"}"\n'
                              'server_name = "Old games"\n')
    quiet = run("--config", str(renamed), "config", "check")
    assert quiet.exit_code == 0 and "old name" not in quiet.output


def test_the_defaults_read_back_from_config_show() -> None:
    """Each default is a value its parser gives (setting() cannot check it by type)."""
    shown = as_toml(Settings())
    assert Settings.from_values(tomllib.loads(shown)) == Settings()


def settings_table(path: Path) -> list[str]:
    """The keys in the first column of a file's settings table (| key | meaning |
    default |)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("| key | meaning | default |") + 2
    keys: list[str] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        keys += re.findall(r"`(\w+)`", line.split("|")[1])
    return keys


def test_every_setting_is_in_the_admin_guide_and_none_that_is_not() -> None:
    """docs/admin.md's table names each setting once, and nothing else; README's
    shorter one names only settings (deploy/pbmserv.toml.example: tests/test_deploy.py)."""
    documented = settings_table(ROOT / "docs" / "admin.md")
    assert sorted(documented) == sorted(SETTINGS)
    guide = " ".join((ROOT / "docs" / "admin.md").read_text(encoding="utf-8").split())
    for old, new in FORMERLY.items():  # the old names still read, and their new ones
        assert f"`{old}` (now `{new}`" in guide
    assert set(settings_table(ROOT / "README.md")) <= set(SETTINGS)


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    root = Path(__file__).resolve().parent.parent
    rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                         capture_output=True, text=True)
    if rev.returncode != 0:
        pytest.skip("not a git checkout")
    dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--"])
    assert result.output == (f"pbmserv {metadata.version('pbmserv')} (git {rev.stdout.strip()}"
                             + ("-modified" if dirty.returncode else "") + ")\n")


def test_the_revision_is_the_checkout_s_else_the_one_built_in(tmp_path: Path) -> None:
    package = tmp_path / "src" / "pbmserv"
    package.mkdir(parents=True)
    assert revision(package) is None
    (package / "REVISION").write_text("0123456789ab\n")
    assert revision(package) == "0123456789ab"  # an installed build
    git = ["git", "-C", str(tmp_path / "src"), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (package / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "pbmserv/a.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    head_rev = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    assert revision(package) == head_rev  # a checkout: its own, live
    (package / "a.py").write_text("x = 2\n")
    assert revision(package) == f"{head_rev}-modified"


def test_failures_are_one_line(tmp_path: Path) -> None:
    down = {"PBMSERV_DATABASE_URL": f"postgresql+psycopg://pbmserv@127.0.0.1:{free_port()}/x"}
    result = run("db", "upgrade", env=down)
    assert result.exit_code == 1
    assert result.output == ("pbmserv: cannot reach the database server: is PostgreSQL running "
                             "(systemctl status postgresql), and are host and port in "
                             "database_url right?\n")
    verbose = run("-v", "db", "upgrade", env=down)
    assert "Traceback (most recent call last)" in verbose.output
    missing = run("--config", str(tmp_path / "none.toml"), "users", "list")
    assert missing.exit_code == 1
    assert missing.output == f"pbmserv: settings file {tmp_path / 'none.toml'} does not exist\n"
    bad_url = run("users", "list", env={"PBMSERV_DATABASE_URL": "mysql://x@y/z"})
    assert bad_url.exit_code == 1 and len(bad_url.output.splitlines()) == 1
    assert "not installed" in bad_url.output


def test_rules_need_no_settings(tmp_path: Path) -> None:
    assert run("--config", str(tmp_path / "none.toml"), "rules", "perft", "honeydonuts", "1"
               ).output == "12\n"


def test_a_port_in_use_is_one_line(db_url: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--smtp", f"127.0.0.1:{port}", "--workers", "0",
                     env={"PBMSERV_DATABASE_URL": db_url})
    assert result.exit_code == 1
    assert result.output == (f"Error: cannot listen on SMTP 127.0.0.1:{port}: the address is "
                             "in use: another program (or another pbmserv) listens there\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to any group")
def test_config_check_tries_the_lmtp_socket_s_group(tmp_path: Path, db_url: str) -> None:
    path = write(tmp_path, f'database_url = "{db_url}"\nmaildir = "{tmp_path / "mail"}"\n'
                           f'lmtp = "{tmp_path / "lmtp.sock"}"\nlmtp_socket_group = "nogroup"\n')
    good = run("--config", str(path), "config", "check")
    assert f"ok   lmtp_socket  {tmp_path / 'lmtp.sock'}: mode 0660, group nogroup" in \
        good.output.splitlines()
    bad = run("--config", str(path), "config", "check",
              env={"PBMSERV_LMTP_SOCKET_GROUP": "no-such-group-x"})
    assert bad.exit_code == 1
    assert ("FAIL lmtp_socket  lmtp_socket_group: there is no group 'no-such-group-x' on "
            "this host") in bad.output.splitlines()
