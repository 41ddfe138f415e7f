"""deploy/prometheus-rules.yml: valid for Prometheus (``promtool check rules``), firing
when it should (``promtool test rules`` on tests/prometheus/rules_test.yml), and naming
only metrics that ``/metrics`` really gives.  promtool is Debian's ``prometheus``
package (.ci/run installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.web import create_app

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus-rules.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None,
                                    reason="promtool is not installed (.ci/run installs it)")


@needs_promtool
def test_the_rules_are_valid_and_fire_when_they_should() -> None:
    assert PROMTOOL is not None
    checked = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 10 rules found" in checked.stdout
    tested = subprocess.run([PROMTOOL, "test", "rules", "rules_test.yml"],
                            cwd=ROOT / "tests" / "prometheus", capture_output=True, text=True,
                            timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_rules_name_only_metrics_the_server_gives(db: Database, settings: Settings) -> None:
    with TestClient(create_app(db, settings)) as client:
        given = {family.name for family in text_string_to_metric_families(
            client.get("/metrics").text)}
    given |= {f"{name}_total" for name in given}  # counters are named with _total
    text = RULES.read_text()  # (one rule's fields a line each: no YAML parser needed)
    exprs = re.findall(r"^\s+expr: (.*)$", text, re.M)
    commands = re.findall(r"^\s+description: \"(.*'(?:pbmserv|systemctl) [a-z].*)\"$", text, re.M)
    assert len(exprs) == len(re.findall(r"^\s+- alert: ", text, re.M)) == 10
    assert len(commands) == 10  # each says which command to run next
    named = {name for expr in exprs for name in re.findall(r"\b(pbmserv_[a-z_]+)", expr)}
    assert named and named <= given, named - given
