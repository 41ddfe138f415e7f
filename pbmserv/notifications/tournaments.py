"""Tournament mail: to every player at the start, at each Swiss round and at the end."""

from __future__ import annotations

from sqlalchemy.orm import Session

from pbmserv.db.models import Tournament, TournamentPlayer, User
from pbmserv.i18n import speaking
from pbmserv.render import render
from pbmserv.service.events import (
    RoundStarted,
    TournamentEvent,
    TournamentFinished,
    TournamentStarted,
)
from pbmserv.service.mail_prefs import choices_of
from pbmserv.service.tournaments import View, describe, entrants


def crosstable_text(view: View, title: str) -> str:
    """The standings as a crosstable within 76 columns (empty before the start)."""
    if view.table is None:
        return ""
    return render("tournament/crosstable.txt.j2", title=title, table=view.table)


def tournament_mails(session: Session, event: TournamentEvent) -> list[tuple[User, str, str]]:
    """(user, subject, body) of every mail a tournament event calls for."""
    tournament = session.get(Tournament, event.tournament_id)
    assert tournament is not None
    players = entrants(session, tournament)
    through = None
    if isinstance(event, TournamentStarted):
        kind, number, title = "started", 1, "Standings"
    elif isinstance(event, RoundStarted):
        kind, number = "round", event.round
        title = f"Standings after round {event.round - 1}"
        through = event.round - 1  # the new round's bye is not counted yet
    elif isinstance(event, TournamentFinished):
        kind, number, title = "finished", tournament.current_round, "Final standings"
        players = [p for p in players if p.withdrawn_at is None] + [
            p for p in players if p.withdrawn_at is not None]
    else:  # pragma: no cover - every tournament event is handled above
        raise TypeError(f"unknown tournament event {event.kind}")
    view = describe(session, tournament, through_round=through)
    readers = [p.user for p in players if _reaches(p, kind)]
    organiser = tournament.creator
    if (kind in ("started", "finished") and organiser.closed_at is None
            and all(p.user_id != organiser.id for p in players)):
        # an organiser who does not play (left before the start) hears of its start and end
        readers.append(organiser)
    choices = choices_of(session, readers)
    said: dict[str | None, tuple[str, str]] = {}  # each reader's in their language
    told = []
    for user in readers:
        language = choices[user.id].language if user.id in choices else None
        if language not in said:
            with speaking(language):
                said[language] = (
                    render("tournament/subject.txt.j2", kind=kind, tournament=tournament,
                           round=number).strip(),
                    render("tournament/mail.txt.j2", kind=kind, view=view, t=tournament,
                           round=number, note=getattr(event, "note", None),
                           table=crosstable_text(view, f"{title} of {tournament.name}")))
        told.append((user, *said[language]))
    return told


def _reaches(player: TournamentPlayer, kind: str) -> bool:
    """Who is told: everyone still in; at the end those who left too."""
    if player.user.closed_at is not None:
        return False
    return kind == "finished" or player.withdrawn_at is None
