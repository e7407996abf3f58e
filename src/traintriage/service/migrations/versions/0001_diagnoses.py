"""Stored diagnoses.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from traintriage.service.dbtypes import JSONDocument, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "diagnoses",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("root_cause", sa.String(128), nullable=True),
        sa.Column("category", sa.String(64), nullable=True),
        sa.Column("severity", sa.String(32), nullable=True),
        sa.Column("initiating_rank", sa.Integer, nullable=True),
        sa.Column("sources", JSONDocument, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=True),
        sa.Column("search_text", sa.Text, nullable=False),
        sa.Column("document", JSONDocument, nullable=False),
    )
    op.create_index("ix_diagnoses_owner_created", "diagnoses", ["owner", "created_at"])
    op.create_index("ix_diagnoses_fingerprint", "diagnoses", ["fingerprint"])


def downgrade() -> None:
    op.drop_index("ix_diagnoses_fingerprint", table_name="diagnoses")
    op.drop_index("ix_diagnoses_owner_created", table_name="diagnoses")
    op.drop_table("diagnoses")
