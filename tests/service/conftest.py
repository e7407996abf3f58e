"""Service tests run on SQLite and on the machine's PostgreSQL (and Redis where it matters).

Each test session creates throw-away PostgreSQL databases with random names and drops them
at the end. PostgreSQL and Redis are required: a missing server fails the tests loudly
(set TRAINTRIAGE_TEST_POSTGRES / TRAINTRIAGE_TEST_REDIS to point elsewhere).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from traintriage.service.models import Base
from traintriage.service.store import Store

POSTGRES_ADMIN = os.environ.get("TRAINTRIAGE_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("TRAINTRIAGE_TEST_REDIS", "redis://127.0.0.1:6379/0")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 12, 3, 9, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty PostgreSQL databases, all dropped when the session ends."""
    admin = sa.create_engine(POSTGRES_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not answering at {admin.url!r}: {exc}", pytrace=False)
    created: list[str] = []

    def make() -> str:
        name = f"tt_test_{secrets.token_hex(6)}"
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        created.append(name)
        return admin.url.set(database=name).render_as_string(hide_password=False)

    yield make
    with admin.connect() as connection:
        for name in created:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def postgres_url(postgres_databases: Callable[[], str]) -> str:
    """One migrated database shared by this session's tests (each test empties it first)."""
    url = postgres_databases()
    Store.open(url).close()
    return url


def _empty(store: Store) -> None:
    with store.engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('db') / 'service.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(database_url: str, clock: FakeClock) -> Iterator[Store]:
    """A migrated, empty store on each backend, with a hand-moved clock."""
    opened = Store.open(database_url, clock=clock)
    _empty(opened)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The machine's Redis; fails loudly when it does not answer."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is not answering at {REDIS_URL}: {exc}", pytrace=False)
    finally:
        client.close()
    return REDIS_URL


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    import redis

    prefix = f"tt-test-{secrets.token_hex(6)}:"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()
