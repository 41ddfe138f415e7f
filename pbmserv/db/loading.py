"""Objects of a session made from rows read on the driver, as the ORM's own load
makes them, for the one load of the hot path that the ORM made costly.

Every move loads its board with the board's players and their accounts.  Through
the ORM that query cost 130 - 290 µs of CPU (the statement's compiled form looked up,
a result object, a loading context, the joined eager loader run for each row), five
times the driver's part.  ``Entity`` reads a row's slice of columns into a new
instance of its class and puts the instance in the session's identity map, as
SQLAlchemy's loader does itself (``sqlalchemy.orm.loading._instance``): the object is
persistent, its changes are tracked and flushed, its unloaded relationships load as
they always do, and a rollback expires it.  An object the session holds already is
never made twice: ``held`` finds it, and the caller uses the ORM's load instead.

This rests on how SQLAlchemy 2.0 keeps an instance's state (``InstanceState``'s
key and session, the identity map's insertion); the version is pinned, and
``tests/test_loading.py`` compares the objects made here with the ORM's own, column
by column, and checks that they are tracked, flushed and expired as the ORM's are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import Table
from sqlalchemy.orm import Session, class_mapper
from sqlalchemy.orm.attributes import instance_state

T = TypeVar("T")


class Entity(Generic[T]):
    """A mapped class whose instances are made from its table's columns, in the
    table's order (``columns``: select them so)."""

    def __init__(self, cls: type[T]) -> None:
        mapper = class_mapper(cls)
        table = mapper.local_table
        assert isinstance(table, Table)
        self.cls = cls
        self.mapper = mapper
        self.table = table
        self.columns = tuple(table.c)
        self.width = len(self.columns)
        self.keys = tuple(mapper.get_property_by_column(column).key for column in self.columns)
        primary = [self.columns.index(column) for column in mapper.primary_key]
        self.primary = tuple(primary)
        self.identity_class = mapper._identity_class

    def identity(self, values: Sequence[Any]) -> tuple[Any, ...]:
        """The identity map's key of the row ``values`` (this entity's slice)."""
        return (self.identity_class, tuple(values[i] for i in self.primary), None)

    def held(self, session: Session, values: Sequence[Any]) -> T | None:
        """The session's own instance of this row, if it holds one."""
        found: T | None = session.identity_map.get(self.identity(values))
        return found

    def make(self, session: Session, values: Sequence[Any], **related: Any) -> T:
        """A new persistent instance of the row ``values`` (this entity's slice, its
        values converted as the ORM converts them), with ``related`` objects set on
        its many-to-one relationships.  The session must not hold it already."""
        key = self.identity(values)
        instance: T = self.mapper.class_manager.new_instance()
        state = instance_state(instance)
        state.dict.update(zip(self.keys, values, strict=True))
        state.dict.update(related)
        state.key = key
        state.identity_token = None
        state.session_id = session.hash_key
        session.identity_map._add_unpresent(state, key)
        return instance
