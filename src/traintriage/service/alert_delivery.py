"""Sending alerts: once per fingerprint per rule per window, retried with backoff, every delivery recorded.

Targets: a Slack-compatible webhook (`{"text": ...}`), a generic JSON webhook signed with
HMAC-SHA256 (`X-Traintriage-Signature: sha256=<hex>` over `<timestamp>.<body>`, the
timestamp in `X-Traintriage-Timestamp`), or e-mail over SMTP (`TRAINTRIAGE_SMTP_URL`).
De-duplication uses Redis (`SET NX EX`) when configured, else one conditional upsert.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import smtplib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import httpx

from traintriage.service import webhook_guard
from traintriage.service.alert_rules import matching_rules
from traintriage.service.models import AlertDelivery, AlertRule, AlertSent, DiagnosisRow
from traintriage.service.store import Store
from traintriage.service.upsert import dialect_insert

if TYPE_CHECKING:
    import redis

SMTP_ENV = "TRAINTRIAGE_SMTP_URL"
SMTP_FROM_ENV = "TRAINTRIAGE_SMTP_FROM"
PUBLIC_URL_ENV = "TRAINTRIAGE_PUBLIC_URL"
SIGNATURE_HEADER = "X-Traintriage-Signature"
TIMESTAMP_HEADER = "X-Traintriage-Timestamp"


class DeliveryError(Exception):
    """One failed attempt; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Alert:
    """What an alert says: the diagnosis (or a test) that a rule matched."""

    rule: AlertRule
    diagnosis_id: str | None
    fingerprint: str | None
    root_cause: str | None
    title: str
    category: str | None
    severity: str | None
    initiating_rank: int | None
    test: bool = False

    @classmethod
    def for_diagnosis(cls, rule: AlertRule, row: DiagnosisRow) -> Alert:
        root = row.document.get("root_cause")
        title = str(root.get("title")) if isinstance(root, dict) else row.status
        return cls(rule, row.id, row.fingerprint, row.root_cause, title, row.category, row.severity,
                   row.initiating_rank)

    @classmethod
    def test_for(cls, rule: AlertRule) -> Alert:
        return cls(rule, None, None, "test", "Test alert from traintriage", None, None, None, test=True)

    def link(self) -> str | None:
        base = os.environ.get(PUBLIC_URL_ENV, "").rstrip("/")
        return f"{base}/d/{self.diagnosis_id}" if base and self.diagnosis_id else None

    def text(self) -> str:
        if self.test:
            return f"traintriage: test alert for rule '{self.rule.name}'"
        rank = f" (first failed rank {self.initiating_rank})" if self.initiating_rank is not None else ""
        link = self.link()
        return (f"traintriage: {self.title} [{self.root_cause}]{rank}, rule '{self.rule.name}'"
                + (f"\n{link}" if link else ""))

    def payload(self) -> dict[str, Any]:
        return {"event": "test" if self.test else "diagnosis", "rule": {"id": self.rule.id, "name": self.rule.name},
                "diagnosis": None if self.test else {
                    "id": self.diagnosis_id, "root_cause": self.root_cause, "title": self.title,
                    "category": self.category, "severity": self.severity, "fingerprint": self.fingerprint,
                    "initiating_rank": self.initiating_rank, "url": self.link()}}


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value a receiver recomputes to trust a generic JSON alert."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


@dataclass
class Notifier:
    """Finds the rules a new diagnosis matches and delivers their alerts."""

    store: Store
    redis: redis.Redis | None = None
    redis_prefix: str = "traintriage:"
    attempts: int = 4
    backoff: float = 0.5  # seconds before the 2nd attempt; doubles each time
    sleep: Callable[[float], None] = time.sleep
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10.0))
    on_delivery: Callable[[AlertDelivery], None] | None = None  # metrics hook

    def notify(self, diagnosis_id: str) -> list[AlertDelivery]:
        """Alert every rule the stored diagnosis matches, once per fingerprint per window."""
        row = self.store.get_row(diagnosis_id)
        if row is None or row.fingerprint is None:
            return []
        sent = []
        for rule in matching_rules(self.store, row):
            if self._claim(rule, row.fingerprint):
                sent.append(self.deliver(Alert.for_diagnosis(rule, row)))
        return sent

    def send_test(self, rule: AlertRule) -> AlertDelivery:
        """The rule page's "send test": a real delivery of a test alert, recorded, never de-duplicated."""
        return self.deliver(Alert.test_for(rule))

    def _claim(self, rule: AlertRule, fingerprint: str) -> bool:
        """True for the first claim of (rule, fingerprint) in the rule's window, across processes."""
        if self.redis is not None:
            key = f"{self.redis_prefix}alert:{rule.id}:{fingerprint}"
            return bool(self.redis.set(key, "1", nx=True, ex=rule.window_seconds))
        now = self.store.clock()
        insert = dialect_insert(self.store, AlertSent).values(rule_id=rule.id, fingerprint=fingerprint, sent_at=now)
        upsert = insert.on_conflict_do_update(
            index_elements=["rule_id", "fingerprint"], set_={"sent_at": now},
            where=AlertSent.sent_at <= now - timedelta(seconds=rule.window_seconds))
        with self.store.engine.begin() as connection:
            # RETURNING, not rowcount: psycopg reports -1 for an upsert.
            return connection.execute(upsert.returning(AlertSent.rule_id)).first() is not None

    def deliver(self, alert: Alert) -> AlertDelivery:
        """Try up to `attempts` times with doubling pauses; record the outcome."""
        error: DeliveryError | None = None
        attempt = 0
        for attempt in range(1, self.attempts + 1):
            try:
                status = self._send(alert)
            except DeliveryError as exc:
                error = exc
                if attempt < self.attempts:
                    self.sleep(self.backoff * 2 ** (attempt - 1))
                continue
            return self._record(alert, attempt, "delivered", status, None)
        assert error is not None
        return self._record(alert, attempt, "failed", error.status, str(error)[:500])

    def _record(self, alert: Alert, attempts: int, status: str, code: int | None, error: str | None) -> AlertDelivery:
        row = AlertDelivery(rule_id=alert.rule.id, diagnosis_id=alert.diagnosis_id, fingerprint=alert.fingerprint,
                            test=alert.test, created_at=self.store.clock(), attempts=attempts, status=status,
                            response_code=code, last_error=error)
        with self.store.sessions.begin() as session:
            session.add(row)
        if self.on_delivery is not None:
            self.on_delivery(row)
        return row

    def _send(self, alert: Alert) -> int | None:
        rule = alert.rule
        if rule.email:
            send_email(rule.email, alert.text())
            return None
        assert rule.webhook_url is not None
        if rule.webhook_format == "slack":
            body = json.dumps({"text": alert.text()}).encode()
            headers = {"Content-Type": "application/json"}
        else:
            body = json.dumps(alert.payload()).encode()
            timestamp = str(int(self.store.clock().timestamp()))
            headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: timestamp,
                       SIGNATURE_HEADER: sign(rule.webhook_secret or "", timestamp, body)}
        try:
            webhook_guard.check_url(rule.webhook_url)  # again: the name may resolve elsewhere by now
        except webhook_guard.ForbiddenTarget as exc:
            raise DeliveryError(str(exc)) from exc
        try:
            response = self.http.post(rule.webhook_url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise DeliveryError(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code >= 300:
            raise DeliveryError(f"HTTP {response.status_code}", response.status_code)
        return response.status_code


def send_email(to: str, text: str) -> None:
    """One plain-text message through `TRAINTRIAGE_SMTP_URL` (smtp://, smtp+starttls:// or smtps://)."""
    url = os.environ.get(SMTP_ENV, "").strip()
    if not url:
        raise DeliveryError(f"e-mail alerts need {SMTP_ENV} (e.g. smtp+starttls://user:password@mail.example:587)")
    parts = urlsplit(url)
    message = EmailMessage()
    message["From"] = os.environ.get(SMTP_FROM_ENV, "traintriage@localhost")
    message["To"] = to
    message["Subject"] = text.splitlines()[0][:200]
    message.set_content(text)
    secure = parts.scheme == "smtps"
    client_class = smtplib.SMTP_SSL if secure else smtplib.SMTP
    try:
        with client_class(parts.hostname or "localhost", parts.port or (465 if secure else 25), timeout=10) as client:
            if parts.scheme == "smtp+starttls":
                client.starttls()
            if parts.username:
                client.login(unquote(parts.username), unquote(parts.password or ""))
            client.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryError(f"SMTP: {exc}") from exc
