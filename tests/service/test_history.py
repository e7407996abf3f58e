"""History: one owner never sees another's, filters and search work, deletion is real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.service.conftest import FakeClock
from traintriage.service import history
from traintriage.service.store import Store


def _document(entry: str, category: str, line: str) -> dict[str, Any]:
    return {"status": "failure", "initiating_rank": 1,
            "root_cause": {"id": entry, "title": entry.upper(), "category": category, "severity": "high",
                           "evidence": [{"source": "r1.log", "line": 3, "text": line}]}}


def _ids(items: list[history.HistoryItem]) -> list[str]:
    return [item.id for item in items]


def test_an_owner_sees_only_its_own_diagnoses(store: Store) -> None:
    mine = store.save_diagnosis(_document("cuda-oom", "memory", "CUDA out of memory"), owner="key:1", sources=["a"])
    theirs = store.save_diagnosis(_document("cuda-oom", "memory", "CUDA out of memory"), owner="key:2", sources=["b"])
    store.save_diagnosis(_document("cuda-oom", "memory", "CUDA out of memory"), owner=None, sources=["c"])
    assert _ids(history.list_history(store, "key:1")) == [mine]
    assert _ids(history.list_history(store, "key:2", query="memory")) == [theirs]
    assert not history.delete_one(store, "key:1", theirs)
    assert store.get_diagnosis(theirs) is not None


def test_filters_by_class_category_date_and_words(store: Store, clock: FakeClock) -> None:
    old = store.save_diagnosis(_document("cuda-oom", "memory", "Tried to allocate 2.00 GiB"), owner="k", sources=[])
    clock.advance(days=2)
    since = clock.now
    nccl = store.save_diagnosis(_document("nccl-timeout", "distributed", "Watchdog caught collective operation "
                                          "timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE)"), owner="k", sources=[])
    clock.advance(hours=1)
    nan = store.save_diagnosis(_document("loss-nan", "numerics", "loss is nan at step 100_5%"), owner="k", sources=[])
    assert _ids(history.list_history(store, "k")) == [nan, nccl, old]
    assert _ids(history.list_history(store, "k", failure_class="cuda-oom")) == [old]
    assert _ids(history.list_history(store, "k", category="distributed")) == [nccl]
    assert _ids(history.list_history(store, "k", since=since)) == [nan, nccl]
    assert _ids(history.list_history(store, "k", query="workNCCL allreduce")) == [nccl]
    assert _ids(history.list_history(store, "k", query="watchdog gib")) == []
    # LIKE wildcards in the words are literal characters.
    assert _ids(history.list_history(store, "k", query="100_5%")) == [nan]
    assert _ids(history.list_history(store, "k", query="1%5")) == []
    item = history.list_history(store, "k", failure_class="loss-nan")[0]
    assert (item.title, item.initiating_rank, item.created_at) == ("LOSS-NAN", 1, clock.now)


def test_delete_one_and_all(store: Store) -> None:
    ids = [store.save_diagnosis(_document("cuda-oom", "memory", "x"), owner="k", sources=[]) for _ in range(3)]
    other = store.save_diagnosis(_document("cuda-oom", "memory", "x"), owner="j", sources=[])
    assert history.delete_one(store, "k", ids[0])
    assert store.get_diagnosis(ids[0]) is None
    assert history.delete_all(store, "k") == 2
    assert history.list_history(store, "k") == []
    assert store.get_diagnosis(other) is not None


def test_a_deleted_diagnosis_leaves_no_bytes_in_the_sqlite_files(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'h.db'}")
    marker = "planted-marker-6f1c2e0d9a"
    kept = store.save_diagnosis(_document("cuda-oom", "memory", "kept line"), owner="k", sources=[])
    gone = store.save_diagnosis(_document("cuda-oom", "memory", f"evidence {marker}"), owner="k", sources=[])
    assert any(marker.encode() in p.read_bytes() for p in tmp_path.iterdir())
    assert history.delete_one(store, "k", gone)
    store.close()
    assert not any(marker.encode() in p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert Store.open(f"sqlite:///{tmp_path / 'h.db'}").get_diagnosis(kept) is not None
