"""The database a server keeps: opened (and migrated) once per process, shared by the routes.

`Store.open()` with no URL uses `TRAINTRIAGE_DATABASE_URL`, else a SQLite file in the user
data directory: no set-up for one person, PostgreSQL for a team (`postgresql+psycopg://`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from traintriage.service import migrate
from traintriage.service.clock import Clock, utcnow
from traintriage.service.fingerprint import document_fingerprint
from traintriage.service.models import DiagnosisRow

DATABASE_ENV = "TRAINTRIAGE_DATABASE_URL"
SEARCH_TEXT_CAP = 64 * 1024


def default_database_url() -> str:
    """`TRAINTRIAGE_DATABASE_URL`, else a SQLite file in the user data directory."""
    configured = os.environ.get(DATABASE_ENV, "").strip()
    if configured:
        return configured
    import platformdirs

    directory = Path(platformdirs.user_data_dir("traintriage", appauthor=False))
    return f"sqlite:///{directory / 'traintriage.db'}"


def normalise_url(url: str) -> sa.URL:
    """Parse a database URL; plain `postgresql://` and `postgres://` use the psycopg 3 driver."""
    parsed = sa.make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def create_engine(url: str) -> Engine:
    """An engine with the settings several worker processes need on SQLite (WAL, busy wait)."""
    parsed = normalise_url(url)
    if parsed.get_backend_name() != "sqlite":
        return sa.create_engine(parsed, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(parsed, connect_args={"timeout": 30})
    else:
        engine = sa.create_engine(parsed, poolclass=StaticPool, connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA secure_delete=ON")  # a deleted diagnosis leaves no bytes behind
        cursor.close()

    return engine


def new_id() -> str:
    """An unguessable id (128 random bits): a stored result is reachable by its link only."""
    return secrets.token_urlsafe(16)


def search_text(document: Mapping[str, Any], sources: list[str]) -> str:
    """Lower-cased masked evidence, root cause and source names: what history search looks in."""
    parts: list[str] = list(sources)
    root = document.get("root_cause")
    if isinstance(root, Mapping):
        parts += [str(root.get("id", "")), str(root.get("title", ""))]
        parts += [str(e.get("text", "")) for e in root.get("evidence") or [] if isinstance(e, Mapping)]
    parts += [str(u.get("text", "")) for u in document.get("unknown") or [] if isinstance(u, Mapping)]
    return "\n".join(parts).lower()[:SEARCH_TEXT_CAP]


@dataclass
class Store:
    """A migrated database and a session factory; one per process, safe to share across threads."""

    engine: Engine
    clock: Clock = utcnow
    sessions: sessionmaker[Session] = field(init=False)
    memo: dict[str, str] = field(init=False, default_factory=dict)  # values that never change (secrets)

    def __post_init__(self) -> None:
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def open(cls, url: str | None = None, *, clock: Clock = utcnow, run_migrations: bool = True) -> Store:
        """Connect to `url` (default: see `default_database_url`) and migrate it to the newest schema."""
        engine = create_engine(url or default_database_url())
        if run_migrations:
            migrate.upgrade(engine)
        return cls(engine, clock)

    def close(self) -> None:
        self.engine.dispose()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def ping(self) -> bool:
        """True when the database answers (for /readyz)."""
        try:
            with self.engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError:
            return False
        return True

    def save_diagnosis(self, document: dict[str, Any], *, owner: str | None = None, sources: list[str]) -> str:
        """Store a (masked) Diagnosis document; returns its new unguessable id."""
        root = document.get("root_cause") if isinstance(document.get("root_cause"), Mapping) else None
        row = DiagnosisRow(
            id=new_id(),
            owner=owner,
            created_at=self.clock(),
            status=str(document.get("status", "")),
            root_cause=root.get("id") if root else None,
            category=root.get("category") if root else None,
            severity=root.get("severity") if root else None,
            initiating_rank=document.get("initiating_rank"),
            sources=list(sources),
            fingerprint=document_fingerprint(document),
            search_text=search_text(document, sources),
            document=document,
        )
        with self.sessions.begin() as session:
            session.add(row)
        return row.id

    def get_row(self, diagnosis_id: str, *, owner: str | None = None) -> DiagnosisRow | None:
        """The stored row; with `owner`, only when that owner saved it."""
        with self.sessions() as session:
            row = session.get(DiagnosisRow, diagnosis_id)
        if row is None or (owner is not None and row.owner != owner):
            return None
        return row

    def get_diagnosis(self, diagnosis_id: str, *, owner: str | None = None) -> dict[str, Any] | None:
        """The stored document. Without `owner` any id answers (a shared link); with it, only the owner's."""
        row = self.get_row(diagnosis_id, owner=owner)
        return dict(row.document) if row else None
