"""INSERT ... ON CONFLICT, written once for both backends (SQLite and PostgreSQL share the syntax)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite

from traintriage.service.store import Store


def dialect_insert(store: Store, table: Any) -> postgresql.Insert | sqlite.Insert:
    """The backend's INSERT construct, which has `on_conflict_do_nothing/do_update`."""
    return postgresql.insert(table) if store.dialect == "postgresql" else sqlite.insert(table)


def insert_ignore(store: Store, table: Any, values: dict[str, Any]) -> postgresql.Insert | sqlite.Insert:
    """INSERT that does nothing when the row's key is already there."""
    return dialect_insert(store, table).values(**values).on_conflict_do_nothing()
