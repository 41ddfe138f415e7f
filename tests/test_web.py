"""The web pages over HTTP (Starlette's TestClient), on a database filled by mail."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.reads.pages import boards_of_game, boards_of_player
from pbmserv.service.accounts import find_user
from pbmserv.web import create_app
from tests.conftest import Mailer
from tests.webdata import HONEY_CELLS, ODD, fill


@dataclass
class Site:
    db: Database
    settings: Settings
    client: TestClient
    path: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, migrated_file: Path) -> Iterator[Site]:
    """One database for the module's tests: the pages only read it."""
    path = tmp_path_factory.mktemp("web") / "web.sqlite3"
    shutil.copy(migrated_file, path)
    settings = Settings(database_url=f"sqlite:///{path}", maildir=path.parent / "mail")
    db = Database(settings.database_url)
    fill(Mailer(db, settings))
    with TestClient(create_app(db, settings)) as client:
        yield Site(db, settings, client, path)
    db.dispose()


PAGES = ["/", "/games/honeydonuts", "/games/amoeba", "/games/hexamoeba", "/games/exnihilo",
         "/boards/honeydonuts/101", "/boards/honeydonuts/101?ply=0",
         "/boards/honeydonuts/101?ply=1", "/boards/honeydonuts/102", "/boards/amoeba/101",
         "/boards/exnihilo/101", "/players/alice", "/players/bob", "/players/o.d%2Bd-1",
         "/players/carol", "/tournaments", "/tournaments/cup"]


def get(site: Site, path: str, status: int = 200) -> str:
    response = site.client.get(path)
    assert response.status_code == status, (path, response.status_code, response.text[:300])
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return response.text


def cells(html: str) -> list[str]:
    """The cells of the drawn board: 'name: content' (their titles)."""
    return re.findall(r'<td (?:colspan="2" )?class="(?:cell|sq)[^"]*" title="([^"]*)"', html)


def touched(html: str) -> list[str]:
    found = re.findall(r'class="(?:cell|sq)[^"]* touched" title="([a-z]\d+)', html)
    return sorted(found)


@pytest.mark.parametrize("path", [*PAGES, "/play"])  # /play reads no database
def test_every_page_is_safe(site: Site, path: str) -> None:
    response = site.client.get(path)
    assert response.status_code == 200
    html = response.text
    # no mail address of a player: the server's own is the one to play by
    assert "@" not in html.replace(site.settings.address, "")
    assert "pw-" not in html and "$argon2" not in html  # no password, no hash
    assert "<script" not in html.lower() and "<svg" not in html.lower()
    assert "script-src" not in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_the_front_page_lists_the_games_and_open_challenges(site: Site) -> None:
    html = get(site, "/")
    rows = re.findall(r'<tr><td><a href="/games/(\w+)">[^<]+</a> \(\w+\)</td>'
                      r'<td class="n">(\d+)</td><td class="n">(\d+)</td><td class="n">(\d+)</td>',
                      html)
    assert sorted(rows) == [("amoeba", "0", "1", "0"), ("exnihilo", "1", "0", "0"),
                            ("hexamoeba", "0", "0", "1"), ("honeydonuts", "2", "0", "0")]
    seeks = html[html.index('<table class="list seeks">'):]
    assert "<td>Hexamoeba</td><td class=\"n\">1</td>" in seeks
    assert '<a href="/players/carol">carol</a>' in seeks
    # each challenge's clock, as the seek set it
    assert "<td>none</td><td>a reminder after 3 days without a move, lost on time after 10" \
        "</td>" in seeks


def test_a_game_lists_its_boards_newest_first(site: Site) -> None:
    html = get(site, "/games/honeydonuts")
    assert re.findall(r'<a href="/boards/honeydonuts/(\d+)">', html) == ["102", "101"]
    assert "Older" not in html and "Newer" not in html
    html = get(site, "/games/honeydonuts?before=102")
    assert re.findall(r'<a href="/boards/honeydonuts/(\d+)">', html) == ["101"]
    assert 'href="/games/honeydonuts?after=101"' in html and "Older" not in html
    html = get(site, "/games/honeydonuts?after=101")
    assert re.findall(r'<a href="/boards/honeydonuts/(\d+)">', html) == ["102"]
    assert 'href="/games/honeydonuts?before=102"' in html
    assert "No boards yet." in get(site, "/games/hexamoeba")


def test_pages_of_boards_go_by_key(site: Site) -> None:
    with site.db.reading() as session:
        first = boards_of_game(session, "honeydonuts", size=1)
        assert [b.number for b in first.boards] == [102] and first.older == 102
        assert first.newer is None
        second = boards_of_game(session, "honeydonuts", before=first.older, size=1)
        assert [b.number for b in second.boards] == [101]
        assert (second.older, second.newer) == (None, 101)
        back = boards_of_game(session, "honeydonuts", after=second.newer, size=1)
        assert [b.number for b in back.boards] == [102] and back.older == 102
        alice = find_user(session, "alice")
        assert alice is not None
        page = boards_of_player(session, alice.id, size=2)
        assert [(b.game, b.number) for b in page.boards] == [("honeydonuts", 102),
                                                              ("amoeba", 101)]
        rest = boards_of_player(session, alice.id, before=page.older, size=2)
        assert [(b.game, b.number) for b in rest.boards] == [("honeydonuts", 101)]
        assert rest.older is None and rest.newer == rest.boards[0].id


def test_a_board_shows_its_cells_moves_and_last_move(site: Site) -> None:
    html = get(site, "/boards/honeydonuts/101")
    assert len(cells(html)) == HONEY_CELLS
    assert touched(html) == ["d3", "e3"]
    assert "After move 2: e3-d3 by bob" in html
    assert re.search(r'<td class="here"><a href="/boards/honeydonuts/101\?ply=2"[^>]*>e3-d3</a>',
                     html)
    assert '<a href="/boards/honeydonuts/101?ply=1" title="move 1 (with a comment)">a1-b1*</a>' \
        in html
    assert "It is alice&#39;s turn (Red), move 3." in html
    assert '<a href="/boards/honeydonuts/101?ply=1" rel="prev">Previous</a>' in html
    assert '<span class="off">Next</span>' in html
    assert '<a href="/players/alice">alice</a>' in html


def test_stepping_through_the_moves(site: Site) -> None:
    start = get(site, "/boards/honeydonuts/101?ply=0")
    assert "The start (of 2)" in start and touched(start) == []
    assert '<a href="/boards/honeydonuts/101?ply=1" rel="next">Next</a>' in start
    assert '<span class="off">Previous</span>' in start
    first = get(site, "/boards/honeydonuts/101?ply=1")
    assert "After move 1: a1-b1 by alice (of 2)" in first
    assert touched(first) == ["a1", "b1"]
    assert '<a href="/boards/honeydonuts/101?ply=2" rel="next">Next</a>' in first
    assert '<a href="/boards/honeydonuts/101?ply=0" rel="prev">Previous</a>' in first
    # the comment of the move shown, escaped
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more" in first
    last = get(site, "/boards/honeydonuts/101?ply=2")
    assert cells(last) == cells(get(site, "/boards/honeydonuts/101"))
    assert cells(start) != cells(first) != cells(last)
    assert "e3, white piece" in cells(first)[2] or "e3, Blue piece" in cells(first)[2]


def test_a_finished_board_shows_its_result_and_ratings(site: Site) -> None:
    html = get(site, "/boards/amoeba/101")
    assert f"Game won by {ODD} (Black): alice resigned." in html
    assert re.search(rf"{re.escape(ODD)} 1500\? -&gt; \d+\? \(\+\d+\)", html)
    assert f'<a href="/players/o.d%2Bd-1">{ODD}</a>' in html
    assert len(cells(html)) == 72 and "Clock:" not in html
    assert "Well played." not in html  # a resignation's comment is mail, not a move's


def test_a_tournament_board_links_its_tournament(site: Site) -> None:
    html = get(site, "/boards/honeydonuts/102")
    assert '<a href="/tournaments/cup">cup</a>, round 1' in html
    assert "No moves yet." in html and touched(html) == []


def test_a_player_page_lists_boards_and_ratings(site: Site) -> None:
    html = get(site, "/players/alice")
    # (the boards waiting for alice's move come first, then all her boards)
    listed = html[html.index("<h2>Boards"):]
    boards = re.findall(r'<a href="/boards/(\w+)/(\d+)">', listed)
    assert boards == [("honeydonuts", "102"), ("amoeba", "101"), ("honeydonuts", "101")]
    ratings = html[html.index('<table class="list ratings">'):html.index("<h2>Boards")]
    assert re.search(r"<td>Amoeba</td><td class=\"n\">\d+\?</td><td class=\"n\">\d+</td>"
                     r"<td class=\"n\">1</td>", ratings)
    odd = get(site, "/players/o.d%2Bd-1")
    assert f"<h1>{ODD}</h1>" in odd and "/boards/amoeba/101" in odd
    assert "<h2>Ratings</h2>" not in get(site, "/players/carol")


def test_tournament_pages(site: Site) -> None:
    listing = get(site, "/tournaments")
    assert '<a href="/tournaments/cup">cup</a>' in listing
    assert "a round robin of Honey Donuts" in listing and "in play" in listing
    html = get(site, "/tournaments/cup")
    assert "<h1>Tournament cup</h1>" in html and "<h2>Crosstable</h2>" in html
    assert '<a href="/boards/honeydonuts/102">board 102</a>' in html
    assert get(site, "/tournaments/CUP") == html


@pytest.mark.parametrize(("path", "status"), [
    ("/boards/honeydonuts/999", 404), ("/boards/chess/101", 404), ("/games/chess", 404),
    ("/boards/honeydonuts/101?ply=3", 404), ("/boards/honeydonuts/101?ply=-1", 400),
    ("/boards/honeydonuts/101?ply=x", 400), ("/boards/honeydonuts/99999999999999999999", 400),
    ("/games/honeydonuts?before=1e3", 400), ("/players/nobody", 404),
    ("/players/%3Cscript%3Ealert(1)%3C%2Fscript%3E", 404), ("/tournaments/nothing", 404),
    ("/no/such/page", 404),
])
def test_unknown_things_are_not_found(site: Site, path: str, status: int) -> None:
    html = get(site, path, status)
    assert "<script" not in html and "@" not in html.replace(site.settings.address, "")
    assert "<h1>Not found</h1>" in html or "<h1>Bad request</h1>" in html


def test_pages_only_read(site: Site) -> None:
    response = site.client.post("/boards/honeydonuts/101", data={"ply": "1"})
    assert response.status_code == 405
    assert site.client.head("/").status_code == 200


def test_a_closed_account_has_no_page(site: Site, tmp_path: Path) -> None:
    path = tmp_path / "closed.sqlite3"
    shutil.copy(site.path, path)
    settings = Settings(database_url=f"sqlite:///{path}", maildir=tmp_path / "mail")
    db = Database(settings.database_url)
    try:
        Mailer(db, settings).reply("signoff carol pw-carol", sender="carol@example.org")
        client = TestClient(create_app(db, settings))
        assert client.get("/players/carol").status_code == 404
    finally:
        db.dispose()


BIG_TABLES = {"boards", "board_players", "moves", "seeks", "users", "board_ratings",
              "board_events", "ratings", "tournament_games", "tournament_players"}


@pytest.mark.parametrize("path", PAGES)
def test_pages_read_through_indexes(site: Site, path: str) -> None:
    """No query of a page reads a whole table that grows with the boards."""
    statements: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, params: Any, context: Any,
             executemany: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append((statement, params))

    event.listen(site.db.engine, "before_cursor_execute", grab)
    try:
        get(site, path)
    finally:
        event.remove(site.db.engine, "before_cursor_execute", grab)
    assert statements
    with sqlite3.connect(site.path) as conn:
        for statement, params in statements:
            for row in conn.execute("EXPLAIN QUERY PLAN " + statement, params):
                step = row[-1]
                scanned = re.match(r"SCAN (\w+)", step)
                assert not (scanned and scanned.group(1) in BIG_TABLES), (step, statement)


def test_the_web_command_serves_the_database_of_the_settings(
        monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    from click.testing import CliRunner

    import pbmserv.web
    from pbmserv.cli import main

    served: list[tuple[str, str, int]] = []

    def fake_serve(db: Database, settings: Settings, host: str, port: int) -> None:
        served.append((db.url, host, port))

    monkeypatch.setattr(pbmserv.web, "serve", fake_serve)
    result = CliRunner().invoke(main, ["web", "--port", "8099"],
                                env={"PBMSERV_DATABASE_URL": db_url})
    assert result.exit_code == 0, result.output
    assert served == [(db_url, "127.0.0.1", 8099)]


@pytest.mark.postgres
def test_every_page_on_postgres(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    db = Database(pg_url)
    try:
        fill(Mailer(db, settings))
        with TestClient(create_app(db, settings)) as client:
            pages = {path: client.get(path) for path in PAGES}
            assert {path: r.status_code for path, r in pages.items()} == dict.fromkeys(PAGES,
                                                                                       200)
            assert touched(pages["/boards/honeydonuts/101?ply=1"].text) == ["a1", "b1"]
            alice = pages["/players/alice"].text
            # (after the boards waiting for her move, all her boards)
            assert re.findall(r'<a href="/boards/(\w+)/(\d+)">',
                              alice[alice.index("<h2>Boards"):]) == [
                ("honeydonuts", "102"), ("amoeba", "101"), ("honeydonuts", "101")]
            assert client.get("/games/honeydonuts?before=102").text.count(
                '<a href="/boards/honeydonuts/') == 1
    finally:
        db.dispose()


def test_serve_runs_the_web_pages_too(settings: Settings, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.conftest import free_port

    smtp, http = free_port(), free_port()
    env = dict(os.environ, PBMSERV_DATABASE_URL=settings.database_url,
               PBMSERV_MAILDIR=str(settings.maildir))
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv", "serve", "--port", str(smtp),
                             "--web", f"127.0.0.1:{http}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        page = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not page:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http}/", timeout=5) as answer:
                    page = answer.read().decode()
            except OSError:
                time.sleep(0.2)
        assert "honeydonuts" in page.lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_page_speaks_the_language_the_browser_asks_for(site: Site) -> None:
    """Accept-Language chooses the page's language (the first of the server's that it
    names), the page says so in its lang attribute, and caches are told it varies."""
    english = site.client.get("/boards/honeydonuts/101")
    assert '<html lang="en">' in english.text and ">Moves<" in english.text
    assert english.headers["vary"] == "Accept-Language"
    for asked, lang, moves in (("ja-JP,ja;q=0.9", "ja", ">指し手<"),
                               ("pt-BR, de;q=0.8", "de", ">Züge<"),
                               ("fr", "fr", ">Coups<")):
        page = site.client.get("/boards/honeydonuts/101", headers={"Accept-Language": asked})
        assert page.status_code == 200
        assert f'<html lang="{lang}">' in page.text and moves in page.text, asked
        assert "honeydonuts" in page.text  # a game's name in a command stays as it is
    assert '<html lang="en">' in site.client.get("/").text  # and the next one is English
