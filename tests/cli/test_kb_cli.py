"""`traintriage kb ...`: browsing the encyclopedia from the terminal."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.cli.conftest import Result

Cli = Callable[..., Result]


def test_list_json_has_every_entry_once(cli: Cli) -> None:
    rows = json.loads(cli("kb", "list", "--format", "json").out)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) >= 113
    assert "cuda-oom" in ids


def test_show_prints_fix_and_references(cli: Cli) -> None:
    result = cli("kb", "show", "cuda-oom")
    assert result.code == 0
    assert "Fix:" in result.out and "https://" in result.out


def test_show_unknown_id_is_a_usage_error(cli: Cli) -> None:
    result = cli("kb", "show", "no-such-entry")
    assert result.code == 64 and "no entry" in result.err


def test_search_by_error_message_finds_the_class(cli: Cli) -> None:
    result = cli("kb", "search", "RuntimeError: CUDA error: device-side assert triggered")
    assert result.out.splitlines()[0].startswith("cuda-device-side-assert")


def test_export_is_full_entries(cli: Cli) -> None:
    entries = json.loads(cli("kb", "export").out)
    oom = next(e for e in entries if e["id"] == "cuda-oom")
    assert oom["fix"]["steps"] and oom["references"] and oom["signatures"]
