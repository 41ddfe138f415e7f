"""How many counted answers an address got lately (``refusals_per_address_day``):
read from the outbox, before an answer is queued."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import OutboxMessage
from pbmserv.db.status import AnswerKind
from pbmserv.mail.addresses import address_key


@dataclass(frozen=True)
class Answered:
    """The replies to one address since a time that ``refusals_per_address_day``
    counts (those with an ``answer_kind``)."""

    count: int
    #: of them, welcomes (to a stranger's mail with no command)
    welcomes: int
    #: when the first of them was made (None: there is none)
    first: datetime | None


_ANSWERED = (select(func.count(), func.count(OutboxMessage.id).filter(
                 OutboxMessage.answer_kind == AnswerKind.WELCOME),
                    func.min(OutboxMessage.created_at))
             .where(OutboxMessage.to_key == bindparam("to"),
                    OutboxMessage.created_at > bindparam("since"),
                    OutboxMessage.answer_kind.is_not(None)))


def answered(session: Session, address: str, since: datetime) -> Answered:
    """The counted replies to ``address`` (any spelling or +tag of it) since ``since``."""
    count, welcomes, first = session.execute(
        _ANSWERED, {"to": address_key(address), "since": since}).one()
    return Answered(int(count), int(welcomes), first)
