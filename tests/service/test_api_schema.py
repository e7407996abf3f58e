"""Schemathesis over the server's OpenAPI schema: generated requests never cause a server error.

Runs against a real server (SQLite) with an API key, so the key-only operations (history,
alert rules, deliveries) are exercised too, not only refused. Every operation gets its own
Hypothesis run; a failing example names the operation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.service.server import team_server
from traintriage.service import identity
from traintriage.service.store import Store

pytestmark = pytest.mark.e2e


def test_no_generated_request_causes_a_server_error(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'team.db'}"
    store = Store.open(database_url)
    key = {"authorization": f"Bearer {identity.create_key(store, 'schemathesis').token}"}
    store.close()
    with team_server(tmp_path, database_url, TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT="100000") as url:
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 15

        for operation in operations:
            @given(case=operation.as_strategy())
            @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
            def run(case: schemathesis.Case) -> None:
                case.call_and_validate(headers=key, checks=[not_a_server_error])

            run()
