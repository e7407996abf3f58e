"""Runs the package's Alembic migrations on an engine; the same migrations on SQLite and PostgreSQL.

Several server workers may start at once: on PostgreSQL an advisory lock, on SQLite a
lock file beside the database, lets one of them migrate while the others wait.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

_LOCK_ID = 0x7472_6961_6765  # "triage": any constant shared by every worker


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    config.attributes["connection"] = connection
    return config


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that no other process migrates beside."""
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:":
        with open(f"{database}.migrate-lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with engine.begin() as connection:
                    yield connection
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _LOCK_ID})
        yield connection


def upgrade(engine: Engine, revision: str = "head") -> None:
    with _migration_lock(engine) as connection:
        command.upgrade(_config(connection), revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    with _migration_lock(engine) as connection:
        command.downgrade(_config(connection), revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(_config()).get_current_head()
