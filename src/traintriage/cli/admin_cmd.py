"""`traintriage admin`: run a team server's database: migrations, API keys, evaluation codes.

A new key or code is printed once, here; the database keeps only its hash.
Every command works on `--database-url`, else TRAINTRIAGE_DATABASE_URL, else the local
SQLite file that `traintriage serve` uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from traintriage.errors import UsageError

if TYPE_CHECKING:
    from traintriage.service.store import Store

admin_app = typer.Typer(help="Run a team server: database migrations, API keys, evaluation codes.",
                        no_args_is_help=True)
keys_app = typer.Typer(help="API keys for people and CI (Authorization: Bearer ...).", no_args_is_help=True)
codes_app = typer.Typer(help="Evaluation codes: 50 diagnoses a day for 14 days.", no_args_is_help=True)
admin_app.add_typer(keys_app, name="keys")


@admin_app.callback()
def _needs_the_serve_extra() -> None:
    try:
        import alembic  # noqa: F401
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"traintriage admin needs the serve extra: pip install 'traintriage[serve]' "
                         f"({exc.name} is missing)") from exc


admin_app.add_typer(codes_app, name="codes")

DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="Database URL (default: "
                                                 "TRAINTRIAGE_DATABASE_URL, else the local SQLite file).")]


def _open(url: str | None) -> Store:
    import sqlalchemy as sa

    from traintriage.service.store import Store

    try:
        return Store.open(url)
    except sa.exc.ArgumentError as exc:
        raise UsageError(f"not a database URL: {url}") from exc
    except sa.exc.OperationalError as exc:
        raise UsageError(f"cannot reach the database: {str(exc.orig).strip().splitlines()[0]}") from exc


@admin_app.command("migrate")
def migrate(database_url: DatabaseUrl = None,
            revision: Annotated[str, typer.Option(help="Target revision ('head', or one to go back to).")] = "head",
            ) -> int:
    """Bring the database schema to a revision (default: the newest)."""
    from traintriage.service import migrate as migrations
    from traintriage.service.store import Store, create_engine, default_database_url

    store = Store(create_engine(database_url or default_database_url()))
    try:
        before = migrations.current_revision(store.engine)
        if revision == "head":
            migrations.upgrade(store.engine)
        else:
            migrations.downgrade(store.engine, revision)
        print(f"database at revision {migrations.current_revision(store.engine) or 'empty'} (was {before or 'empty'})")
    except Exception as exc:
        raise UsageError(f"migration failed: {str(exc).strip().splitlines()[0]}") from exc
    finally:
        store.close()
    return 0


@keys_app.command("create")
def keys_create(name: Annotated[str, typer.Argument(help="Who or what uses the key, e.g. 'ci-nightly'.")],
                daily_limit: Annotated[int, typer.Option("--daily-limit", min=1, help="Diagnoses a day.")] = 1000,
                database_url: DatabaseUrl = None) -> int:
    """Create an API key and print it (once)."""
    from traintriage.service import identity

    try:
        issued = identity.create_key(_open(database_url), name, daily_limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    print(f"key {issued.id} for '{name}' ({daily_limit} diagnoses a day):\n{issued.token}\n"
          "Shown once: only its hash is stored.")
    return 0


@keys_app.command("list")
def keys_list(database_url: DatabaseUrl = None) -> int:
    """Every key: id, name, prefix, daily limit, state."""
    from traintriage.service import identity

    for key in identity.list_keys(_open(database_url)):
        state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
        print(f"{key.id:>5}  {key.prefix}…  {key.daily_limit:>6}/day  {state:<18} {key.name}")
    return 0


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[int, typer.Argument(help="The key's id (see 'admin keys list').")],
                database_url: DatabaseUrl = None) -> int:
    """Revoke a key at once."""
    from traintriage.service import identity

    if not identity.revoke_key(_open(database_url), key_id):
        raise UsageError(f"no active key {key_id}")
    print(f"key {key_id} revoked")
    return 0


@codes_app.command("list")
def codes_list(pending: Annotated[bool, typer.Option("--pending", help="Only requests awaiting approval.")] = False,
               database_url: DatabaseUrl = None) -> int:
    """Every evaluation code and request: id, state, expiry, organisation, contact."""
    from traintriage.service import identity

    for code in identity.list_codes(_open(database_url)):
        if pending and code.status != "requested":
            continue
        until = f"until {code.expires_at:%Y-%m-%d}" if code.expires_at else ""
        print(f"{code.id:>5}  {code.status:<9} {until:<16} {code.organisation} <{code.contact_email}>")
    return 0


def _print_code(code_id: int, token: str, expires: str) -> None:
    print(f"evaluation code {code_id} (50 diagnoses a day until {expires} UTC):\n{token}\n"
          "Shown once: only its hash is stored. Send it to the contact address.")


@codes_app.command("approve")
def codes_approve(request_id: Annotated[int, typer.Argument(help="The request's id (see 'admin codes list --pending').")],
                  database_url: DatabaseUrl = None) -> int:
    """Approve a request from the web form; prints the code (once)."""
    from traintriage.service import identity

    try:
        issued = identity.approve_code(_open(database_url), request_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    assert issued.expires_at is not None
    _print_code(issued.id, issued.token, f"{issued.expires_at:%Y-%m-%d %H:%M}")
    return 0


@codes_app.command("create")
def codes_create(organisation: Annotated[str, typer.Option("--organisation", help="The workplace.")],
                 email: Annotated[str, typer.Option("--email", help="Its contact address.")],
                 database_url: DatabaseUrl = None) -> int:
    """Issue a code directly (no web request); prints it (once)."""
    from traintriage.service import identity

    try:
        issued = identity.create_code(_open(database_url), organisation, email)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    assert issued.expires_at is not None
    _print_code(issued.id, issued.token, f"{issued.expires_at:%Y-%m-%d %H:%M}")
    return 0


@codes_app.command("revoke")
def codes_revoke(code_id: Annotated[int, typer.Argument(help="The code's id.")], database_url: DatabaseUrl = None) -> int:
    """Revoke a code (or turn down a request) at once."""
    from traintriage.service import identity

    if not identity.revoke_code(_open(database_url), code_id):
        raise UsageError(f"no code or request {code_id} to revoke")
    print(f"evaluation code {code_id} revoked")
    return 0
