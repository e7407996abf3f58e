"""The on-disk caches behind start-up: what they give back equals what a cold build gives."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest

from traintriage.kb import loader
from traintriage.kb.loader import PackedEntries, load_entries
from traintriage.match import compiler


def test_packed_entries_unpack_only_what_is_read() -> None:
    entries = dict(load_entries().entries)
    packed = PackedEntries.pack(entries)
    some = next(iter(entries))
    assert len(packed) == len(entries) and set(packed) == set(entries) and some in packed
    assert "no-such-entry" not in packed and packed.get("no-such-entry") is None
    assert packed[some] == entries[some]
    assert list(packed._unpacked) == [some]  # the others stay bytes until read
    assert packed[some] is packed[some]
    again = pickle.loads(pickle.dumps(packed))
    assert again._unpacked == {} and dict(again.items()) == entries


def test_kb_from_cache_equals_kb_from_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINTRIAGE_CACHE_DIR", str(tmp_path))
    for cached in (loader.load_kb, loader.kb_cache_key):
        cached.cache_clear()
    try:
        cold = loader.load_kb()
        assert len(list(tmp_path.glob("kb-*.pickle"))) == 1
        loader.load_kb.cache_clear()
        warm = loader.load_kb()
        assert warm is not cold and dict(warm.entries.items()) == dict(load_entries().entries)
    finally:
        for cached in (loader.load_kb, loader.kb_cache_key):
            cached.cache_clear()


def test_scanner_patterns_from_cache_equal_a_cold_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINTRIAGE_CACHE_DIR", str(tmp_path))
    for cached in (loader.load_kb, loader.kb_cache_key, compiler.load_scanner):
        cached.cache_clear()
    try:
        cold_table, cold_digest = compiler.cached_kb_patterns()
        warm_table, warm_digest = compiler.cached_kb_patterns()
        assert warm_table == cold_table == compiler.kb_patterns(loader.load_kb())
        assert warm_digest == cold_digest == compiler.patterns_digest(cold_table)
        scanner = compiler.load_scanner()
        assert scanner.table == compiler.pattern_table(loader.load_kb())
        first_mask = next(i for i, p in enumerate(scanner.table) if p.kind is compiler.PatternKind.mask_state)
        assert scanner.mask_base == first_mask
    finally:
        for cached in (loader.load_kb, loader.kb_cache_key, compiler.load_scanner):
            cached.cache_clear()


def test_writing_a_cache_removes_caches_of_its_kind_unused_for_two_weeks(tmp_path: Path) -> None:
    old_kb, live_kb = tmp_path / f"kb-{'a' * 20}.pickle", tmp_path / f"kb-{'b' * 20}.pickle"
    old_scanner, not_ours = tmp_path / f"scanner-{'c' * 24}-x86_64.hsdb", tmp_path / "kb-notes.txt"
    for path in (old_kb, live_kb, old_scanner, not_ours):
        path.write_bytes(b"x")
    weeks_ago = time.time() - loader.STALE_AFTER_SECONDS - 60
    for path in (old_kb, old_scanner, not_ours):
        os.utime(path, (weeks_ago, weeks_ago))
    new = tmp_path / f"kb-{'d' * 20}.pickle"
    loader.write_cache(new, b"new")
    assert sorted(tmp_path.iterdir()) == sorted([live_kb, new, old_scanner, not_ours])
