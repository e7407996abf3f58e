"""Identity: anonymous addresses behind proxies, API keys, and the evaluation code life cycle."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.service.conftest import FakeClock
from traintriage.service import identity
from traintriage.service.identity import IdentityError
from traintriage.service.models import ApiKey, EvaluationCode
from traintriage.service.store import Store

PROXIES = identity.trusted_proxies("10.0.0.0/8, 192.0.2.1")


def test_forwarded_for_counts_only_from_a_trusted_proxy() -> None:
    assert identity.client_address("203.0.113.9", "198.51.100.7", PROXIES) == "203.0.113.9"
    assert identity.client_address("10.1.2.3", "198.51.100.7", PROXIES) == "198.51.100.7"
    # A client can prepend anything; the hop the trusted proxy added is the last untrusted one.
    assert identity.client_address("10.1.2.3", "1.1.1.1, 198.51.100.7, 192.0.2.1", PROXIES) == "198.51.100.7"
    assert identity.client_address("10.1.2.3", None, PROXIES) == "10.1.2.3"
    with pytest.raises(ValueError, match="not an address"):
        identity.trusted_proxies("10.0.0.0/8, proxy.example")


def test_anonymous_callers_are_salted_hashes_stable_across_opens(store: Store, database_url: str) -> None:
    one = identity.anonymous_caller(store, "198.51.100.7")
    assert one == identity.anonymous_caller(Store.open(database_url), "198.51.100.7")
    assert one.subject != identity.anonymous_caller(store, "198.51.100.8").subject
    assert "198.51.100.7" not in one.subject
    assert (one.owner, one.daily_limit) == (None, 3)


def test_a_key_is_shown_once_stored_as_a_hash_and_revocable(store: Store) -> None:
    issued = identity.create_key(store, "ci-pipeline", daily_limit=200)
    caller = identity.caller_for_token(store, issued.token)
    assert (caller.kind, caller.owner, caller.daily_limit) == ("key", f"key:{issued.id}", 200)
    with store.sessions() as session:
        stored = session.scalars(sa.select(ApiKey)).one()
    assert issued.token not in (stored.key_hash, stored.prefix) and stored.key_hash == identity.token_hash(issued.token)
    assert identity.bearer_token(f"Bearer {issued.token}") == issued.token
    assert identity.bearer_token(f"Basic {issued.token}") is None
    assert identity.revoke_key(store, issued.id)
    with pytest.raises(IdentityError, match="revoked"):
        identity.caller_for_token(store, issued.token)
    with pytest.raises(IdentityError, match="unknown"):
        identity.caller_for_token(store, issued.token + "x")


def test_an_evaluation_code_works_for_fourteen_days_after_approval(store: Store, clock: FakeClock) -> None:
    request_id = identity.request_code(store, "Example Labs", "ops@example.org")
    clock.advance(days=3)  # approval comes later; the 14 days start then
    issued = identity.approve_code(store, request_id)
    with pytest.raises(ValueError, match="already approved"):
        identity.approve_code(store, request_id)
    caller = identity.caller_for_token(store, issued.token)
    assert (caller.kind, caller.daily_limit, caller.name) == ("code", 50, "Example Labs")
    clock.advance(days=13, hours=23)
    assert identity.caller_for_token(store, issued.token).expires_at == issued.expires_at
    clock.advance(hours=1)
    with pytest.raises(IdentityError, match=r"expired on \d{4}-\d\d-\d\d .*14 days"):
        identity.caller_for_token(store, issued.token)
    with store.sessions() as session:
        row = session.scalars(sa.select(EvaluationCode)).one()
    assert row.code_hash == identity.token_hash(issued.token) and issued.token not in str(row.prefix)


def test_a_request_needs_an_organisation_and_a_real_address(store: Store) -> None:
    with pytest.raises(ValueError, match="organisation"):
        identity.request_code(store, "  ", "ops@example.org")
    with pytest.raises(ValueError, match="e-mail"):
        identity.request_code(store, "Example Labs", "not an address")


def test_a_revoked_code_stops_at_once(store: Store) -> None:
    issued = identity.create_code(store, "Example Labs", "ops@example.org")
    assert identity.revoke_code(store, issued.id)
    assert not identity.revoke_code(store, issued.id)
    with pytest.raises(IdentityError, match="revoked"):
        identity.caller_for_token(store, issued.token)


def test_a_code_gives_fifty_diagnoses_a_day_until_it_expires(store: Store, clock: FakeClock) -> None:
    from traintriage.service.quotas import open_quotas

    quotas = open_quotas(store)
    issued = identity.create_code(store, "Example Labs", "ops@example.org")
    for day in range(14):
        caller = identity.caller_for_token(store, issued.token)
        taken = [quotas.take(caller.subject, caller.daily_limit).allowed for _ in range(51)]
        assert taken == [True] * 50 + [False], f"day {day}"
        clock.advance(days=1)
    with pytest.raises(IdentityError, match="expired"):
        identity.caller_for_token(store, issued.token)
