"""Alert rules: which of an owner's diagnoses raise an alert, and where it goes.

A rule matches one field of a diagnosis (failure class, category, severity or fingerprint)
and names one target: a webhook (Slack-compatible, or generic JSON signed with HMAC-SHA256)
or an e-mail address. Rules belong to the key or code that made them.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from traintriage.service import webhook_guard
from traintriage.service.models import AlertDelivery, AlertRule, DiagnosisRow
from traintriage.service.store import Store

MATCH_FIELDS = ("class", "category", "severity", "fingerprint")
WEBHOOK_FORMATS = ("slack", "json")
DEFAULT_WINDOW = 3600
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,255}\.[A-Za-z]{2,63}")


class RuleError(ValueError):
    """A rule that cannot be created; the message says which field and why."""


@dataclass(frozen=True)
class RuleSpec:
    name: str
    match_field: str
    match_value: str
    webhook_url: str | None = None
    webhook_format: str = "json"
    email: str | None = None
    window_seconds: int = DEFAULT_WINDOW

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuleSpec:
        """From the API's `{"name", "match": {field: value}, "webhook_url"|"email", ...}`."""
        match = data.get("match")
        if not isinstance(match, dict) or len(match) != 1:
            raise RuleError(f"'match' must be an object with exactly one of: {', '.join(MATCH_FIELDS)}")
        (field, value), = match.items()
        window = data.get("window_seconds", DEFAULT_WINDOW)
        if not isinstance(window, int) or isinstance(window, bool):
            raise RuleError("'window_seconds' must be a whole number of seconds")
        return cls(name=str(data.get("name") or ""), match_field=str(field), match_value=str(value),
                   webhook_url=data.get("webhook_url"), webhook_format=str(data.get("webhook_format") or "json"),
                   email=data.get("email"), window_seconds=window)

    def validated(self) -> RuleSpec:
        if not 1 <= len(self.name.strip()) <= 200:
            raise RuleError("'name' needs 1 to 200 characters")
        if self.match_field not in MATCH_FIELDS:
            raise RuleError(f"'match' must be one of: {', '.join(MATCH_FIELDS)}")
        if not 1 <= len(self.match_value) <= 200:
            raise RuleError("the match value needs 1 to 200 characters")
        if (self.webhook_url is None) == (self.email is None):
            raise RuleError("a rule needs exactly one target: 'webhook_url' or 'email'")
        if self.webhook_url is not None:
            parts = urlsplit(self.webhook_url)
            if parts.scheme not in ("http", "https") or not parts.hostname or len(self.webhook_url) > 2000:
                raise RuleError("'webhook_url' must be an http or https URL")
            try:
                webhook_guard.check_url(self.webhook_url)
            except webhook_guard.ForbiddenTarget as exc:
                raise RuleError(str(exc)) from exc
            if self.webhook_format not in WEBHOOK_FORMATS:
                raise RuleError("'webhook_format' must be 'slack' or 'json'")
        if self.email is not None and (len(self.email) > 320 or not _EMAIL.fullmatch(self.email)):
            raise RuleError("'email' is not a valid address")
        if not 60 <= self.window_seconds <= 30 * 86400:
            raise RuleError("'window_seconds' must be between 60 and 2592000 (30 days)")
        return self


def create_rule(store: Store, owner: str, spec: RuleSpec) -> AlertRule:
    """Store a rule. A generic JSON webhook gets a signing secret, returned here (and on the rule's page)."""
    spec = spec.validated()
    is_json_webhook = spec.webhook_url is not None and spec.webhook_format == "json"
    row = AlertRule(owner=owner, name=spec.name.strip(), match_field=spec.match_field, match_value=spec.match_value,
                    webhook_url=spec.webhook_url, webhook_format=spec.webhook_format if spec.webhook_url else None,
                    webhook_secret=secrets.token_hex(32) if is_json_webhook else None,
                    email=spec.email, window_seconds=spec.window_seconds, created_at=store.clock())
    with store.sessions.begin() as session:
        session.add(row)
    return row


def list_rules(store: Store, owner: str) -> list[AlertRule]:
    with store.sessions() as session:
        return list(session.scalars(sa.select(AlertRule).where(AlertRule.owner == owner).order_by(AlertRule.id)))


def get_rule(store: Store, owner: str, rule_id: int) -> AlertRule | None:
    with store.sessions() as session:
        rule = session.get(AlertRule, rule_id)
    return rule if rule is not None and rule.owner == owner else None


def delete_rule(store: Store, owner: str, rule_id: int) -> bool:
    """Delete the owner's rule; its deliveries and de-duplication records go with it (ON DELETE CASCADE)."""
    with store.engine.begin() as connection:
        deleted = connection.execute(
            sa.delete(AlertRule).where(AlertRule.id == rule_id, AlertRule.owner == owner)).rowcount
    return deleted > 0


def deliveries(store: Store, rule_id: int, limit: int = 100) -> list[AlertDelivery]:
    """The rule's latest deliveries, newest first."""
    with store.sessions() as session:
        return list(session.scalars(sa.select(AlertDelivery).where(AlertDelivery.rule_id == rule_id)
                                    .order_by(AlertDelivery.id.desc()).limit(limit)))


def rule_json(rule: AlertRule) -> dict[str, Any]:
    target: dict[str, Any] = ({"webhook_url": rule.webhook_url, "webhook_format": rule.webhook_format}
                              if rule.webhook_url else {"email": rule.email})
    return {"id": rule.id, "name": rule.name, "match": {rule.match_field: rule.match_value}, **target,
            "window_seconds": rule.window_seconds, "created_at": rule.created_at.isoformat()}


def matches(rule: AlertRule, row: DiagnosisRow) -> bool:
    """Does the stored diagnosis fall under the rule?"""
    value = {"class": row.root_cause, "category": row.category, "severity": row.severity,
             "fingerprint": row.fingerprint}.get(rule.match_field)
    return value is not None and value == rule.match_value


def matching_rules(store: Store, row: DiagnosisRow) -> list[AlertRule]:
    if row.owner is None:
        return []
    return [rule for rule in list_rules(store, row.owner) if matches(rule, row)]
