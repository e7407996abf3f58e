"""The team service through a real server: the quota race across worker processes, keys and
history over the API, alerts from a stored diagnosis, expired codes, follow-up questions."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

from tests.service.receivers import http_receiver
from tests.service.server import sqlite_team_server, team_server
from traintriage.service import identity
from traintriage.service.models import EvaluationCode
from traintriage.service.store import Store

pytestmark = pytest.mark.e2e
OOM_LOG = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
           "GPU 3 has a total capacity of 79.10 GiB of which 1.20 GiB is free.\n")


def _pids(log_dir: Path) -> set[int]:
    pids = set()
    for path in log_dir.glob("server-*.log"):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("{") and '"event": "request"' in line:
                pids.add(json.loads(line)["pid"])
    return pids


@pytest.fixture(params=["postgresql+redis", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team.db'}", {}
    make: Callable[[], str] = request.getfixturevalue("postgres_databases")
    redis_url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_prefix")
    return make(), {"TRAINTRIAGE_REDIS_URL": redis_url, "TRAINTRIAGE_REDIS_PREFIX": prefix}


def test_fifty_concurrent_requests_from_one_client_get_exactly_three_diagnoses_across_four_workers(
        backend: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    database_url, env = backend
    with team_server(tmp_path, database_url, 4, **env) as url:
        deadline = time.monotonic() + 60
        while len(_pids(tmp_path)) < 4 and time.monotonic() < deadline:
            httpx.get(f"{url}/readyz", timeout=5)
        assert len(_pids(tmp_path)) == 4, "all four workers answer"
        with ThreadPoolExecutor(50) as pool:
            responses = list(pool.map(
                lambda _: httpx.post(f"{url}/api/v1/diagnoses", content=OOM_LOG,
                                     headers={"content-type": "text/plain"}, timeout=60), range(50)))
        me = httpx.get(f"{url}/api/v1/me", timeout=10).json()
    statuses = sorted(r.status_code for r in responses)
    errors = [line for path in tmp_path.glob("server-*.log") for line in path.read_text().splitlines()
              if '"level": "error"' in line or line.startswith(("ERROR", "Traceback"))]
    assert statuses == [201] * 3 + [429] * 47, (statuses, [r.text[:300] for r in responses if r.status_code >= 500],
                                                errors[-3:])
    refused = next(r for r in responses if r.status_code == 429)
    assert refused.headers["ratelimit-limit"] == "3" and refused.headers["ratelimit-remaining"] == "0"
    assert int(refused.headers["retry-after"]) == int(refused.headers["ratelimit-reset"]) > 0
    assert "resets at" in refused.json()["detail"] and "/evaluation-code" in refused.json()["detail"]
    assert (me["used_today"], me["remaining_today"]) == (3, 0)


@pytest.fixture
def sqlite_server(tmp_path: Path) -> Iterator[tuple[str, Store]]:
    with sqlite_team_server(tmp_path, TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT="20") as running:
        yield running


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_history_is_per_key_and_deletion_is_real(sqlite_server: tuple[str, Store]) -> None:
    url, store = sqlite_server
    alice, bob = identity.create_key(store, "alice").token, identity.create_key(store, "bob").token
    with httpx.Client(base_url=url, timeout=60) as http:
        mine = http.post("/api/v1/diagnoses", json={"log": OOM_LOG}, headers=_bearer(alice)).json()["id"]
        theirs = http.post("/api/v1/diagnoses", json={"log": OOM_LOG}, headers=_bearer(bob)).json()["id"]
        http.post("/api/v1/diagnoses", json={"log": OOM_LOG})  # anonymous: no history
        listed = http.get("/api/v1/diagnoses", params={"q": "tried to allocate", "class": "cuda-oom"},
                          headers=_bearer(alice)).json()
        assert [d["id"] for d in listed] == [mine]
        assert listed[0]["initiating_rank"] == 3
        assert listed[0]["fingerprint"] == store.get_row(mine).fingerprint  # type: ignore[union-attr]
        assert http.get("/api/v1/diagnoses", params={"category": "network"}, headers=_bearer(alice)).json() == []
        assert http.delete(f"/api/v1/diagnoses/{theirs}", headers=_bearer(alice)).status_code == 404
        assert http.delete(f"/api/v1/diagnoses/{mine}", headers=_bearer(alice)).status_code == 204
        assert http.get(f"/api/v1/diagnoses/{mine}").status_code == 404
        assert [d["id"] for d in http.get("/api/v1/diagnoses", headers=_bearer(bob)).json()] == [theirs]
        anonymous = http.get("/api/v1/diagnoses")
        assert anonymous.status_code == 401 and "API key" in anonymous.json()["detail"]
        wrong = http.get("/api/v1/me", headers=_bearer("tt_key_not-a-key"))
        assert wrong.status_code == 401 and wrong.json()["detail"] == "unknown API key or evaluation code"


def test_an_expired_code_stops_with_a_clear_message(sqlite_server: tuple[str, Store]) -> None:
    url, store = sqlite_server
    code = identity.create_code(store, "Example Labs", "ops@example.org")
    with httpx.Client(base_url=url, timeout=60) as http:
        me = http.get("/api/v1/me", headers=_bearer(code.token)).json()
        assert (me["kind"], me["daily_limit"]) == ("code", 50)
        with store.sessions.begin() as session:
            row = session.get(EvaluationCode, code.id)
            assert row is not None
            row.expires_at = datetime.now(timezone.utc) - timedelta(minutes=1)
        refused = http.post("/api/v1/diagnoses", json={"log": OOM_LOG}, headers=_bearer(code.token))
    assert refused.status_code == 401
    assert refused.json()["detail"].startswith("this evaluation code expired on ")


def test_a_stored_diagnosis_alerts_its_owners_rule_once(sqlite_server: tuple[str, Store]) -> None:
    url, store = sqlite_server
    token = identity.create_key(store, "oncall").token
    with http_receiver(fail_first=1) as (hook, received), httpx.Client(base_url=url, timeout=60) as http:
        created = http.post("/api/v1/alert-rules", headers=_bearer(token), json={
            "name": "oom", "match": {"class": "cuda-oom"}, "webhook_url": hook})
        assert created.status_code == 201, created.text
        rule = created.json()
        for _ in range(2):  # the same incident twice: one alert
            assert http.post("/api/v1/diagnoses", json={"log": OOM_LOG}, headers=_bearer(token)).status_code == 201
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            deliveries = http.get(f"/api/v1/alert-rules/{rule['id']}/deliveries", headers=_bearer(token)).json()
            if deliveries:
                break
            time.sleep(0.3)
        time.sleep(1.5)  # room for a wrong second alert to show up
        deliveries = http.get(f"/api/v1/alert-rules/{rule['id']}/deliveries", headers=_bearer(token)).json()
        assert [(d["status"], d["attempts"]) for d in deliveries] == [("delivered", 2)]
        assert len(received.requests) == 2
        assert json.loads(received.requests[-1][1])["diagnosis"]["root_cause"] == "cuda-oom"
        assert http.get(f"/api/v1/alert-rules/{rule['id']}/deliveries").status_code == 401
        other = identity.create_key(store, "other").token
        assert http.get(f"/api/v1/alert-rules/{rule['id']}/deliveries", headers=_bearer(other)).status_code == 404


def test_questions_are_answered_with_citations(sqlite_server: tuple[str, Store]) -> None:
    url, store = sqlite_server
    with httpx.Client(base_url=url, timeout=60) as http:
        diagnosis = http.post("/api/v1/diagnoses", json={"log": OOM_LOG}).json()["id"]
        answer = http.post(f"/api/v1/diagnoses/{diagnosis}/questions", json={"question": "How do I confirm it?"})
        assert answer.status_code == 200
        assert answer.json()["citations"][0] == {"entry": "cuda-oom", "section": "confirm"}
        assert http.post(f"/api/v1/diagnoses/{diagnosis}/questions", json={"question": ""}).status_code == 422
        assert http.post("/api/v1/diagnoses/nope/questions", json={"question": "why?"}).status_code == 404
        requested = http.post("/api/v1/evaluation-codes", json={"organisation": "Example Labs", "email": "a@b.org"})
        assert requested.status_code == 202 and requested.json()["status"] == "requested"
        bad = http.post("/api/v1/evaluation-codes", json={"organisation": "Example Labs", "email": "nope"})
        assert bad.status_code == 422
    assert [(c.organisation, c.status) for c in identity.list_codes(store)] == [("Example Labs", "requested")]
