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


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
