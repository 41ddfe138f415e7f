"""What follows an event the game service records, elsewhere in the services: the one
list of them.

The game service (pbmserv.service.games) records what happened as events; a follower
is a function ``(game service, event)`` it calls for each event of its kind, in the
same transaction, so that the game service itself needs to know nothing of what a
board's end means elsewhere.  Who is *told* of an event is not decided here: that is
pbmserv.notifications, from the events the caller collects.

A new follower: write the function beside what it changes (a service module), and
add it here under the event's class; tests/test_wiring.py finds every function
written as a follower and checks it is listed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pbmserv.service import tournaments
from pbmserv.service.events import Event, GameFinished

#: a follower: called with the game service and the event (typed by its function)
Follower = Callable[[Any, Any], None]

#: event class -> its followers, called in this order
EVENT_FOLLOWERS: Mapping[type[Event], tuple[Follower, ...]] = MappingProxyType({
    # a tournament's board finished: score it, and move the tournament on
    GameFinished: (tournaments.board_finished,),
})
