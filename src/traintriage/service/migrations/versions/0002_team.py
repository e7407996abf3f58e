"""Team service: secrets, API keys, evaluation codes, quota usage, alert rules and deliveries.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from traintriage.service.dbtypes import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(128), nullable=False),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("daily_limit", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_table(
        "evaluation_codes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("organisation", sa.String(200), nullable=False),
        sa.Column("contact_email", sa.String(320), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("requested_at", UTCDateTime(), nullable=False),
        sa.Column("approved_at", UTCDateTime(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("prefix", sa.String(16), nullable=True),
        sa.Column("code_hash", sa.String(64), nullable=True, unique=True),
        sa.Column("daily_limit", sa.Integer, nullable=False),
    )
    op.create_table(
        "quota_usage",
        sa.Column("subject", sa.String(80), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("used", sa.Integer, nullable=False),
    )
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("match_field", sa.String(16), nullable=False),
        sa.Column("match_value", sa.String(200), nullable=False),
        sa.Column("webhook_url", sa.String(2000), nullable=True),
        sa.Column("webhook_format", sa.String(8), nullable=True),
        sa.Column("webhook_secret", sa.String(128), nullable=True),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("window_seconds", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_alert_rules_owner", "alert_rules", ["owner"])
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("rule_id", sa.Integer, sa.ForeignKey("alert_rules.id", ondelete="CASCADE"), nullable=False),
        sa.Column("diagnosis_id", sa.String(32), nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=True),
        sa.Column("test", sa.Boolean, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("response_code", sa.Integer, nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
    )
    op.create_index("ix_alert_deliveries_rule_created", "alert_deliveries", ["rule_id", "created_at"])
    op.create_table(
        "alert_sent",
        sa.Column("rule_id", sa.Integer, sa.ForeignKey("alert_rules.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("sent_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("alert_sent")
    op.drop_index("ix_alert_deliveries_rule_created", table_name="alert_deliveries")
    op.drop_table("alert_deliveries")
    op.drop_index("ix_alert_rules_owner", table_name="alert_rules")
    op.drop_table("alert_rules")
    op.drop_table("quota_usage")
    op.drop_table("evaluation_codes")
    op.drop_table("api_keys")
    op.drop_table("server_secrets")
