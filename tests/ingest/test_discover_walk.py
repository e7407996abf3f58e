"""Directory discovery: the order and the set of files `rglob("*")` gave, from one scandir
per folder (hidden folders entered, linked folders not, each real file read once)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from traintriage.errors import InputError
from traintriage.ingest.sources import discover


def _names(root: Path, warnings: list[str] | None = None) -> list[str]:
    return [Path(s.name).relative_to(root).as_posix() for s in discover([str(root)], warnings)]


def test_files_come_in_path_order_not_string_order(tmp_path: Path) -> None:
    for relative in ("a-b/c.log", "a/b.log", "a.log", "a/attempt_0/3/stderr.log"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("step 1 loss 2.0\n")
    assert _names(tmp_path) == ["a/attempt_0/3/stderr.log", "a/b.log", "a-b/c.log", "a.log"]
    assert [s.rank for s in discover([str(tmp_path)])] == [3, None, None, None]


def test_dot_names_are_skipped_but_hidden_folders_are_entered(tmp_path: Path) -> None:
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "rank2.log").write_text("x\n")
    (tmp_path / ".dot.log").write_text("x\n")
    (tmp_path / "job.log").write_text("x\n")
    assert _names(tmp_path) == [".cache/rank2.log", "job.log"]


def test_links(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rank0.log").write_text("x\n")
    (tmp_path / "z.log").write_text("x\n")
    os.symlink(tmp_path / "z.log", tmp_path / "a-link.log")  # read under its own name, first
    os.symlink(tmp_path / "sub", tmp_path / "linked-folder")  # listed, not entered
    os.symlink(tmp_path / "missing", tmp_path / "broken.log")
    warnings: list[str] = []
    assert _names(tmp_path, warnings) == ["a-link.log", "sub/rank0.log"]
    assert warnings == [f"{tmp_path / 'broken.log'}: skipped, cannot read (broken symbolic link)"]


def test_sizes_binary_files_and_data_files(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"hello\n" * 3)
    (tmp_path / "core.log").write_bytes(b"\x7fELF" + bytes(64))
    (tmp_path / "w.json").write_text("{}")
    warnings: list[str] = []
    sources = discover([str(tmp_path)], warnings)
    assert [(Path(s.name).name, s.size) for s in sources] == [("a.log", 18)]
    assert warnings == [f"{tmp_path / 'core.log'}: skipped, looks like a binary file",
                        f"{tmp_path}: skipped 1 file(s) that are not logs (data or source code): w.json"]


def test_relative_roots_name_files_as_pathlib_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "rank1.log").write_text("x\n")
    monkeypatch.chdir(tmp_path)
    assert [s.name for s in discover(["logs/"])] == ["logs/rank1.log"]
    monkeypatch.chdir(tmp_path / "logs")
    assert [(s.name, s.path, s.rank) for s in discover(["."])] == [("rank1.log", Path("rank1.log"), 1)]


def test_a_folder_of_nothing_readable_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"\x00")
    with pytest.raises(InputError, match="holds no readable log files"):
        discover([str(tmp_path)])
