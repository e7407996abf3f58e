"""Daily diagnosis allowances, enforced atomically however many server processes share them.

A day is a UTC calendar day. With `TRAINTRIAGE_REDIS_URL` the counters live in Redis (one
Lua script: check and increment in one step); otherwise in the database, where a single
`UPDATE ... SET used = used + 1 WHERE used < limit` takes a unit or fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa

from traintriage.service.models import QuotaUsage
from traintriage.service.store import Store
from traintriage.service.upsert import insert_ignore

if TYPE_CHECKING:
    import redis

REDIS_ENV = "TRAINTRIAGE_REDIS_URL"


@dataclass(frozen=True)
class Allowance:
    """The outcome of asking for one diagnosis, with what the RateLimit-* headers report."""

    allowed: bool
    limit: int
    used: int
    resets_at: datetime

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def seconds_to_reset(self, now: datetime) -> int:
        return max(1, int((self.resets_at - now).total_seconds() + 0.999))


def _day_bounds(now: datetime) -> tuple[str, datetime]:
    """The day's key and when the next one starts (UTC midnight)."""
    day = now.date()
    return day.isoformat(), datetime.combine(day + timedelta(days=1), time(), tzinfo=now.tzinfo)


class Quotas(Protocol):
    def take(self, subject: str, limit: int) -> Allowance:
        """Use one diagnosis of today's allowance if any is left."""

    def give_back(self, subject: str) -> None:
        """Return a unit taken for a request that then failed (bad input): only diagnoses count."""

    def peek(self, subject: str, limit: int) -> Allowance:
        """Today's usage, changing nothing."""


@dataclass
class DatabaseQuotas:
    store: Store

    def take(self, subject: str, limit: int) -> Allowance:
        day, resets_at = _day_bounds(self.store.clock())
        key = (QuotaUsage.subject == subject) & (QuotaUsage.day == day)
        with self.store.engine.begin() as connection:
            # The UPDATE is the first statement: on SQLite it takes the write lock before any read.
            taken = connection.execute(
                sa.update(QuotaUsage).where(key, QuotaUsage.used < limit).values(used=QuotaUsage.used + 1)
            ).rowcount
            if not taken:
                connection.execute(insert_ignore(self.store, QuotaUsage, {"subject": subject, "day": day, "used": 0}))
                taken = connection.execute(
                    sa.update(QuotaUsage).where(key, QuotaUsage.used < limit).values(used=QuotaUsage.used + 1)
                ).rowcount
            used = connection.scalar(sa.select(QuotaUsage.used).where(key)) or 0
        return Allowance(bool(taken), limit, used, resets_at)

    def give_back(self, subject: str) -> None:
        day, _ = _day_bounds(self.store.clock())
        with self.store.engine.begin() as connection:
            connection.execute(sa.update(QuotaUsage).where(QuotaUsage.subject == subject, QuotaUsage.day == day,
                                                           QuotaUsage.used > 0).values(used=QuotaUsage.used - 1))

    def peek(self, subject: str, limit: int) -> Allowance:
        day, resets_at = _day_bounds(self.store.clock())
        with self.store.engine.connect() as connection:
            used = connection.scalar(
                sa.select(QuotaUsage.used).where(QuotaUsage.subject == subject, QuotaUsage.day == day)) or 0
        return Allowance(used < limit, limit, used, resets_at)


# KEYS[1] counter; ARGV[1] limit, ARGV[2] seconds the counter lives. Returns {taken, used}.
# A time to live, not an EXPIREAT time: the day comes from the service's clock, the expiry from
# Redis's, and the two need not agree (another host, or a test's fixed clock).
_TAKE = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then return {0, used} end
used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return {1, used}
"""

_GIVE_BACK = """
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 0
"""


@dataclass
class RedisQuotas:
    store: Store  # for its clock
    client: redis.Redis
    prefix: str = "traintriage:"

    def _key(self, subject: str, day: str) -> str:
        return f"{self.prefix}quota:{subject}:{day}"

    def take(self, subject: str, limit: int) -> Allowance:
        now = self.store.clock()
        day, resets_at = _day_bounds(now)
        ttl = int((resets_at - now).total_seconds()) + 3600  # the rest of the day, and an hour's grace
        taken, used = self.client.eval(_TAKE, 1, self._key(subject, day), limit, ttl)
        return Allowance(bool(taken), limit, int(used), resets_at)

    def give_back(self, subject: str) -> None:
        day, _ = _day_bounds(self.store.clock())
        self.client.eval(_GIVE_BACK, 1, self._key(subject, day))

    def peek(self, subject: str, limit: int) -> Allowance:
        day, resets_at = _day_bounds(self.store.clock())
        used = int(self.client.get(self._key(subject, day)) or 0)
        return Allowance(used < limit, limit, used, resets_at)


def redis_client(url: str | None = None) -> redis.Redis | None:
    """A client for `url` or `TRAINTRIAGE_REDIS_URL`; None when neither is set."""
    url = url or os.environ.get(REDIS_ENV, "").strip()
    if not url:
        return None
    import redis

    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def open_quotas(store: Store, client: redis.Redis | None = None) -> Quotas:
    """Redis counters when a client is given (see `redis_client`), else the database's."""
    return RedisQuotas(store, client) if client is not None else DatabaseQuotas(store)
