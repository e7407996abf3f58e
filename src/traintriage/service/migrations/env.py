"""Alembic environment: always runs on the connection that `traintriage.service.migrate` hands it."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from traintriage.service.models import Base

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError("run migrations through 'traintriage admin migrate', not the alembic command")
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
