"""The administrator's commands: accounts, boards, the inbox and outbox, status."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import delete, select, update

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.migrate import head
from pbmserv.db.models import Board, BoardRating, InboundMessage, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.games.base import Termination
from pbmserv.logs import operator
from pbmserv.service.accounts import authenticate
from pbmserv.service.errors import PlayerError
from tests.conftest import Mailer, check_mail_shape


def cli(settings: Settings, *args: str, stdin: str | None = None) -> Result:
    env = {"PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_MAILDIR": str(settings.maildir),
           "PBMSERV_HEALTH_MAIL_AGE": str(settings.health_mail_age)}
    return CliRunner().invoke(main, list(args), env=env, input=stdin)


def outbox(db: Database) -> list[OutboxMessage]:
    with db.reading() as s:
        return list(s.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))


def start(mailer: Mailer) -> None:
    mailer.signup("alice", "bob", "carol")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts subscribe 101 carol pw-carol", sender="carol@example.org")


# -- accounts -------------------------------------------------------------------------------
def test_disable_and_enable(mailer: Mailer, settings: Settings) -> None:
    start(mailer)
    assert cli(settings, "users", "disable", "bob").output == "bob: disabled\n"
    assert cli(settings, "users", "disable", "bob").output == "bob: was disabled already\n"
    refused = mailer.reply("honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")
    assert "the account bob is disabled by the server's administrator" in " ".join(
        refused.split())
    assert "is disabled" in " ".join(mailer.reply("honeydonuts challenge alice bob").split())
    shown = cli(settings, "users", "show", "bob").output
    assert "state     disabled since" in shown and "boards    honeydonuts 101" in shown
    assert "(disabled " in cli(settings, "users", "list").output
    assert cli(settings, "users", "enable", "bob").output == "bob: enabled\n"
    assert cli(settings, "users", "enable", "bob").output == "bob: was not disabled\n"
    assert "it is alice's turn, not yours" in mailer.reply(
        "honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")


def test_reset_password_and_set_email(mailer: Mailer, settings: Settings, db: Database) -> None:
    mailer.signup("alice")
    for n in range(3):
        mailer.reply(f"vacation alice wrong{n}")
    typed = cli(settings, "users", "reset-password", "alice", stdin="fresh-pw\nfresh-pw\n")
    assert typed.exit_code == 0 and typed.output.endswith("alice: password set\n")
    assert "fresh-pw" not in typed.output
    assert "passwords" not in cli(settings, "users", "show", "alice").output  # count cleared
    with db.transaction() as s:
        assert authenticate(s, "alice", "fresh-pw", "x@example.org").userid == "alice"
    bad = cli(settings, "users", "reset-password", "alice", "--password", "has space")
    assert bad.exit_code == 1 and "may not contain spaces" in bad.output
    moved = cli(settings, "users", "set-email", "alice", "Alice@Elsewhere.org")
    assert moved.output == "alice: mail goes to alice@elsewhere.org\n"
    assert "address   alice@elsewhere.org" in cli(settings, "users", "show", "alice").output
    assert cli(settings, "users", "set-email", "alice", "nope").exit_code == 1
    unknown = cli(settings, "users", "show", "nobody")
    assert unknown.exit_code == 1 and "there is no user 'nobody'" in unknown.output


def test_reset_password_by_mail_from_the_cli(mailer: Mailer, settings: Settings,
                                             db: Database) -> None:
    mailer.signup("alice")
    result = cli(settings, "users", "reset-password", "alice", "--mail")
    assert result.exit_code == 0 and "a code is queued for the account's address" in result.output
    [mail] = [m for m in outbox(db) if "reset" in m.subject]
    assert mail.to_addr == "alice@example.org" and "The administrator of pbmserv" in " ".join(
        mail.body.split())
    check_mail_shape([mail])


# -- boards ---------------------------------------------------------------------------------
def test_abandon_mails_everyone_and_rates_nobody(mailer: Mailer, settings: Settings,
                                                 db: Database) -> None:
    start(mailer)
    mailer.reply("honeydonuts move 101 alice pw-alice a1-a2")
    before = len(outbox(db))
    result = cli(settings, "boards", "abandon", "honeydonuts", "101", "--reason",
                 "both players gone")
    assert result.exit_code == 0, result.output
    assert "Game ended with no result: abandoned by the administrator (both players gone)." \
        in " ".join(result.output.split())
    assert result.output.endswith("3 mail(s) queued\n")
    mails = outbox(db)[before:]
    assert sorted(m.to_addr for m in mails) == ["alice@example.org", "bob@example.org",
                                                "carol@example.org"]
    assert {m.subject for m in mails} == {"Honey Donuts Board 101 Game over"}
    check_mail_shape(mails)
    with db.reading() as s:
        board = s.scalar(select(Board))
        assert board is not None and board.termination is Termination.ABANDONED
        assert board.winner is None and s.scalar(select(BoardRating)) is None
    assert "no result" in mailer.reply("honeydonuts history alice")
    again = cli(settings, "boards", "abandon", "honeydonuts", "101")
    assert again.exit_code == 1 and "is over already" in again.output


def welcomed(mailer: Mailer, db: Database, *userids: str) -> None:
    """Confirmed accounts, with one mail in and one out for each: the confirmation that
    welcomes it (the signup and its reply are taken out of the queues)."""
    mailer.signup(*userids)
    with db.transaction() as s:
        signups = list(s.scalars(select(OutboxMessage.inbound_id)
                                 .where(OutboxMessage.subject.like("confirm %"))))
        s.execute(delete(OutboxMessage).where(OutboxMessage.inbound_id.in_(signups)))
        s.execute(delete(InboundMessage).where(InboundMessage.id.in_(signups)))


def take_up(mailer: Mailer) -> None:
    """Both players take board 101 up: only then is it rated."""
    for uid in ("alice", "bob"):
        mailer.reply(f"honeydonuts accept 101 {uid} pw-{uid}", sender=f"{uid}@example.org")


def test_adjudicate_gives_a_rated_result(mailer: Mailer, settings: Settings,
                                         db: Database) -> None:
    start(mailer)
    take_up(mailer)
    wrong = cli(settings, "boards", "adjudicate", "honeydonuts", "101", "carol")
    assert wrong.exit_code == 1 and "give one of alice, bob, or draw" in wrong.output
    assert "there is no honeydonuts board 102" in cli(
        settings, "boards", "adjudicate", "honeydonuts", "102", "bob").output
    result = cli(settings, "boards", "adjudicate", "HoneyDonuts", "101", "Bob")
    assert result.exit_code == 0, result.output
    assert "Game won by bob (Blue): adjudicated by the administrator." in " ".join(
        result.output.split())
    with db.reading() as s:
        board = s.scalar(select(Board))
        assert board is not None and board.termination is Termination.ADJUDICATION
        assert board.winner == 1 and len(s.scalars(select(BoardRating)).all()) == 2
    shown = cli(settings, "boards", "show", "honeydonuts", "101")
    assert shown.exit_code == 0 and "Summary of Honey Donuts Board 101" in shown.output


def test_adjudicate_a_draw(mailer: Mailer, settings: Settings, db: Database) -> None:
    start(mailer)
    take_up(mailer)
    assert cli(settings, "boards", "adjudicate", "honeydonuts", "101", "draw").exit_code == 0
    with db.reading() as s:
        assert [r.score for r in s.scalars(select(BoardRating))] == [0.5, 0.5]


# -- the inbox and outbox -------------------------------------------------------------------
def test_purge_keeps_what_is_waiting_or_failed(mailer: Mailer, settings: Settings,
                                               db: Database) -> None:
    welcomed(mailer, db, "alice", "bob")
    with db.transaction() as s:
        s.execute(update(InboundMessage).values(received_at=utcnow() - timedelta(days=40)))
        s.execute(update(OutboxMessage).values(created_at=utcnow() - timedelta(days=40),
                                               status=OutboxStatus.SENT))
        first = s.scalar(select(InboundMessage.id).order_by(InboundMessage.id))
        s.execute(update(InboundMessage).where(InboundMessage.id == first)
                  .values(status=InboundStatus.FAILED))
        s.execute(update(OutboxMessage).where(OutboxMessage.inbound_id == first)
                  .values(status=OutboxStatus.PENDING))
    mailer.reply("help")  # new: kept
    result = cli(settings, "inbox", "purge", "--older-than", "30")
    assert result.output == "purged 1 incoming and 1 outgoing mail(s)\n"
    with db.reading() as s:
        assert len(s.scalars(select(InboundMessage)).all()) == 2
        kept = s.scalars(select(OutboxMessage)).all()
        assert len(kept) == 2 and kept[0].inbound_id == first
    assert cli(settings, "inbox", "purge").exit_code == 2  # --older-than is required


def test_replay_all_failed(mailer: Mailer, settings: Settings, db: Database,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    from pbmserv.commands.general import Help

    def broken(*args: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(Help, "run", broken)
    mailer.send("help")
    mailer.send("help", sender="bob@example.org")
    monkeypatch.undo()
    result = cli(settings, "inbox", "replay", "--all-failed")
    assert result.output == "message 1: done\nmessage 2: done\nreplayed 2 message(s)\n"
    assert cli(settings, "inbox", "replay").exit_code == 2


def test_outbox_retry_and_discard(mailer: Mailer, settings: Settings, db: Database) -> None:
    welcomed(mailer, db, "alice", "bob", "carol")
    ids = [m.id for m in outbox(db)]
    with db.transaction() as s:
        s.execute(update(OutboxMessage).where(OutboxMessage.id == ids[0])
                  .values(status=OutboxStatus.FAILED, last_error="550 no such user"))
        s.execute(update(OutboxMessage).where(OutboxMessage.id.in_(ids[1:]))
                  .values(next_attempt_at=utcnow() + timedelta(hours=1)))
    assert cli(settings, "outbox", "discard", str(ids[2])).output == \
        f"outgoing mail {ids[2]} discarded\n"
    result = cli(settings, "outbox", "retry", str(ids[0]))
    assert result.output == "queued 1 mail(s) again; sent 1\n"
    assert cli(settings, "outbox", "retry", "--all").output == "queued 1 mail(s) again; sent 1\n"
    statuses = [m.status for m in outbox(db)]
    assert statuses == [OutboxStatus.SENT, OutboxStatus.SENT, OutboxStatus.DISCARDED]
    sent_again = cli(settings, "outbox", "retry", str(ids[0]))
    assert sent_again.exit_code == 1 and "is sent: it cannot be retried" in sent_again.output
    assert cli(settings, "outbox", "discard", "999").exit_code == 1
    assert cli(settings, "outbox", "retry").exit_code == 2
    assert "discarded" in cli(settings, "outbox", "list", "--status", "discarded").output


def test_outbox_discard_in_bulk(mailer: Mailer, settings: Settings, db: Database) -> None:
    """Answers queued to old mail (a mailbox's first start, a backlog behind a daily
    cap): discarded by age and by address, not one by one."""
    welcomed(mailer, db, "alice", "bob", "carol")
    ids = [m.id for m in outbox(db)]
    with db.transaction() as s:
        s.execute(update(OutboxMessage).where(OutboxMessage.id.in_(ids[:2]))
                  .values(created_at=utcnow() - timedelta(hours=3)))
        s.execute(update(OutboxMessage).where(OutboxMessage.id == ids[1])
                  .values(status=OutboxStatus.HELD))
        s.execute(update(OutboxMessage).where(OutboxMessage.id == ids[2])
                  .values(to_addr="Carol+games@Example.org", to_key="carol@example.org"))
    assert cli(settings, "outbox", "discard").exit_code == 2  # an ID, or what to discard
    assert cli(settings, "outbox", "discard", "--older-than", "3x").exit_code == 2
    assert cli(settings, "outbox", "discard", "--older-than", "4h").output == \
        "discarded 0 outgoing mail(s)\n"
    assert cli(settings, "outbox", "discard", "--older-than", "2h").output == \
        "discarded 2 outgoing mail(s)\n"
    assert cli(settings, "outbox", "discard", "--to", "CAROL@example.org").output == \
        "discarded 1 outgoing mail(s)\n"
    assert [m.status for m in outbox(db)] == [OutboxStatus.DISCARDED] * 3


def test_subjects_carry_the_servers_name(db: Database, settings: Settings) -> None:
    named = Mailer(db, replace(settings, server_name="Club games"))
    assert [m.subject for m in named.send("help")] == ["Club games help"]
    assert [m.subject for m in named.send("honeydonuts move 999 alice pw-alice a1-a2")] == [
        "Club games: error"]
    assert [m.subject for m in named.send("hello", "no command at all\n",
                                          sender="stranger@example.net")] == [
        "Club games: how to begin"]


def test_a_mail_being_sent_is_neither_retried_nor_discarded(
        mailer: Mailer, settings: Settings, db: Database) -> None:
    """A sender holds it (a slow relay): changed under it, it would go out twice."""
    welcomed(mailer, db, "alice", "bob")
    held, free = [m.id for m in outbox(db)]
    with db.transaction() as s:
        s.execute(update(OutboxMessage).where(OutboxMessage.id == held)
                  .values(leased_by="another-sender", next_attempt_at=utcnow() + timedelta(
                      minutes=2)))
        s.execute(update(OutboxMessage).where(OutboxMessage.id == free)
                  .values(next_attempt_at=utcnow() + timedelta(hours=1)))
    for verb, done in (("retry", "retried"), ("discard", "discarded")):
        refused = cli(settings, "outbox", verb, str(held))
        assert refused.exit_code == 1
        assert f"is being sent right now: it cannot be {done}" in refused.output
    assert cli(settings, "outbox", "retry", "--all").output == "queued 1 mail(s) again; sent 1\n"
    rows = {m.id: m for m in outbox(db)}
    assert rows[held].leased_by == "another-sender" and rows[held].status == OutboxStatus.PENDING
    assert rows[free].status == OutboxStatus.SENT


# -- status ---------------------------------------------------------------------------------
def test_status_tells_the_truth(mailer: Mailer, settings: Settings, db: Database) -> None:
    welcomed(mailer, db, "alice")
    healthy = cli(settings, "status")
    assert healthy.exit_code == 0, healthy.output
    assert healthy.output.splitlines() == [
        f"schema   {head()} (current)",
        "inbox    0 waiting (oldest -), 0 failed",
        "outbox   1 pending (oldest under a minute), 0 overdue, 0 failed",
        "health   ok",
    ]
    with db.transaction() as s:  # nothing has sent for an hour, nor processed for 10 min
        s.execute(update(OutboxMessage).values(created_at=utcnow() - timedelta(hours=1),
                                               next_attempt_at=utcnow() - timedelta(hours=1)))
        s.add(InboundMessage(raw=b"x", received_at=utcnow() - timedelta(minutes=10),
                             status=InboundStatus.NEW))
        s.add(InboundMessage(raw=b"y", status=InboundStatus.FAILED))
    sick = cli(settings, "status")
    assert sick.exit_code == 1
    lines = sick.output.splitlines()
    assert lines[1] == "inbox    1 waiting (oldest 10 minutes), 1 failed"
    assert lines[2] == "outbox   1 pending (oldest 1 hour), 1 overdue, 0 failed"
    assert lines[3].startswith("problem  stored mail is not being processed")
    assert lines[4].startswith("problem  outgoing mail is not going out: 1 mail(s) due")
    assert lines[5] == ("attend   1 incoming mail(s) failed: 'pbmserv inbox list --status "
                        "failed', then 'pbmserv inbox replay --all-failed'")
    assert lines[-1] == "health   UNHEALTHY"
    # with outgoing mail allowed to wait two hours, it is the failed incoming mail
    # alone that tells: exit 3 ("needs you"), not 1 ("down")
    settings = replace(settings, health_mail_age=7200)
    relaxed = cli(settings, "status", "--inbox-late", "3600", "--outbox-late", "7200")
    assert relaxed.exit_code == 3, relaxed.output
    assert relaxed.output.splitlines()[-1] == "health   ok, but needs you"
    assert cli(settings, "status", "--inbox-late", "3600", "--outbox-late", "7200",
               "--down-only").exit_code == 0
    # the mail waits longer than health_mail_age (five minutes by default): down
    waits = cli(replace(settings, health_mail_age=300), "status", "--inbox-late", "3600",
                "--outbox-late", "7200")
    assert waits.exit_code == 1
    assert "problem  outgoing mail waits: 1 mail(s) made more than 300 s ago " \
        "(health_mail_age) not sent yet" in waits.output
    assert cli(settings, "status", "--down-only").exit_code == 1


def test_status_of_a_database_that_is_down_or_behind(settings: Settings, tmp_path: object
                                                     ) -> None:
    from pathlib import Path

    from pbmserv.db.migrate import upgrade

    assert isinstance(tmp_path, Path)
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    old = Database(url)
    upgrade(old, "0005")
    old.dispose()
    behind = CliRunner().invoke(main, ["status"], env={"PBMSERV_DATABASE_URL": url})
    assert behind.exit_code == 1
    assert behind.output.splitlines() == [
        f"schema   0005 (this pbmserv needs {head()})",
        f"problem  the database schema is at revision 0005, older than this pbmserv's {head()}: "
        "run 'pbmserv db upgrade'",
        "health   UNHEALTHY"]
    down = CliRunner().invoke(main, ["status"], env={
        "PBMSERV_DATABASE_URL": "sqlite:////proc/no/such/dir/x.sqlite3"})
    assert down.exit_code == 1 and down.output.startswith("problem  database: ")


def test_disabled_account_cannot_reset_or_log_in(mailer: Mailer, settings: Settings,
                                                 db: Database) -> None:
    mailer.signup("alice")
    cli(settings, "users", "disable", "alice")
    with db.transaction() as s:
        with pytest.raises(PlayerError, match="disabled"):
            authenticate(s, "alice", "pw-alice", "alice@example.org")
        user = s.scalar(select(User).where(User.key == "alice"))
        assert user is not None and user.disabled_at is not None
    assert "is disabled" in " ".join(mailer.reply("reset alice").split())


def test_a_disabled_or_closed_player_cannot_move_on_their_board(
        mailer: Mailer, settings: Settings, db: Database) -> None:
    """A move's login takes the account from the board's players, loaded with the
    board: a disabled account is still refused, and a closed one is no account."""
    from pbmserv.games import get_engine

    engine = get_engine("honeydonuts")
    assert engine is not None
    start = engine.new()
    move = engine.format_move(start, engine.legal_moves(start)[0])
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob", sender="alice@example.org")
    cli(settings, "users", "disable", "alice")
    said = " ".join(mailer.reply(f"honeydonuts move 101 alice pw-alice {move}").split())
    assert "is disabled" in said
    cli(settings, "users", "enable", "alice")
    with db.transaction() as s:
        s.execute(update(User).where(User.key == "alice").values(closed_at=utcnow()))
    said = " ".join(mailer.reply(f"honeydonuts move 101 alice pw-alice {move}").split())
    assert "the userid and password do not match" in said
    with db.reading() as s:
        board = s.scalar(select(Board).where(Board.number == 101))
        assert board is not None and board.ply == 0


def test_a_disabled_account_cannot_move_by_reply(mailer: Mailer, settings: Settings) -> None:
    from tests.test_reply_moves import reply
    from tests.test_reply_moves import start as board_for_alice

    mail = board_for_alice(mailer)
    assert mail.reply_to is not None
    cli(settings, "users", "disable", "alice")
    [refused] = reply(mailer, mail.reply_to, "a1-a2")
    assert "the account alice is disabled" in " ".join(refused.body.split())
    cli(settings, "users", "enable", "alice")
    played = reply(mailer, mail.reply_to, "a1-a2")
    assert "has been played" in played[0].body


def test_serve_runs_its_own_worker_only_without_worker_processes(db: Database,
                                                                settings: Settings) -> None:
    from pbmserv.server import Server
    from tests.conftest import free_port

    with_processes = Server(db, settings, port=free_port(), workers=1, interval=0.2)
    with_processes.start()
    try:
        assert with_processes.loop is None and with_processes.bot_loop is None
        commands = [proc.args[3:] for proc in with_processes.processes]  # type: ignore[index]
        assert [c[0] for c in commands] == ["work", "bots"]  # one worker, one bots' loop
    finally:
        with_processes.stop()
    alone = Server(db, settings, port=free_port(), workers=0, interval=0.2)
    alone.start()
    try:
        assert alone.loop is not None and alone.bot_loop is not None and alone.processes == []
    finally:
        alone.stop()


# -- the rough edges: bots enabled again, an audit line for each action, the outbox shown -----
def test_a_disabled_bot_can_be_enabled_again(mailer: Mailer, settings: Settings) -> None:
    mailer.signup("alice")
    assert cli(settings, "users", "disable", "bot3").output == "bot3: disabled\n"
    assert "is disabled" in " ".join(mailer.reply("amoeba challenge alice bot3").split())
    enabled = cli(settings, "users", "enable", "bot3")
    assert enabled.exit_code == 0 and enabled.output == "bot3: enabled\n"
    assert "Amoeba board 101 has been started" in mailer.reply("amoeba challenge alice bot3")


def test_every_admin_action_leaves_an_audit_line(mailer: Mailer, settings: Settings,
                                                 db: Database, tmp_path: Path) -> None:
    start(mailer)
    log = tmp_path / "audit.log"

    def run(*args: str) -> None:
        env = {"PBMSERV_DATABASE_URL": settings.database_url,
               "PBMSERV_MAILDIR": str(settings.maildir), "PBMSERV_LOG_FILE": str(log)}
        done = CliRunner().invoke(main, list(args), env=env, input="n3w-pw-long\nn3w-pw-long\n")
        assert done.exit_code == 0, (args, done.output)
        assert "pbmserv.audit" not in done.output  # the log's, not the terminal's

    first = outbox(db)[0].id
    run("users", "disable", "carol")
    run("users", "enable", "carol")
    run("users", "reset-password", "carol")
    run("users", "set-email", "carol", "carol@example.net")
    run("users", "unlock", "carol")
    run("throttle", "clear", "--all")
    run("boards", "adjudicate", "honeydonuts", "101", "alice", "--reason", "bob left")
    run("outbox", "discard", str(first))
    pending = sum(m.status is OutboxStatus.PENDING for m in outbox(db))
    run("outbox", "retry", "--all")
    run("inbox", "purge", "--older-than", "30")
    who = operator()
    lines = [line.split("INFO pbmserv.audit: ", 1)[1] for line in log.read_text().splitlines()]
    assert lines == [
        f"admin {who}: users disable carol: disabled",
        f"admin {who}: users enable carol: enabled",
        f"admin {who}: users reset-password carol: password set",
        f"admin {who}: users set-email carol: mail goes to carol@example.net",
        f"admin {who}: users unlock carol: nothing was held",
        f"admin {who}: throttle clear --all: cleared 0 key(s)",
        f"admin {who}: boards adjudicate honeydonuts 101: result alice (bob left); "
        "3 mail(s)",  # alice, bob and carol, who watches
        f"admin {who}: outbox discard {first}: discarded",
        f"admin {who}: outbox retry --all: queued {pending} mail(s) again",
        f"admin {who}: inbox purge --older-than 30: purged 0 incoming and 0 outgoing mail(s)",
    ]


def test_outbox_show_and_lists_by_address(mailer: Mailer, settings: Settings,
                                          db: Database) -> None:
    welcomed(mailer, db, "alice", "bob")
    with db.transaction() as s:
        s.execute(update(OutboxMessage).where(OutboxMessage.to_addr == "bob@example.org")
                  .values(status=OutboxStatus.FAILED, attempts=1,
                          last_error="550 5.1.1 <bob@example.org>: no such user"))
    [bob] = [m for m in outbox(db) if m.to_addr == "bob@example.org"]
    shown = cli(settings, "outbox", "show", str(bob.id))
    assert shown.exit_code == 0, shown.output
    head_lines = shown.output.split("\n\n", 1)[0].splitlines()
    assert head_lines[0] == "status:      failed"
    assert head_lines[2] == "tries:       1"
    assert head_lines[3] == "error:       550 5.1.1 <bob@example.org>: no such user"
    assert head_lines[4:6] == ["To:          bob@example.org",
                               "Subject:     pbmserv: welcome, bob"]
    assert shown.output.split("\n\n", 1)[1] == bob.body
    missing = cli(settings, "outbox", "show", "999")
    assert missing.exit_code == 1 and "there is no outgoing mail 999" in missing.output
    failed = cli(settings, "outbox", "list", "--status", "failed", "--address",
                 "Bob@Example.org").output.splitlines()
    assert len(failed) == 1 and failed[0].split()[0] == str(bob.id)
    assert cli(settings, "outbox", "list", "--status", "failed", "--address",
               "alice@example.org").output == "nothing failed to alice@example.org\n"
    assert len(cli(settings, "outbox", "list", "--status", "pending").output.splitlines()) == 1
    listed = cli(settings, "inbox", "list", "--address", "alice@example.org").output
    assert len(listed.splitlines()) == 1 and "alice@example.org" in listed
    assert cli(settings, "inbox", "list", "--address", "carol@example.org").output == ""
    assert len(cli(settings, "inbox", "list", "--status", "done").output.splitlines()) == 2
