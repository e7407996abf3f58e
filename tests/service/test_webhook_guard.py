"""Webhooks cannot be pointed at the server's own network (SSRF) unless the operator allows it."""

from __future__ import annotations

import pytest

from traintriage.service.alert_rules import RuleError, RuleSpec
from traintriage.service.webhook_guard import ALLOW_NETS_ENV, ForbiddenTarget, check_url


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/admin",
    "http://localhost/hook",
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata service
    "https://10.1.2.3/hook",
    "https://192.168.0.7/hook",
    "http://[::1]:9000/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped loopback
    "http://0.0.0.0/",
    "http://100.64.0.1/",  # carrier-grade NAT (shared address space)
])
def test_internal_addresses_are_refused(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_NETS_ENV, raising=False)
    with pytest.raises(ForbiddenTarget, match="internal address"):
        check_url(url, resolve=False)


def test_a_public_address_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_NETS_ENV, raising=False)
    check_url("https://93.184.215.14/hook", resolve=False)
    check_url("https://[2606:4700::1111]/hook", resolve=False)


def test_the_operator_can_allow_an_internal_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_NETS_ENV, "10.20.0.0/16, not-a-network")
    check_url("https://10.20.3.4/hook", resolve=False)
    with pytest.raises(ForbiddenTarget):
        check_url("https://10.21.3.4/hook", resolve=False)


def test_a_rule_aimed_at_the_metadata_service_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_NETS_ENV, raising=False)
    spec = RuleSpec.from_json({"name": "x", "match": {"class": "cuda-oom"},
                               "webhook_url": "http://169.254.169.254/latest/meta-data/"})
    with pytest.raises(RuleError, match=ALLOW_NETS_ENV):
        spec.validated()
