"""Server-wide secrets: from the environment when configured, else generated once and kept in the database.

Every worker process must agree on them (the anonymous-address salt, the session key), so a
generated one is inserted once (first writer wins) and read back by everyone.
"""

from __future__ import annotations

import hashlib
import os
import secrets

import sqlalchemy as sa

from traintriage.service.models import ServerSecret
from traintriage.service.store import Store
from traintriage.service.upsert import insert_ignore

SECRET_ENV = "TRAINTRIAGE_SECRET_KEY"


def server_secret(store: Store, name: str) -> str:
    """The secret `name`: derived from TRAINTRIAGE_SECRET_KEY when set, else shared through the database."""
    configured = os.environ.get(SECRET_ENV, "").strip()
    if configured:
        return hashlib.sha256(f"{name}:{configured}".encode()).hexdigest()
    cached = store.memo.get(f"secret:{name}")
    if cached is not None:
        return cached
    # Write first, then read, in one transaction: workers starting together all insert (the first
    # wins, the others' inserts do nothing) and read the winner's value. A read before the write
    # would let SQLite refuse the write of a transaction whose snapshot another worker outdated.
    with store.engine.begin() as connection:
        connection.execute(insert_ignore(store, ServerSecret, {"name": name, "value": secrets.token_hex(32)}))
        value = connection.scalar(sa.select(ServerSecret.value).where(ServerSecret.name == name))
    assert value is not None
    store.memo[f"secret:{name}"] = value
    return value
