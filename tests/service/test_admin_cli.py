"""`traintriage admin`: keys and codes shown once and working, one-line errors, migrations both ways."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.cli.conftest import Result
from tests.cli.conftest import cli as cli  # noqa: F401 (the shared in-process CLI fixture)
from traintriage.service import identity
from traintriage.service.store import Store

Cli = Callable[..., Result]


@pytest.fixture
def url(database_url: str, store: Store) -> str:
    return database_url


def test_a_created_key_is_printed_once_and_authenticates(cli: Cli, url: str) -> None:
    created = cli("admin", "keys", "create", "ci-nightly", "--daily-limit", "25", "--database-url", url)
    assert created.code == 0, created.err
    token = re.search(r"tt_key_\S+", created.out)
    assert token is not None
    caller = identity.caller_for_token(Store.open(url), token.group())
    assert (caller.name, caller.daily_limit) == ("ci-nightly", 25)
    listed = cli("admin", "keys", "list", "--database-url", url)
    assert "ci-nightly" in listed.out and token.group() not in listed.out
    assert cli("admin", "keys", "revoke", str(caller.subject.split(":")[1]), "--database-url", url).code == 0
    again = cli("admin", "keys", "revoke", caller.subject.split(":")[1], "--database-url", url)
    assert again.code == 64 and again.err.startswith("traintriage: error: no active key")


def test_a_requested_code_is_approved_from_the_cli(cli: Cli, url: str) -> None:
    request_id = identity.request_code(Store.open(url), "Example Labs", "ops@example.org")
    pending = cli("admin", "codes", "list", "--pending", "--database-url", url)
    assert f"{request_id}  requested" in pending.out
    approved = cli("admin", "codes", "approve", str(request_id), "--database-url", url)
    assert approved.code == 0 and "until" in approved.out
    token = re.search(r"tt_eval_\S+", approved.out)
    assert token is not None
    assert identity.caller_for_token(Store.open(url), token.group()).kind == "code"
    twice = cli("admin", "codes", "approve", str(request_id), "--database-url", url)
    assert (twice.code, twice.err.strip()) == (64, f"traintriage: error: evaluation code {request_id} is already approved")
    bad = cli("admin", "codes", "create", "--organisation", "X", "--email", "nope", "--database-url", url)
    assert bad.code == 64 and "e-mail" in bad.err and "Traceback" not in bad.err


def test_migrate_goes_down_and_up_and_an_unreachable_database_is_one_line(cli: Cli, url: str) -> None:
    down = cli("admin", "migrate", "--revision", "base", "--database-url", url)
    assert down.code == 0 and "revision empty" in down.out
    up = cli("admin", "migrate", "--database-url", url)
    assert up.code == 0 and "revision 0002 (was empty)" in up.out
    dead = cli("admin", "keys", "list", "--database-url", "postgresql://nobody@127.0.0.1:1/none")
    assert dead.code == 64 and dead.err.count("\n") == 1 and "cannot reach the database" in dead.err


def test_without_the_serve_extra_the_error_names_the_pip_command(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "alembic", None)
    result = cli("admin", "keys", "list")
    assert result.code == 64
    assert result.err.strip() == ("traintriage: error: traintriage admin needs the serve extra: "
                                  "pip install 'traintriage[serve]' (alembic is missing)")
