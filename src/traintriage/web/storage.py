"""Where results are kept, and who is asking: the hooks the team features build on.

The store is `traintriage.service.store.Store` (SQLite in the user data directory by default,
`TRAINTRIAGE_DATABASE_URL` for another database), opened once per process when the app starts.
"""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from fastapi import Depends
from starlette.requests import Request


class DiagnosisStore(Protocol):
    """What the web app needs from the store (tests may pass any object with these methods)."""

    def save_diagnosis(self, document: dict[str, Any], *, owner: str | None = None, sources: list[str]) -> str: ...

    def get_diagnosis(self, diagnosis_id: str, *, owner: str | None = None) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


def open_store(url: str | None) -> DiagnosisStore:
    from traintriage.service.store import Store

    return Store.open(url)


def get_store(request: Request) -> DiagnosisStore:
    """FastAPI dependency: the app's store."""
    store: DiagnosisStore = request.app.state.store
    return store


def current_owner(request: Request) -> str | None:
    """FastAPI dependency: who saves and reads results. Anonymous (None) until accounts exist;
    a result's unguessable id is then its only key."""
    return None


StoreDep = Annotated[DiagnosisStore, Depends(get_store)]
OwnerDep = Annotated[str | None, Depends(current_owner)]
