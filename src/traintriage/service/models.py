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


class ServerSecret(Base):
    """Secrets every worker must share (the anonymous-address salt, the session key) when not configured."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    value: Mapped[str] = mapped_column(sa.String(128))


class ApiKey(Base):
    """An API key for a person or CI. Only the SHA-256 of the key is kept; it was shown once."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(200))
    prefix: Mapped[str] = mapped_column(sa.String(16))
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    daily_limit: Mapped[int] = mapped_column(sa.Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class EvaluationCode(Base):
    """A workplace's request for an evaluation code and, once approved, the code's hash and expiry."""

    __tablename__ = "evaluation_codes"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    organisation: Mapped[str] = mapped_column(sa.String(200))
    contact_email: Mapped[str] = mapped_column(sa.String(320))
    status: Mapped[str] = mapped_column(sa.String(16))  # requested, approved, revoked
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime())
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    prefix: Mapped[str | None] = mapped_column(sa.String(16))
    code_hash: Mapped[str | None] = mapped_column(sa.String(64), unique=True)
    daily_limit: Mapped[int] = mapped_column(sa.Integer)


class QuotaUsage(Base):
    """Diagnoses used by one caller on one UTC day (when Redis is not configured)."""

    __tablename__ = "quota_usage"

    subject: Mapped[str] = mapped_column(sa.String(80), primary_key=True)
    day: Mapped[str] = mapped_column(sa.String(10), primary_key=True)
    used: Mapped[int] = mapped_column(sa.Integer)


class AlertRule(Base):
    """When a diagnosis of `owner` matches, tell a webhook or an e-mail address (once per window)."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(sa.String(64), index=True)
    name: Mapped[str] = mapped_column(sa.String(200))
    match_field: Mapped[str] = mapped_column(sa.String(16))  # class, category, severity, fingerprint
    match_value: Mapped[str] = mapped_column(sa.String(200))
    webhook_url: Mapped[str | None] = mapped_column(sa.String(2000))
    webhook_format: Mapped[str | None] = mapped_column(sa.String(8))  # slack, json
    webhook_secret: Mapped[str | None] = mapped_column(sa.String(128))
    email: Mapped[str | None] = mapped_column(sa.String(320))
    window_seconds: Mapped[int] = mapped_column(sa.Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AlertDelivery(Base):
    """One alert sent (or given up on) for a rule, with its attempts: shown on the rule's page."""

    __tablename__ = "alert_deliveries"
    __table_args__ = (sa.Index("ix_alert_deliveries_rule_created", "rule_id", "created_at"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    rule_id: Mapped[int] = mapped_column(sa.ForeignKey("alert_rules.id", ondelete="CASCADE"))
    diagnosis_id: Mapped[str | None] = mapped_column(sa.String(32))
    fingerprint: Mapped[str | None] = mapped_column(sa.String(64))
    test: Mapped[bool] = mapped_column(sa.Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(sa.Integer)
    status: Mapped[str] = mapped_column(sa.String(16))  # delivered, failed
    response_code: Mapped[int | None] = mapped_column(sa.Integer)
    last_error: Mapped[str | None] = mapped_column(sa.String(500))


class AlertSent(Base):
    """When a rule last alerted on a fingerprint: the de-duplication record without Redis."""

    __tablename__ = "alert_sent"

    rule_id: Mapped[int] = mapped_column(sa.ForeignKey("alert_rules.id", ondelete="CASCADE"), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    sent_at: Mapped[datetime] = mapped_column(UTCDateTime())
