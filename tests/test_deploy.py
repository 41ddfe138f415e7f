"""The files in deploy/: settings that parse, hardened systemd units, a container with a
healthcheck and a writable volume."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pbmserv import logs
from pbmserv.config import SETTINGS, Settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
UNITS = ["pbmserv.service", "pbmserv-worker.service", "pbmserv-bots.service",
         "pbmserv-web.service"]


def test_the_example_settings_parse_and_name_every_key() -> None:
    path = DEPLOY / "pbmserv.toml.example"
    settings = Settings.load(path, {})
    assert settings.lmtp == "127.0.0.1:8024" and settings.smtp is None
    assert settings.relay == ("localhost", 25)
    written = set(re.findall(r"^(\w+) =", path.read_text(), re.MULTILINE))
    assert written == set(SETTINGS)


def test_the_pipe_reads_the_settings_file_and_no_shell() -> None:
    line = (DEPLOY / "postfix-master.cf").read_text()
    assert "argv=/opt/pbmserv/bin/pbmserv --config /etc/pbmserv/pbmserv.toml deliver" in line
    assert not (DEPLOY / "pbmserv-deliver").exists()
    assert not (DEPLOY / "pbmserv.env.example").exists()


@pytest.mark.parametrize("unit", UNITS)
def test_units_are_hardened(unit: str) -> None:
    text = (DEPLOY / unit).read_text()
    for line in ("ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                 "RestartSec=", "User=pbmserv", "Environment=PBMSERV_CONFIG=/etc/pbmserv/",
                 "\nUMask=0077\n"):
        assert line in text, line
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    done = subprocess.run([analyze, "security", "--offline=true", str(DEPLOY / unit)],
                          capture_output=True, text=True, timeout=60)
    found = re.search(r"Overall exposure level for \S+: ([\d.]+)", done.stdout)
    if found is None:
        pytest.skip(f"systemd-analyze cannot rate units offline here: {done.stderr[-200:]}")
    assert float(found.group(1)) < 5.0, done.stdout


def test_the_image_has_a_healthcheck_and_a_writable_volume() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    base = re.search(r"^FROM (\S+)", text, re.MULTILINE)
    assert base is not None and re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base.group(1))
    assert 'CMD ["pbmserv", "status", "--down-only"]' in text
    made = text.index("install -d -o pbmserv -g pbmserv")
    assert made < text.index("VOLUME /var/lib/pbmserv") < text.index("USER pbmserv")


def test_logrotate_rotates_and_pbmserv_writes_the_new_file(tmp_path: Path) -> None:
    logrotate = shutil.which("logrotate", path="/usr/sbin:/usr/bin:/sbin")
    if logrotate is None:
        pytest.skip("logrotate is not installed")
    if os.geteuid() != 0:
        pytest.skip("logrotate's 'su' needs root")
    text = (DEPLOY / "pbmserv.logrotate").read_text()
    assert "/var/log/pbmserv/*.log {" in text and "create 0600 pbmserv pbmserv" in text
    folder = tmp_path / "logs"
    folder.mkdir()
    conf = tmp_path / "pbmserv.logrotate"
    conf.write_text(text.replace("/var/log/pbmserv", str(folder))
                    .replace("pbmserv pbmserv", "root root"))
    log = folder / "pbmserv.log"
    logs.setup_logging("info", log)
    logger = logging.getLogger("pbmserv.test")
    try:
        logger.info("before the rotation")
        done = subprocess.run([logrotate, "-f", "-s", str(tmp_path / "state"), str(conf)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        logger.info("after the rotation")
    finally:
        logs.setup_logging("info")
    assert "before the rotation" in (folder / "pbmserv.log.1").read_text()
    assert "after the rotation" in log.read_text()
    assert "before" not in log.read_text()


def test_the_changelog_names_this_version() -> None:
    """CHANGELOG.md (Keep a Changelog) has a section for the version pyproject.toml
    gives, below Unreleased."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    headings = re.findall(r"^## \[([^\]]+)\]", (root / "CHANGELOG.md").read_text(), re.M)
    assert headings[:2] == ["Unreleased", version]
