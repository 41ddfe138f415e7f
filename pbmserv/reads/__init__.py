"""The read model: each question about the server's state asked in one place, by
the mail commands, the web pages, the metrics, the alerts and the status alike.

- ``boards``: boards and open challenges: counts by game, the open ones, a player's.
- ``pages``: long lists a page at a time, by key (boards of a game or a player,
  tournaments).
- ``clocks``: how long the player to move has let a board wait, the vacations that
  stop a clock, and when it runs out (``clock_of``).
- ``turns``: the boards waiting for a player's move, in every game and tournament,
  the longest waiting first (the mail command ``turns``, the digest, the web player
  page).
- ``queues``: the inbox and the outbox: counts by status, the oldest waiting, what is
  due, what came in and went out lately.

Nothing here writes (an import contract and tests/test_wiring.py hold it to that): a
module reads through the ORM and returns plain values or loaded rows.  It sits just
above the database, below the service, so everything above may ask it.
"""
