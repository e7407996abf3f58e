"""Store: migrations up and down on both backends, saving and reading diagnoses, ownership."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.service.conftest import FakeClock
from traintriage.service import migrate
from traintriage.service.store import Store, create_engine, default_database_url

OOM = {
    "schema": "traintriage.diagnosis/1",
    "status": "failure",
    "root_cause": {
        "id": "cuda-oom", "title": "CUDA out of memory", "category": "memory", "severity": "high",
        "confidence": 0.9, "summary": "s",
        "evidence": [{"source": "r3.log", "line": 7, "rank": 3,
                      "text": "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}],
    },
    "initiating_rank": 3,
}


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    make: Callable[[], str] = request.getfixturevalue("postgres_databases")
    return make()


def test_migrations_go_up_to_head_and_back_down_to_nothing(fresh_url: str) -> None:
    store = Store.open(fresh_url)
    assert migrate.current_revision(store.engine) == migrate.head_revision()
    assert "diagnoses" in _tables(fresh_url)
    migrate.downgrade(store.engine, "base")
    assert migrate.current_revision(store.engine) is None
    assert _tables(fresh_url) <= {"alembic_version"}
    migrate.upgrade(store.engine)
    store.save_diagnosis(OOM, sources=["r3.log"])
    store.close()


def test_a_saved_diagnosis_reads_back_with_its_metadata(store: Store, clock: FakeClock) -> None:
    diagnosis_id = store.save_diagnosis(OOM, owner="key:1", sources=["r3.log", "r0.log"])
    assert store.get_diagnosis(diagnosis_id) == OOM
    row = store.get_row(diagnosis_id)
    assert row is not None
    assert (row.root_cause, row.category, row.severity, row.initiating_rank) == ("cuda-oom", "memory", "high", 3)
    assert row.sources == ["r3.log", "r0.log"]
    assert row.created_at == clock.now
    assert "tried to allocate" in row.search_text


def test_ids_are_unguessable_and_an_owner_sees_only_its_own(store: Store) -> None:
    ids = {store.save_diagnosis(OOM, owner="key:a", sources=[]) for _ in range(20)}
    assert len(ids) == 20
    assert all(len(i) >= 22 for i in ids)
    one = next(iter(ids))
    assert store.get_diagnosis(one, owner="key:a") == OOM
    assert store.get_diagnosis(one, owner="key:b") is None
    assert store.get_diagnosis(one) == OOM  # a shared link
    assert store.get_diagnosis("no-such-id") is None


def test_default_url_is_a_sqlite_file_in_the_user_data_dir_unless_the_env_says_otherwise(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TRAINTRIAGE_DATABASE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_database_url() == f"sqlite:///{tmp_path / 'data' / 'traintriage' / 'traintriage.db'}"
    store = Store.open()
    store.save_diagnosis(OOM, sources=[])
    store.close()
    assert (tmp_path / "data" / "traintriage" / "traintriage.db").is_file()
    monkeypatch.setenv("TRAINTRIAGE_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    assert default_database_url() == f"sqlite:///{tmp_path / 'other.db'}"


def _open_and_save(url: str) -> str:
    store = Store.open(url)
    try:
        return store.save_diagnosis(OOM, sources=[])
    finally:
        store.close()


def test_workers_starting_together_migrate_once_and_all_work(fresh_url: str) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        ids = pool.map(_open_and_save, [fresh_url] * 4)
    store = Store.open(fresh_url)
    assert all(store.get_diagnosis(i) == OOM for i in ids)
    store.close()


def test_the_models_and_the_migrations_describe_the_same_tables(fresh_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from traintriage.service.models import Base

    store = Store.open(fresh_url)
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    store.close()
    assert differences == []
