"""The tables a team server keeps. Every change here ships with a migration in `migrations/`.

No raw log is stored: a diagnosis row holds the Diagnosis document (its evidence lines are
already masked at ingest) and a lower-cased copy of that masked evidence for search.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from traintriage.service.dbtypes import JSONDocument, UTCDateTime


class Base(DeclarativeBase):
    pass


class DiagnosisRow(Base):
    """One stored diagnosis. `owner` is None for anonymous callers (reachable by link only)."""

    __tablename__ = "diagnoses"
    __table_args__ = (sa.Index("ix_diagnoses_owner_created", "owner", "created_at"),)

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    owner: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[str] = mapped_column(sa.String(32))
    root_cause: Mapped[str | None] = mapped_column(sa.String(128))
    category: Mapped[str | None] = mapped_column(sa.String(64))
    severity: Mapped[str | None] = mapped_column(sa.String(32))
    initiating_rank: Mapped[int | None] = mapped_column(sa.Integer)
    sources: Mapped[list[str]] = mapped_column(JSONDocument)
    fingerprint: Mapped[str | None] = mapped_column(sa.String(64), index=True)
    search_text: Mapped[str] = mapped_column(sa.Text)
    document: Mapped[dict[str, Any]] = mapped_column(JSONDocument)
