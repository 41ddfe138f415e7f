"""A move by clicking, still by mail, end to end, for each game: the board mail as the
server delivered it (its HTML part opened in headless Chromium), its link to the move
page, the picks made by clicking the board, the preview, and the ``mailto:`` link's
mail sent through the real SMTP listener of a running server: the move is played, the
page goes stale.  Then the pages' accessibility: Chromium's accessibility tree and
axe-core (tests/accessibility.py).  Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
import shutil
import smtplib
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, Move
from pbmserv.db.session import Database
from pbmserv.server import Server
from pbmserv.web.serve import server as web_server
from tests.accessibility import ax_tree, axe_violations, described, names
from tests.conftest import Mailer, free_port, read_maildir, wait_until_settled
from tests.test_web_browser import ARTIFACTS, CHROMEDRIVER, CHROMIUM, FLAGS, Browser

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                                reason="needs Debian's chromium and chromium-driver")

if CHROMIUM is not None and CHROMEDRIVER is not None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

GAMES = {"amoeba": "Amoeba", "exnihilo": "Ex nihilo", "hexamoeba": "Hexamoeba",
         "honeydonuts": "Honey Donuts"}
#: each game's first move, picked by clicking: the cells in turn, or a link of the
#: list of picks ("No slide", "Split"...)
CLICKS = {
    "amoeba": (["e2", "e4", "b3", "b4"], "e2-e4,b3-b4"),
    "exnihilo": (["b2", "b6"], "b2-b6"),
    "hexamoeba": (["a2", "a3"], "a2-a3"),
    "honeydonuts": (["a1", "b1"], "a1-b1"),
}


@dataclass
class Site:
    db: Database
    settings: Settings
    browser: Browser
    smtp_port: int


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, migrated_file: Path) -> Iterator[Site]:
    """A board of each game between alice and bob, started by mail; then the server
    runs (its SMTP listener, its worker delivering to the Maildir) beside the pages."""
    path = tmp_path_factory.mktemp("moves") / "moves.sqlite3"
    shutil.copy(migrated_file, path)
    web_port = free_port()
    settings = Settings(database_url=f"sqlite:///{path}", maildir=path.parent / "mail",
                        web_url=f"http://127.0.0.1:{web_port}")
    db = Database(settings.database_url)
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob")
    mailer.send("notify bob pw-bob words on", sender="bob@example.org")
    for game in GAMES:
        mailer.send(f"{game} challenge alice bob", sender="carol@example.org")
    # Amoeba board 102, bob to move: for the screen reader's look at the move page
    mailer.send("amoeba challenge bob alice", sender="carol@example.org")
    listener = Server(db, settings, "127.0.0.1", free_port(), interval=0.1)
    listener.start()
    web = web_server(db, settings, "127.0.0.1", web_port)
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="pbmserv-chromium-")
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        wait_until_settled(db)  # the board mails delivered
        yield Site(db, settings, Browser(driver, settings.web_url or ""),
                   listener.controller.port)
    finally:
        driver.quit()
        web.should_exit = True
        thread.join(timeout=10)
        listener.stop()
        shutil.rmtree(profile, ignore_errors=True)
        db.dispose()


def delivered(site: Site, to: str, subject: str) -> EmailMessage:
    """The newest mail delivered to ``to`` whose Subject starts with ``subject``."""
    found = [m for m in read_maildir(site.settings.maildir)
             if m["To"] == to and str(m["Subject"]).startswith(subject)]
    assert found, f"no mail {subject!r} to {to}"
    return found[-1]


def open_html_part(site: Site, mail: EmailMessage, name: str) -> None:
    """The mail's HTML part, opened as a mail reader's browser would open it."""
    part = mail.get_body(preferencelist=("html",))
    assert isinstance(part, EmailMessage)
    ARTIFACTS.mkdir(exist_ok=True)
    file = ARTIFACTS / f"{name}.html"
    file.write_text(str(part.get_content()), encoding="utf-8")
    site.browser.driver.get(file.as_uri())


def click(site: Site, what: str) -> None:
    """Pick a cell on the board (by its name), or a link of the list of picks."""
    driver = site.browser.driver
    if re.fullmatch(r"[a-i][0-9]", what):
        driver.find_element(By.CSS_SELECTOR, f'td.option[aria-label^="{what},"] a.pick').click()
    else:
        driver.find_element(By.CSS_SELECTOR, "ul.options").find_element(
            By.LINK_TEXT, what).click()


def send_mailto(site: Site, href: str, sender: str) -> None:
    """What a mail program does with the mailto: link: a mail with its To, Subject
    and body, sent to the server's SMTP listener."""
    url = urlsplit(href)
    assert url.scheme == "mailto"
    query = parse_qs(url.query)
    mail = EmailMessage()
    mail["From"], mail["To"] = sender, unquote(url.path)
    mail["Subject"] = query["subject"][0]
    mail.set_content(query["body"][0].replace("\r\n", "\n") + "Sent from the move page.\n")
    with smtplib.SMTP("127.0.0.1", site.smtp_port) as client:
        client.send_message(mail)


def moves_of(site: Site, game: str) -> list[str]:
    with site.db.reading() as session:
        return list(session.scalars(select(Move.notation).join(Board).where(
            Board.game == game).order_by(Move.ply)))


@pytest.mark.parametrize("game", list(GAMES))
def test_a_move_picked_by_clicking_is_played_by_the_mail_it_writes(site: Site,
                                                                   game: str) -> None:
    browser = site.browser
    mail = delivered(site, "alice@example.org", f"New {GAMES[game]} Board 101 alice")
    open_html_part(site, mail, f"mail-{game}")
    browser.click("Pick your move by clicking")
    assert browser.path.startswith("/move/b")
    page = browser.path
    assert browser.text("h2#ask").startswith("Pick the")
    browser.shot(f"move-{game}-start")
    picks, notation = CLICKS[game]
    for n, what in enumerate(picks):
        click(site, what)
        if n == 0:
            browser.shot(f"move-{game}-picked")
    assert browser.text("h2") == f"Your move: {notation}"
    assert browser.count("table.board td.touched") >= 1  # the preview marks its cells
    browser.shot(f"move-{game}-preview")
    link = browser.driver.find_element(By.CSS_SELECTOR, "a.mail")
    assert link.text == f"Write the mail that plays {notation}"
    send_mailto(site, str(link.get_attribute("href")), "alice@example.org")
    wait_until_settled(site.db)
    assert moves_of(site, game) == [notation]
    reply = delivered(site, "alice@example.org", f"{GAMES[game]} Board 101")
    assert f"Your move {notation} on {GAMES[game]} board 101 has been played." in " ".join(
        str(reply.get_body(preferencelist=("plain",)).get_content()).split())  # type: ignore[union-attr]
    # the page has had its day
    browser.open(page)
    assert "it has moved on since the board mail with this link was sent" in browser.text(
        "p.stale")
    browser.shot(f"move-{game}-stale")
    # bob's board mail (he asked for the board in words) leads to his own move
    theirs = delivered(site, "bob@example.org", f"{GAMES[game]} Board 101 bob")
    assert "THE BOARD IN WORDS" in str(theirs.get_body(  # type: ignore[union-attr]
        preferencelist=("plain",)).get_content())
    open_html_part(site, theirs, f"mail-{game}-words")
    assert browser.text("div.words h3") == "The board in words"
    assert not (violations := axe_violations(browser.driver)), described(violations)
    browser.click("Pick your move by clicking")
    assert browser.text("h1") == f"bob's move on {GAMES[game]} board 101"


def test_the_move_page_reads_well_to_a_screen_reader(site: Site) -> None:
    """Chromium's accessibility tree of the Amoeba move page: a table with column and
    row headers, every cell named with what stands on it, the cells to pick links
    that say what picking them does; and no serious axe-core violation on any step."""
    browser = site.browser
    mail = delivered(site, "bob@example.org", "New Amoeba Board 102 bob")
    open_html_part(site, mail, "mail-amoeba-102")
    assert not (violations := axe_violations(browser.driver)), described(violations)
    browser.click("Pick your move by clicking")
    tree = ax_tree(browser.driver)
    assert names(tree, "columnheader") == list("abcdefgh")
    assert names(tree, "rowheader") == [str(n) for n in range(9, 0, -1)]
    cells = names(tree, "cell")
    assert "e9, Black king" in cells and "b4, a hole" in cells and "e3, empty" in cells
    assert "e2, White pawn: pick it to move" in names(tree, "link")
    assert any(n.startswith("The board: files a to h") for n in names(tree, "caption")) or \
        any(n["name"].startswith("The board: files a to h") for n in tree
            if n["role"] in ("table", "StaticText"))
    assert not (violations := axe_violations(browser.driver)), described(violations)
    browser.driver.find_element(By.CSS_SELECTOR, 'td.option[aria-label^="e2,"] a.pick').click()
    assert not (violations := axe_violations(browser.driver)), described(violations)
    browser.driver.find_element(By.CSS_SELECTOR, 'td.option[aria-label^="e4,"] a.pick').click()
    browser.driver.find_element(By.CSS_SELECTOR, "ul.options").find_element(
        By.LINK_TEXT, "No slide").click()
    assert browser.text("h2") == "Your move: e2-e4"
    assert not (violations := axe_violations(browser.driver)), described(violations)
    browser.driver.find_element(By.CSS_SELECTOR, "details.words summary").click()
    assert "Legal moves of White (bob)" in browser.text("details.words")
    assert not (violations := axe_violations(browser.driver)), described(violations)


@pytest.mark.parametrize("path", ["/", "/games/amoeba", "/boards/amoeba/101",
                                  "/boards/honeydonuts/101", "/boards/hexamoeba/101",
                                  "/boards/exnihilo/101", "/players/alice", "/play",
                                  "/tournaments"])
def test_the_pages_pass_axe(site: Site, path: str) -> None:
    site.browser.open(path)
    if site.browser.count("details.words"):
        site.browser.driver.find_element(By.CSS_SELECTOR, "details.words summary").click()
    assert not (violations := axe_violations(site.browser.driver)), described(violations)
