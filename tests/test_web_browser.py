"""Every web page in a real browser: headless Chromium (Debian's chromium and
chromium-driver) driven by Selenium, against Uvicorn serving a database filled by
mail.  A screenshot of each page goes to test-artifacts/.  Skipped where Chromium or
its driver is not installed.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.notifications.views import board_summary_html
from pbmserv.render import html_mail
from pbmserv.service.boards import load_board
from pbmserv.web.serve import server
from tests.conftest import Mailer, free_port
from tests.webdata import HONEY_CELLS, ODD, fill

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1200,1100"]

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                                reason="needs Debian's chromium and chromium-driver")

if CHROMIUM is not None and CHROMEDRIVER is not None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver


class Browser:
    """A Chromium window on the pages served at ``base``."""

    def __init__(self, driver: WebDriver, base: str) -> None:
        self.driver = driver
        self.base = base

    def open(self, path: str) -> None:
        self.driver.get(self.base + path)

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        assert self.driver.save_screenshot(str(ARTIFACTS / f"web-{name}.png"))

    def text(self, selector: str) -> str:
        return str(self.driver.find_element(By.CSS_SELECTOR, selector).text)

    def count(self, selector: str) -> int:
        return len(self.driver.find_elements(By.CSS_SELECTOR, selector))

    def click(self, link_text: str) -> None:
        self.driver.find_element(By.LINK_TEXT, link_text).click()

    @property
    def path(self) -> str:
        url = str(self.driver.current_url)
        assert url.startswith(self.base), url
        return url[len(self.base):]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory,
             migrated_file: Path) -> Iterator[Database]:
    path = tmp_path_factory.mktemp("browser") / "web.sqlite3"
    shutil.copy(migrated_file, path)
    settings = Settings(database_url=f"sqlite:///{path}", maildir=path.parent / "mail")
    db = Database(settings.database_url)
    fill(Mailer(db, settings))
    yield db
    db.dispose()


@pytest.fixture(scope="module")
def browser(database: Database) -> Iterator[Browser]:
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    port = free_port()
    web = server(database, Settings(database_url=database.url), "127.0.0.1", port)
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
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield Browser(driver, f"http://127.0.0.1:{port}")
    finally:
        driver.quit()
        web.should_exit = True
        thread.join(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


def test_front_page(browser: Browser) -> None:
    browser.open("/")
    assert browser.driver.title == "Games - pbmserv"
    assert browser.count("table.games tr") == 5  # a header and four games
    assert "carol" in browser.text("table.seeks")
    browser.shot("home")
    browser.click("Honey Donuts")
    assert browser.path == "/games/honeydonuts"


def test_game_page(browser: Browser) -> None:
    browser.open("/games/honeydonuts")
    assert browser.count("table.boards tr") == 3
    browser.shot("game-honeydonuts")
    browser.click("101")
    assert browser.path == "/boards/honeydonuts/101"


def test_board_page_steps_through_the_moves(browser: Browser) -> None:
    browser.open("/boards/honeydonuts/101")
    assert browser.count("table.board td.cell") == HONEY_CELLS
    assert browser.count("table.board td.touched") == 2
    assert browser.text("div.position h2") == "After move 2: e3-d3 by bob"
    browser.shot("board-honeydonuts")
    browser.click("Previous")
    assert browser.path == "/boards/honeydonuts/101?ply=1"
    assert browser.text("div.position h2") == "After move 1: a1-b1 by alice (of 2)"
    assert browser.text("blockquote.comment") == '<script>alert("x")</script> & more'
    browser.shot("board-honeydonuts-ply1")
    browser.click("First")
    assert browser.text("div.position h2") == "The start (of 2)"
    assert browser.count("table.board td.touched") == 0
    browser.click("Next")
    assert browser.path == "/boards/honeydonuts/101?ply=1"
    browser.click("Next")
    assert browser.text("div.position h2") == "After move 2: e3-d3 by bob"
    browser.click("a1-b1*")
    assert browser.path == "/boards/honeydonuts/101?ply=1"


def test_amoeba_board_is_coloured_by_its_style_sheet(browser: Browser) -> None:
    browser.open("/boards/amoeba/101")
    assert browser.count("table.amoeba td.sq") == 72
    assert browser.count("table.amoeba td.touched") == 2
    touched = browser.driver.find_element(By.CSS_SELECTOR, "td.touched")
    plain = browser.driver.find_element(By.CSS_SELECTOR, "td.light:not(.touched)")
    assert touched.value_of_css_property("background-color") != \
        plain.value_of_css_property("background-color")
    assert "won by" in browser.text("p.status")
    browser.shot("board-amoeba")
    browser.click(ODD)
    assert browser.path == "/players/o.d%2Bd-1"


def test_other_boards(browser: Browser) -> None:
    browser.open("/boards/exnihilo/101")
    assert browser.count("table.exnihilo td.cell") == 61
    assert browser.count("table.exnihilo td.touched") == 1
    browser.shot("board-exnihilo")
    browser.open("/boards/honeydonuts/102")
    assert browser.text("div.movelist p") == "No moves yet."
    browser.shot("board-tournament")


def test_player_pages(browser: Browser) -> None:
    browser.open("/players/alice")
    assert browser.text("h1") == "alice"
    assert browser.count("table.boards tr") == 4
    assert browser.count("table.ratings tr") == 2
    browser.shot("player-alice")
    browser.open("/players/o.d%2Bd-1")
    assert browser.text("h1") == ODD
    browser.shot("player-odd")


def test_tournament_pages(browser: Browser) -> None:
    browser.open("/tournaments")
    assert browser.count("table.tournaments tr") == 2
    browser.shot("tournaments")
    browser.click("cup")
    assert browser.text("h1") == "Tournament cup"
    assert browser.count("table.crosstable tr") == 3
    browser.shot("tournament-cup")


def test_not_found(browser: Browser) -> None:
    browser.open("/boards/honeydonuts/999")
    assert browser.text("h1") == "Not found"
    browser.shot("not-found")


def test_html_mail_renders_with_inline_styles_only(browser: Browser,
                                                   database: Database) -> None:
    """The HTML summary a board mail will carry, opened as a file: no style sheet is
    left, yet the board is drawn in colour."""
    engine = get_engine("amoeba")
    assert engine is not None
    with database.reading() as session:
        page = html_mail("Amoeba Board 101",
                         board_summary_html(session, engine, load_board(session, engine, 101)))
    assert "<style" not in page
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "mail-summary-amoeba.html"
    path.write_text(page, encoding="utf-8")
    browser.driver.get(path.as_uri())
    cell = browser.driver.find_element(By.CSS_SELECTOR, "td.dark:not(.touched)")
    assert cell.value_of_css_property("background-color") == "rgba(181, 136, 99, 1)"
    assert browser.count("table.amoeba td.touched") == 2
    browser.shot("mail-summary-amoeba")
