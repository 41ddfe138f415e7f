"""The web pages and an HTML board mail at phone width (390 CSS pixels) in headless
Chromium: a long comment (a long URL, a long word) and the Honey Donuts legend stay
inside the screen, and every line of the HTML mail is in the sans-serif font of its
summary.  Screenshots go to test-artifacts/.  Skipped without Chromium."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.web.serve import server
from tests.conftest import Mailer, free_port
from tests.test_web_browser import ARTIFACTS, CHROMEDRIVER, CHROMIUM, FLAGS, Browser

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                                reason="needs Debian's chromium and chromium-driver")

if CHROMIUM is not None and CHROMEDRIVER is not None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

PHONE = 390
URL = "https://example.org/a/long/path/that/goes/on/and/on/for/ever/index.html?page=12345"
LONG = "Thisisaverylongwordwithoutanyspacethatnophonescreencanholdinonelineofcourse"
COMMENT = f"Read {URL} first, then {LONG}."


@pytest.fixture(scope="module")
def phone(tmp_path_factory: pytest.TempPathFactory,
          migrated_file: Path) -> Iterator[tuple[Browser, Database]]:
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    path = tmp_path_factory.mktemp("phone") / "web.sqlite3"
    shutil.copy(migrated_file, path)
    settings = Settings(database_url=f"sqlite:///{path}", maildir=path.parent / "mail")
    db = Database(settings.database_url)
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts move 101 alice pw-alice a1-a2", COMMENT)
    mailer.reply("exnihilo challenge alice bob -large")
    port = free_port()
    web = server(db, Settings(database_url=db.url), "127.0.0.1", port)
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="pbmserv-chromium-")
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.add_experimental_option("mobileEmulation", {
        "deviceMetrics": {"width": PHONE, "height": 844, "pixelRatio": 1}})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield Browser(driver, f"http://127.0.0.1:{port}"), db
    finally:
        driver.quit()
        web.should_exit = True
        thread.join(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
        db.dispose()


def right_edge(browser: Browser, selector: str) -> float:
    return float(browser.driver.execute_script(
        "return document.querySelector(arguments[0]).getBoundingClientRect().right",
        selector))


def test_a_long_comment_and_the_legend_fit_a_phone(phone: tuple[Browser, Database]) -> None:
    browser, _ = phone
    browser.open("/boards/honeydonuts/101")
    assert browser.driver.execute_script("return document.documentElement.clientWidth") == PHONE
    assert browser.text("blockquote.comment").replace("\n", "") == COMMENT
    browser.shot("phone-board-comment")
    for selector in ("blockquote.comment", "p.legend", "div.movelist"):
        assert right_edge(browser, selector) <= PHONE, selector
    # the page itself is no wider than the screen
    assert browser.driver.execute_script(
        "return document.documentElement.scrollWidth") <= PHONE


def test_every_line_of_the_html_board_mail_is_sans_serif(
        phone: tuple[Browser, Database]) -> None:
    browser, db = phone
    with db.transaction() as s:
        mail = s.scalars(select(OutboxMessage).where(
            OutboxMessage.to_addr == "bob@example.org",
            OutboxMessage.subject.like("Honey Donuts Board 101%"))
            .order_by(OutboxMessage.id.desc())).first()
        assert mail is not None and mail.html_body is not None
        html = mail.html_body
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "phone-mail-honeydonuts.html"
    path.write_text(html, encoding="utf-8")
    browser.driver.get(path.as_uri())
    browser.shot("phone-mail-honeydonuts")
    blocks = browser.driver.find_elements(By.CSS_SELECTOR, "div.board-mail p, "
                                          "div.board-mail blockquote")
    assert blocks
    for element in blocks:
        family = element.value_of_css_property("font-family")
        assert "serif" in family and "sans-serif" in family, (element.text, family)
        assert element.rect["x"] + element.rect["width"] <= PHONE, element.text
    assert browser.driver.execute_script(
        "return document.documentElement.scrollWidth") <= PHONE


def test_the_largest_board_fits_a_phone(phone: tuple[Browser, Database]) -> None:
    """Ex nihilo -large, 11 cells across: its cells narrow to fit, and the page keeps
    the phone's width (a board wider still would scroll inside its column)."""
    browser, _ = phone
    browser.open("/boards/exnihilo/101")
    browser.shot("phone-board-exnihilo-large")
    assert browser.count("table.exnihilo td.cell") == 91
    assert right_edge(browser, "table.board") <= PHONE
    assert right_edge(browser, "p.legend") <= PHONE
    assert browser.driver.execute_script(
        "return document.documentElement.scrollWidth") <= PHONE
