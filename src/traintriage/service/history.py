"""A key's or code's past diagnoses: list, filter, search the masked evidence, delete for real.

Search is word-by-word substring matching (LIKE with escaped wildcards) over the lower-cased
masked evidence kept with each diagnosis: the same on SQLite and PostgreSQL, and an error
message pasted whole finds the run it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from traintriage.service.models import DiagnosisRow
from traintriage.service.store import Store

MAX_WORDS = 12


@dataclass(frozen=True)
class HistoryItem:
    id: str
    created_at: datetime
    status: str
    root_cause: str | None
    title: str | None
    category: str | None
    initiating_rank: int | None
    sources: list[str]
    fingerprint: str | None  # what an alert rule can match to follow one recurring incident

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "created_at": self.created_at.isoformat(), "status": self.status,
                "root_cause": self.root_cause, "title": self.title, "category": self.category,
                "initiating_rank": self.initiating_rank, "sources": self.sources, "fingerprint": self.fingerprint}


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def list_history(store: Store, owner: str, *, failure_class: str | None = None, category: str | None = None,
                 since: datetime | None = None, query: str | None = None,
                 limit: int = 50, offset: int = 0) -> list[HistoryItem]:
    """The owner's diagnoses, newest first, narrowed by class, category, date and search words."""
    statement = sa.select(DiagnosisRow).where(DiagnosisRow.owner == owner)
    if failure_class:
        statement = statement.where(DiagnosisRow.root_cause == failure_class)
    if category:
        statement = statement.where(DiagnosisRow.category == category)
    if since is not None:
        statement = statement.where(DiagnosisRow.created_at >= since)
    for word in (query or "").lower().split()[:MAX_WORDS]:
        statement = statement.where(DiagnosisRow.search_text.like(f"%{_escape_like(word)}%", escape="\\"))
    statement = statement.order_by(DiagnosisRow.created_at.desc(), DiagnosisRow.id).limit(limit).offset(offset)
    with store.sessions() as session:
        rows = list(session.scalars(statement))
    return [_item(row) for row in rows]


def _item(row: DiagnosisRow) -> HistoryItem:
    root = row.document.get("root_cause")
    title = root.get("title") if isinstance(root, dict) else None
    return HistoryItem(row.id, row.created_at, row.status, row.root_cause, title, row.category,
                       row.initiating_rank, list(row.sources), row.fingerprint)


def delete_one(store: Store, owner: str, diagnosis_id: str) -> bool:
    """Delete one of the owner's diagnoses (the row itself, not a flag). False when not theirs."""
    return _delete(store, (DiagnosisRow.owner == owner) & (DiagnosisRow.id == diagnosis_id)) > 0


def delete_all(store: Store, owner: str) -> int:
    """Delete every diagnosis of the owner; returns how many."""
    return _delete(store, DiagnosisRow.owner == owner)


def _delete(store: Store, condition: sa.ColumnElement[bool]) -> int:
    """Delete rows so that their text leaves the files too.

    SQLite connections run with `secure_delete` (freed pages are zeroed); the write-ahead log,
    which still holds the old pages, is checkpointed and truncated right after.
    """
    with store.engine.begin() as connection:
        deleted = connection.execute(sa.delete(DiagnosisRow).where(condition)).rowcount
    if deleted and store.dialect == "sqlite":
        with store.engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    return deleted
