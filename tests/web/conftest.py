"""An in-process app on a real SQLite store (migrated), for tests that need no server process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from traintriage.web.app import create_app
from traintriage.web.settings import WebSettings


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    database = tmp_path_factory.mktemp("web") / "traintriage.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT", "100000")
        settings = WebSettings(max_upload_bytes=8 << 20, max_log_bytes=32 << 20, database_url=f"sqlite:///{database}")
        with TestClient(create_app(settings), headers={"accept": "text/html"}) as running:
            yield running


def csrf(client: TestClient) -> str:
    client.get("/")
    token = client.cookies.get("traintriage_csrf")
    assert token
    return token


SAMPLE = Path(__file__).resolve().parents[2] / "src/traintriage/data/sample/job-4412.log"
