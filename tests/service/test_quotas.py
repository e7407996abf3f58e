"""Quotas: exact limits under concurrency (threads and processes), on the database and on Redis."""

from __future__ import annotations

import multiprocessing
import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest

from tests.service.conftest import FakeClock
from traintriage.service.quotas import Quotas, open_quotas, redis_client
from traintriage.service.store import Store


@pytest.fixture(params=["database", "redis"])
def quotas(request: pytest.FixtureRequest, store: Store) -> Quotas:
    if request.param == "database":
        return open_quotas(store)
    client = redis_client(request.getfixturevalue("redis_url"))
    quotas = open_quotas(store, client)
    quotas.prefix = request.getfixturevalue("redis_prefix")  # type: ignore[attr-defined]
    return quotas


def test_fifty_concurrent_takes_get_exactly_the_limit(quotas: Quotas) -> None:
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: quotas.take("anon:x", 3), range(50)))
    assert sum(r.allowed for r in results) == 3
    assert quotas.peek("anon:x", 3).used == 3
    assert quotas.peek("anon:y", 3).used == 0


def test_the_allowance_resets_at_utc_midnight(quotas: Quotas, clock: FakeClock) -> None:
    clock.now = datetime(2026, 12, 3, 23, 59, 30, tzinfo=timezone.utc)
    assert [quotas.take("code:1", 2).allowed for _ in range(3)] == [True, True, False]
    refused = quotas.take("code:1", 2)
    assert (refused.remaining, refused.resets_at) == (0, datetime(2026, 12, 4, tzinfo=timezone.utc))
    assert refused.seconds_to_reset(clock.now) == 30
    clock.advance(seconds=31)
    assert quotas.take("code:1", 2).allowed


def _take_many(args: tuple[str, str | None, str, str, int]) -> int:
    database_url, redis_url, prefix, subject, times = args
    store = Store.open(database_url)
    quotas = open_quotas(store, redis_client(redis_url) if redis_url else None)
    if redis_url:
        quotas.prefix = prefix  # type: ignore[attr-defined]
    taken = sum(quotas.take(subject, 5).allowed for _ in range(times))
    store.close()
    return taken


@pytest.mark.parametrize("backend", ["database", "redis"])
def test_processes_racing_share_one_counter(backend: str, database_url: str, request: pytest.FixtureRequest) -> None:
    redis_url = request.getfixturevalue("redis_url") if backend == "redis" else None
    prefix = request.getfixturevalue("redis_prefix") if backend == "redis" else ""
    Store.open(database_url).close()
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        taken = pool.map(_take_many, [(database_url, redis_url, prefix, f"anon:{secrets.token_hex(4)}", 10)] * 4)
    assert sum(taken) == 5
