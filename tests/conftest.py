"""Shared fixtures: a per-session KB cache directory, so tests never touch the user's cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def pytest_configure(config: pytest.Config) -> None:
    cache = REPO / ".pytest_cache" / "traintriage-kb"
    os.environ.setdefault("TRAINTRIAGE_CACHE_DIR", str(cache))
    # The alert tests' webhook receivers listen on loopback, which a server refuses by default.
    os.environ.setdefault("TRAINTRIAGE_WEBHOOK_ALLOW_NETS", "127.0.0.0/8,::1/128")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
