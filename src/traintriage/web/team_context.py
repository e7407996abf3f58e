"""The team service as the web app sees it: one `Team` per worker process, and who is calling.

A caller is, in this order: an `Authorization: Bearer` key or code, the signed session
cookie a browser got when someone entered a key or code, or an anonymous address.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import HTTPConnection

from traintriage.service import identity
from traintriage.service.alert_delivery import Notifier
from traintriage.service.identity import Caller, IdentityError
from traintriage.service.models import AlertDelivery
from traintriage.service.quotas import Quotas, open_quotas, redis_client
from traintriage.service.sessions import session_subject
from traintriage.service.store import Store
from traintriage.web.team_metrics import ALERT_DELIVERIES, DIAGNOSES

if TYPE_CHECKING:
    import redis

SESSION_COOKIE = "traintriage_session"
log = logging.getLogger("traintriage.web.team")
_creating = threading.Lock()


@dataclass
class Team:
    store: Store
    redis: redis.Redis | None
    quotas: Quotas
    notifier: Notifier
    proxies: list[identity.Network]
    background: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(2, "traintriage-alerts"))

    @classmethod
    def create(cls, store: Store) -> Team:
        client = redis_client()
        prefix = os.environ.get("TRAINTRIAGE_REDIS_PREFIX", "traintriage:")
        quotas = open_quotas(store, client)
        if client is not None:
            quotas.prefix = prefix  # type: ignore[attr-defined]
        notifier = Notifier(store, redis=client, redis_prefix=prefix, on_delivery=_count_delivery)
        return cls(store, client, quotas, notifier, identity.trusted_proxies())

    def caller(self, connection: HTTPConnection) -> Caller:
        """Who is calling; raises IdentityError for a key or code that does not (or no longer) work."""
        token = identity.bearer_token(connection.headers.get("authorization"))
        if token:
            return identity.caller_for_token(self.store, token)
        cookie = connection.cookies.get(SESSION_COOKIE)
        if cookie:
            subject = session_subject(self.store, cookie, self.store.clock())
            if subject is not None:
                return identity.caller_for_subject(self.store, subject)
        peer = connection.client.host if connection.client else "unknown"
        address = identity.client_address(peer, connection.headers.get("x-forwarded-for"), self.proxies)
        return identity.anonymous_caller(self.store, address)

    def after_diagnosis(self, diagnosis_id: str) -> None:
        """Count the stored diagnosis and send its alerts, off the request's path."""
        self.background.submit(self._after_diagnosis, diagnosis_id)

    def _after_diagnosis(self, diagnosis_id: str) -> None:
        try:
            row = self.store.get_row(diagnosis_id)
            if row is not None:
                DIAGNOSES.labels(row.root_cause or row.status or "none").inc()
                self.notifier.notify(diagnosis_id)
        except Exception:
            log.exception("alerting on a diagnosis failed", extra={"diagnosis": diagnosis_id})

    def ready(self) -> dict[str, Any]:
        """Whether the database and (when configured) Redis answer: /readyz."""
        checks: dict[str, Any] = {"database": self.store.ping()}
        if self.redis is not None:
            try:
                checks["redis"] = bool(self.redis.ping())
            except Exception:
                checks["redis"] = False
        return checks

    def close(self) -> None:
        self.background.shutdown(wait=True)
        if self.redis is not None:
            self.redis.close()


def _count_delivery(delivery: AlertDelivery) -> None:
    ALERT_DELIVERIES.labels(delivery.status).inc()
    log.info("alert delivery", extra={"event": "alert", "rule": delivery.rule_id, "status": delivery.status,
                                      "attempts": delivery.attempts})


def team_of(app: Any) -> Team:
    """The app's Team, made on first use from the store its lifespan opened."""
    team: Team | None = getattr(app.state, "team", None)
    if team is not None:
        return team
    with _creating:
        team = getattr(app.state, "team", None)
        if team is None:
            store = app.state.store
            if not isinstance(store, Store):
                raise RuntimeError("the team service needs traintriage.service.store.Store")
            team = app.state.team = Team.create(store)
    return team


def caller_of(connection: HTTPConnection) -> Caller:
    """The request's caller, resolved once per request. Raises IdentityError."""
    cached = getattr(connection.state, "caller", None)
    if isinstance(cached, Caller):
        return cached
    caller = team_of(connection.app).caller(connection)
    connection.state.caller = caller
    return caller


__all__ = ["SESSION_COOKIE", "Caller", "IdentityError", "Team", "caller_of", "team_of"]
