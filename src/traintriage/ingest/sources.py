"""Turn what the user named (files, directories, '-', archives) into readable log sources.

A per-rank file carries its rank in its name or folder (`rank3.log`, `worker-3.log`,
torchrun `--log-dir` layout `attempt_0/3/stderr.log`, SLURM `%t` outputs); that rank
applies to every line of the file that does not name its own.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from traintriage.errors import BinaryInputError, InputError, UsageError

STDIN = "-"
_SNIFF_BYTES = 8192
ByteStream = io.BufferedIOBase | io.RawIOBase | BinaryIO
_COMPRESSED = frozenset({".gz", ".bz2", ".xz", ".lzma", ".zst"})
_BINARY_MAGIC = (b"\x7fELF", b"\x89PNG", b"PK\x03\x04", b"\x80\x02", b"\x80\x04", b"\x80\x05", b"\xff\xd8\xff",
                 b"GIF8", b"%PDF", b"\x93NUMPY", b"SQLite format 3", b"\xca\xfe\xba\xbe")
_CONTROL = tuple(c for c in range(32) if c not in (9, 10, 12, 13, 27))
# In a directory, files that are not logs: checkpoints and data, and source code (a job folder
# often holds the training script, whose error strings would read as failures).
_SKIPPED_SUFFIXES = frozenset({".json", ".pt", ".bin", ".safetensors", ".pkl", ".npy", ".png", ".jpg", ".pyc",
                               ".py", ".pyi", ".ipynb", ".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh"})

_RANK_IN_NAME = (
    re.compile(r"attempt_\d+/(\d+)/(?:stdout|stderr)\.log$"),
    re.compile(r"(?:^|[/_.-])(?:rank|worker|proc|process|task|local_rank)[-_.]?(\d+)(?:[._-][^/]*)?$", re.I),
    re.compile(r"(?:^|[/_.-])\d{3,}[-_.](\d{1,5})\.(?:out|err|log|txt)$"),
)


@dataclass(frozen=True)
class Source:
    """One log stream: its display name, where to read it, and the rank its name implies."""

    name: str
    path: Path | None
    rank: int | None = None
    size: int | None = None
    span: tuple[int, int] | None = None

    @property
    def splittable(self) -> bool:
        """Plain files can be read from any offset, so one huge file can be shared by workers."""
        return self.path is not None and self.path.suffix.lower() not in _COMPRESSED and self.span is None

    def open(self) -> ByteStream:
        """Open the raw bytes, decompressing by suffix; stdin when path is None."""
        if self.path is None:
            return sys.stdin.buffer
        try:
            if self.span is not None:
                return _SpanReader(self.path, *self.span)
            return _open_maybe_compressed(self.path)
        except OSError as exc:
            raise InputError(f"{self.name}: cannot read: {exc.strerror or exc}") from exc


class _SpanReader(io.RawIOBase):
    """Bytes [start, end) of a file: one worker's share of a large log."""

    def __init__(self, path: Path, start: int, end: int) -> None:
        super().__init__()
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        self._file.seek(start)
        self._left = end - start

    def readinto(self, target: memoryview | bytearray) -> int:  # type: ignore[override]
        size = min(len(target), max(self._left, 0))
        if size == 0:
            return 0
        with memoryview(target) as view:
            count = self._file.readinto(view[:size]) or 0
        self._left -= count
        return count

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._file.close()
        super().close()


def _open_maybe_compressed(path: Path) -> ByteStream:
    suffix = path.suffix.lower()
    # Decompressors are imported when a compressed file is met: most logs are plain text.
    if suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")
    if suffix == ".bz2":
        import bz2

        return bz2.open(path, "rb")
    if suffix in (".xz", ".lzma"):
        import lzma

        return lzma.open(path, "rb")
    if suffix == ".zst":
        import zstandard

        reader: ByteStream = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)  # noqa: SIM115
        return reader
    return open(path, "rb", buffering=0)


def rank_from_path(relative: str) -> int | None:
    """The rank a per-rank file name implies, or None for a combined log."""
    normalized = relative.replace(os.sep, "/")
    for pattern in _RANK_IN_NAME:
        match = pattern.search(normalized)
        if match:
            return int(match.group(1))
    return None


def discover(inputs: list[str]) -> list[Source]:
    """Expand the user's arguments into sources, in a stable order."""
    if not inputs:
        raise UsageError("no input: name a log file, a directory, or '-' for stdin")
    sources: list[Source] = []
    for item in inputs:
        if item == STDIN:
            sources.append(Source(name="<stdin>", path=None))
            continue
        path = Path(item)
        if path.is_dir():
            sources.extend(_discover_dir(path))
        elif path.exists():
            if not os.access(path, os.R_OK):
                raise InputError(f"{item}: permission denied")
            _reject_binary(path, item)
            sources.append(Source(name=item, path=path, rank=rank_from_path(path.name), size=path.stat().st_size))
        else:
            raise InputError(f"{item}: no such file or directory")
    return sources


def _discover_dir(root: Path) -> Iterator[Source]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    found = False
    for path in files:
        if path.suffix.lower() in _SKIPPED_SUFFIXES or path.is_symlink():
            continue
        relative = path.relative_to(root).as_posix()
        if _looks_binary(path):
            continue
        found = True
        yield Source(name=str(path), path=path, rank=rank_from_path(relative), size=path.stat().st_size)
    if not found:
        raise InputError(f"{root}: directory holds no readable log files")


def _looks_binary(path: Path) -> bool:
    try:
        with _open_maybe_compressed(path) as stream:
            head = stream.read(_SNIFF_BYTES)
    except Exception:  # OSError, EOFError, or the decompressor's own error type
        return True
    return is_binary(head)


def is_binary(head: bytes) -> bool:
    """Known binary formats by magic number, or a first block mostly of control bytes or of
    bytes that are not UTF-8 (compressed or random data).

    A few NUL bytes do not make a log binary: a node that crashed mid-write often leaves
    runs of NULs in its log, and that log is exactly what the user needs diagnosed.
    """
    if head.startswith(_BINARY_MAGIC):
        return True
    if not head:
        return False
    control = sum(head.count(bytes([c])) for c in _CONTROL)
    if control / len(head) > 0.3:
        return True
    undecodable = head.decode("utf-8", "replace").count("\ufffd")
    return undecodable / len(head) > 0.3


def _reject_binary(path: Path, name: str) -> None:
    try:
        with _open_maybe_compressed(path) as stream:
            head = stream.read(_SNIFF_BYTES)
    except Exception as exc:  # OSError, EOFError, or the decompressor's own error type
        raise InputError(f"{name}: cannot decompress: {exc}") from exc
    if is_binary(head):
        raise BinaryInputError(f"{name}: looks like a binary file, not a text log")
