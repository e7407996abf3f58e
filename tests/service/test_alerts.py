"""Alerts: rules validated, delivered to local receivers with retries, signed, de-duplicated per window."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.service.conftest import FakeClock
from tests.service.receivers import http_receiver, smtp_receiver
from traintriage.service import alert_rules
from traintriage.service.alert_delivery import Notifier, sign
from traintriage.service.alert_rules import RuleError, RuleSpec
from traintriage.service.quotas import redis_client
from traintriage.service.store import Store


def _oom(rank: int, size: str) -> dict[str, Any]:
    return {"status": "failure", "initiating_rank": rank,
            "root_cause": {"id": "cuda-oom", "title": "CUDA out of memory", "category": "memory", "severity": "high",
                           "evidence": [{"source": f"rank{rank}.log", "line": 9, "rank": rank,
                                         "text": f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. "
                                                 f"Tried to allocate {size} GiB. GPU {rank} has a total capacity"}]}}


@pytest.fixture(params=["database", "redis"])
def notifier(request: pytest.FixtureRequest, store: Store) -> Notifier:
    pauses: list[float] = []
    if request.param == "database":
        notifier = Notifier(store, sleep=pauses.append)
    else:
        client = redis_client(request.getfixturevalue("redis_url"))
        notifier = Notifier(store, redis=client, redis_prefix=request.getfixturevalue("redis_prefix"),
                            sleep=pauses.append)
    notifier.pauses = pauses  # type: ignore[attr-defined]
    return notifier


def test_one_failed_attempt_then_success_is_recorded_and_signed(notifier: Notifier, store: Store) -> None:
    with http_receiver(fail_first=1) as (url, received):
        rule = alert_rules.create_rule(store, "key:1", RuleSpec("oom", "class", "cuda-oom", webhook_url=url))
        diagnosis = store.save_diagnosis(_oom(3, "2.00"), owner="key:1", sources=["rank3.log"])
        [delivery] = notifier.notify(diagnosis)
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 2, 200)
    assert notifier.pauses == [0.5]  # type: ignore[attr-defined]
    assert len(received.requests) == 2
    headers, body = received.requests[-1]
    assert headers["x-traintriage-signature"] == sign(str(rule.webhook_secret), headers["x-traintriage-timestamp"], body)
    sent = json.loads(body)
    assert sent["diagnosis"]["id"] == diagnosis and sent["diagnosis"]["root_cause"] == "cuda-oom"
    assert [d.id for d in alert_rules.deliveries(store, rule.id)] == [delivery.id]


def test_one_incident_alerts_once_per_window(notifier: Notifier, store: Store, clock: FakeClock) -> None:
    with http_receiver() as (url, received):
        rule = alert_rules.create_rule(store, "key:1", RuleSpec("oom", "category", "memory", webhook_url=url,
                                                                webhook_format="slack", window_seconds=600))
        first = store.save_diagnosis(_oom(3, "2.00"), owner="key:1", sources=[])
        same_incident = store.save_diagnosis(_oom(5, "4.50"), owner="key:1", sources=[])  # other rank and size
        assert len(notifier.notify(first)) == 1
        assert notifier.notify(same_incident) == []
        store.save_diagnosis(_oom(3, "2.00"), owner="key:2", sources=[])  # not this owner's rule
        if notifier.redis is None:  # Redis keeps real time; the database follows the test's clock
            clock.advance(seconds=601)
            assert len(notifier.notify(same_incident)) == 1
    assert json.loads(received.requests[0][1])["text"].startswith("traintriage: CUDA out of memory [cuda-oom]")
    assert all(d.status == "delivered" for d in alert_rules.deliveries(store, rule.id))


def test_a_dead_receiver_is_given_up_on_and_recorded(notifier: Notifier, store: Store) -> None:
    with http_receiver(fail_first=10) as (url, received):
        rule = alert_rules.create_rule(store, "key:1", RuleSpec("all", "severity", "high", webhook_url=url))
        delivery = notifier.send_test(rule)
    assert (delivery.status, delivery.attempts, delivery.response_code, delivery.test) == ("failed", 4, 500, True)
    assert notifier.pauses == [0.5, 1.0, 2.0]  # type: ignore[attr-defined]
    assert json.loads(received.requests[0][1])["event"] == "test"


def test_email_alerts_go_through_smtp(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    with smtp_receiver() as (port, messages):
        monkeypatch.setenv("TRAINTRIAGE_SMTP_URL", f"smtp://127.0.0.1:{port}")
        rule = alert_rules.create_rule(store, "code:4", RuleSpec("mail", "class", "cuda-oom", email="oncall@example.org"))
        delivery = Notifier(store).notify(store.save_diagnosis(_oom(1, "1.00"), owner="code:4", sources=[]))
    assert [d.status for d in delivery] == ["delivered"]
    assert "To: oncall@example.org" in messages[0] and "CUDA out of memory" in messages[0]
    assert rule.webhook_secret is None


@pytest.mark.parametrize(("data", "message"), [
    ({"name": "x", "match": {"colour": "red"}, "webhook_url": "http://127.0.0.1/"}, "must be one of"),
    ({"name": "x", "match": {"class": "a", "category": "b"}, "webhook_url": "http://127.0.0.1/"}, "exactly one"),
    ({"name": "x", "match": {"class": "a"}}, "exactly one target"),
    ({"name": "x", "match": {"class": "a"}, "webhook_url": "file:///etc/passwd"}, "http or https"),
    ({"name": "x", "match": {"class": "a"}, "email": "nobody"}, "valid address"),
    ({"name": "", "match": {"class": "a"}, "email": "a@example.org"}, "'name'"),
])
def test_bad_rules_are_refused_with_the_reason(data: dict[str, Any], message: str, store: Store) -> None:
    with pytest.raises(RuleError, match=message):
        alert_rules.create_rule(store, "key:1", RuleSpec.from_json(data))


def test_rules_belong_to_their_owner(store: Store) -> None:
    rule = alert_rules.create_rule(store, "key:1", RuleSpec("r", "class", "a", email="a@example.org"))
    assert alert_rules.get_rule(store, "key:2", rule.id) is None
    assert not alert_rules.delete_rule(store, "key:2", rule.id)
    assert [r.id for r in alert_rules.list_rules(store, "key:1")] == [rule.id]
    assert alert_rules.delete_rule(store, "key:1", rule.id)
    assert alert_rules.list_rules(store, "key:1") == []


def test_a_webhook_no_longer_allowed_is_checked_again_at_delivery(
        notifier: Notifier, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule was accepted while loopback was allowed; at delivery the check runs again and
    nothing is sent (a name that now resolves inward is caught the same way)."""
    with http_receiver() as (url, received):
        rule = alert_rules.create_rule(store, "key:1", RuleSpec("oom", "class", "cuda-oom", webhook_url=url))
        monkeypatch.delenv("TRAINTRIAGE_WEBHOOK_ALLOW_NETS")
        diagnosis = store.save_diagnosis(_oom(3, "2.00"), owner="key:1", sources=[])
        [delivery] = notifier.notify(diagnosis)
    assert delivery.status == "failed" and "internal address" in (delivery.last_error or "")
    assert received.requests == [] and rule.id
