"""Accessibility checks in the real browser: axe-core (the npm package, installed by
``make axe`` into .cache/axe: CI's .ci/run does it and fails if it cannot) run in the
page, and Chromium's own accessibility tree (the DevTools protocol).  For the
Selenium tests of tests/test_web_browser.py and tests/test_move_browser.py."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: where ``make axe`` installs axe-core (or PBMSERV_AXE_JS names the file)
AXE_JS = Path(os.environ.get("PBMSERV_AXE_JS")
              or ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js")
#: the impacts that fail a page
FAILING = ("serious", "critical")


@cache
def axe_source() -> str:
    if not AXE_JS.is_file():
        pytest.skip(f"axe-core is not installed at {AXE_JS}: run 'make axe'")
    return AXE_JS.read_text(encoding="utf-8")


def axe_violations(driver: Any) -> list[dict[str, Any]]:
    """The violations of serious or critical impact that axe-core finds in the page
    open in ``driver`` (WCAG 2.x A and AA, and best practices)."""
    driver.execute_script(axe_source())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done(r.violations)).catch(e => done([{id: 'axe-error', impact: "
        "'critical', help: String(e), nodes: []}]));")
    return [v for v in result if v.get("impact") in FAILING]


def described(violations: list[dict[str, Any]]) -> str:
    """The violations in a line each, with the first elements they name."""
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']}: "
        + "; ".join(str(n.get("target")) + " " + str(n.get("failureSummary", ""))[:160]
                    for n in v["nodes"][:3]) for v in violations)


def ax_tree(driver: Any) -> list[dict[str, Any]]:
    """Chromium's accessibility tree of the page: its nodes as (role, name), the
    ignored ones left out."""
    nodes = driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    return [{"role": n.get("role", {}).get("value", ""), "name": n.get("name", {}).get("value", "")}
            for n in nodes if not n.get("ignored")]


def names(tree: list[dict[str, Any]], role: str) -> list[str]:
    return [n["name"] for n in tree if n["role"] == role]
