"""Turn what the user named (files, directories, '-', archives, uploaded bytes) into readable log sources.

A per-rank file carries its rank in its name or folder (`rank3.log`, `worker-3.log`,
torchrun `--log-dir` layout `attempt_0/3/stderr.log`, Open MPI `mpirun --output-filename DIR`
layout `DIR/<job>/rank.3/stderr`); that rank applies to every line of the file that does not
name its own. Other digits in a name (a job id, a Slurm array task
in `slurm-884412_5.out`) say nothing about ranks and are ignored.

Pipes, FIFOs and stdin are opened once and read from their first byte: the binary check
looks at the head of the stream as it passes, it does not consume it.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from traintriage.errors import BinaryInputError, InputError, UsageError

STDIN = "-"
_SNIFF_BYTES = 8192
ByteStream = io.BufferedIOBase | io.RawIOBase | BinaryIO
_COMPRESSED = frozenset({".gz", ".bz2", ".xz", ".lzma", ".zst"})
_BINARY_MAGIC = (b"\x7fELF", b"\x89PNG", b"PK\x03\x04", b"\x80\x02", b"\x80\x04", b"\x80\x05", b"\xff\xd8\xff",
                 b"GIF8", b"%PDF", b"\x93NUMPY", b"SQLite format 3", b"\xca\xfe\xba\xbe")
# Text-like control bytes: tab, newline, form feed, carriage return, escape (colours), and backspace, with which
# progress bars redraw in a terminal (Keras' Progbar writes `\b` times the previous width before each update).
_CONTROL = tuple(c for c in range(32) if c not in (8, 9, 10, 12, 13, 27))
_CONTROL_BYTES = bytes(_CONTROL)
# In a directory, files that are not logs: checkpoints and data, and source code (a job folder
# often holds the training script, whose error strings would read as failures).
_SKIPPED_SUFFIXES = frozenset({".json", ".pt", ".bin", ".safetensors", ".pkl", ".npy", ".png", ".jpg", ".pyc",
                               ".py", ".pyi", ".ipynb", ".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh"})

# Applied to a file's path relative to the directory named (or to its bare name): short strings.
_RANK_IN_NAME = (
    re.compile(r"(?:^|/)attempt_\d+/(\d{1,6})/(?:stdout|stderr)\.log$"),
    # Open MPI 4.x (ORTE iof_base_setup.c) writes `DIR/<local jobid>/rank.<N>/stdout|stderr`; Open MPI 5
    # (OpenPMIx pmix_iof.c) `DIR/<nspace>/rank.<N>/...`; `:nojobid` drops the job folder. N is zero-padded.
    re.compile(r"(?:^|/)rank\.(\d{1,6})/(?:stdout|stderr)$"),
    # `rank3.log`, `train_rank_3.stderr.log.gz`: after the number only the stream and the extensions, so a
    # combined log named for what one rank did (`hang-rank1-4procs.log`) is not read as that rank's own file
    re.compile(r"(?:^|[/_.-])(?:rank|worker|proc|process|task|local_rank)[-_.]?(\d{1,6})"
               r"(?:[._-](?:stdout|stderr|out|err|log|txt))*(?:\.(?:gz|bz2|xz|lzma|zst))?$", re.I),
)
_MAX_NAME = 4096


@dataclass(frozen=True)
class Source:
    """One log stream: its display name, where to read it (a file, stdin when path is None, or
    bytes held in memory), and the rank its name implies. `size` is None for a stream (pipe,
    FIFO, stdin), which can be read only once, from its first byte."""

    name: str
    path: Path | None
    rank: int | None = None
    size: int | None = None
    span: tuple[int, int] | None = None
    data: bytes | None = None

    @cached_property
    def splittable(self) -> bool:
        """Plain files can be read from any offset, so one huge file can be shared by workers.
        Kept once known: asked of each of 20,000 sources, pathlib's suffix was not free."""
        return (self.path is not None and self.size is not None and self.span is None
                and self.path.suffix.lower() not in _COMPRESSED)

    @property
    def is_stream(self) -> bool:
        """Read once, in this process: stdin, a pipe or FIFO, or bytes in memory."""
        return self.path is None or self.size is None

    def open(self) -> ByteStream:
        """Open the raw bytes, decompressing by suffix; a stream's head is checked for binary
        data as it is read."""
        if self.data is not None:
            return _decompressed(io.BytesIO(self.data), self.name)
        if self.path is None:
            return _HeadChecked(sys.stdin.buffer, self.name, close_raw=False)
        try:
            if self.span is not None:
                return _SpanReader(self.path, *self.span)
            if self.size is None:
                return _HeadChecked(open(self.path, "rb", buffering=0), self.name)  # noqa: SIM115
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


class _HeadChecked(io.RawIOBase):
    """A stream read once from its first byte; its first block is checked for binary data
    on the way through (a pipe cannot be sniffed first and reopened)."""

    def __init__(self, raw: BinaryIO | io.RawIOBase, name: str, *, close_raw: bool = True) -> None:
        super().__init__()
        self._raw = raw
        self._name = name
        self._close_raw = close_raw
        self._head: bytes | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, target: memoryview | bytearray) -> int:  # type: ignore[override]
        if self._head is None:
            self._head = _read_head(self._raw)
            if is_binary(self._head):
                raise BinaryInputError(f"{self._name}: looks like a binary file, not a text log")
        if self._head:
            count = min(len(target), len(self._head))
            target[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        return self._raw.readinto(target) or 0  # type: ignore[union-attr]

    def close(self) -> None:
        if self._close_raw:
            self._raw.close()
        super().close()


def _read_head(raw: BinaryIO | io.RawIOBase) -> bytes:
    """Up to _SNIFF_BYTES from a stream whose reads may return less (a pipe). An archive cut
    inside its head gives what decoded; one that decodes to nothing is an InputError."""
    parts: list[bytes] = []
    total = 0
    while total < _SNIFF_BYTES:
        try:
            block = raw.read(_SNIFF_BYTES - total)
        except EOFError as exc:
            if not total:
                raise InputError(f"cannot decompress: {exc}") from exc
            break
        if not block:
            break
        parts.append(block)
        total += len(block)
    return b"".join(parts)


def _decompressed(raw: BinaryIO | io.BufferedIOBase | io.RawIOBase, name: str) -> ByteStream:
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in _COMPRESSED:
        from traintriage.ingest.decompress import DecompressedReader  # most logs are plain text

        return DecompressedReader(raw, suffix)
    return raw


def _open_maybe_compressed(path: Path) -> ByteStream:
    if path.suffix.lower() in _COMPRESSED:
        return _decompressed(open(path, "rb"), path.name)  # noqa: SIM115 - closed with the reader
    return open(path, "rb", buffering=0)


def rank_from_path(relative: str) -> int | None:
    """The rank a per-rank file name implies, or None for a combined log."""
    normalized = relative.replace(os.sep, "/").replace("\\", "/")[-_MAX_NAME:]
    for pattern in _RANK_IN_NAME:
        match = pattern.search(normalized)
        if match:
            return int(match.group(1))
    return None


def discover(inputs: list[str], warnings: list[str] | None = None) -> list[Source]:
    """Expand the user's arguments into sources, in a stable order. What a directory holds
    but is not read (unreadable, binary, not a log) is noted in `warnings`."""
    if not inputs:
        raise UsageError("no input: name a log file, a directory, or '-' for stdin")
    notes = warnings if warnings is not None else []
    sources: list[Source] = []
    for item in inputs:
        if item == STDIN:
            sources.append(Source(name="<stdin>", path=None))
            continue
        path = Path(item)
        if path.is_dir():
            sources.extend(_discover_dir(path, notes))
        elif path.exists():
            if not os.access(path, os.R_OK):
                raise InputError(f"{item}: permission denied")
            mode = path.stat().st_mode
            if not stat.S_ISREG(mode):  # a pipe, FIFO, or device: read once, as a stream
                sources.append(Source(name=item, path=path, rank=rank_from_path(path.name), size=None))
                continue
            _reject_binary(path, item)
            sources.append(Source(name=item, path=path, rank=rank_from_path(path.name), size=path.stat().st_size))
        elif path.is_symlink():
            raise InputError(f"{item}: broken symbolic link")
        else:
            raise InputError(f"{item}: no such file or directory")
    return sources


def sources_from_bytes(items: list[tuple[str, bytes]]) -> list[Source]:
    """Sources held in memory (an upload): each (display name, raw bytes). The name's suffix
    says how to decompress; a per-rank name (`rank3.log`, `attempt_0/3/stderr.log`) keeps
    its rank. Binary content raises BinaryInputError; an empty or cut item is read and
    reported as a warning when scanned."""
    if not items:
        raise UsageError("no input: no logs given")
    sources: list[Source] = []
    for name, data in items:
        try:
            with _decompressed(io.BytesIO(data), name) as stream:
                head = _read_head(stream)  # type: ignore[arg-type]
        except InputError as exc:
            raise InputError(f"{name}: {exc}") from exc
        except Exception as exc:  # zlib.error, lzma.LZMAError, OSError, zstd's own error
            raise InputError(f"{name}: cannot decompress: {exc}") from exc
        if is_binary(head):
            raise BinaryInputError(f"{name}: looks like a binary file, not a text log")
        sources.append(Source(name=name, path=None, rank=rank_from_path(name), size=len(data), data=data))
    return sources


def _discover_dir(root: Path, warnings: list[str]) -> Iterator[Source]:
    """The files under `root` in path order, read the way `root.rglob("*")` lists them (hidden
    folders entered, linked folders listed but not entered), with one `scandir` per folder:
    pathlib's objects, resolve() and four stats per file were most of a 20,000-file fleet's
    discovery."""
    base = os.fspath(root)
    prefix = "" if base == "." else base if base.endswith("/") else base + "/"
    real_root = os.path.realpath(base).rstrip("/")
    found = False
    seen: set[str] = set()
    not_logs: list[str] = []
    for parts, entry in sorted(_walk(base, ()), key=lambda item: item[0]):
        relative = "/".join(parts)
        name = prefix + relative
        if entry.is_symlink() and not os.path.exists(name):
            warnings.append(f"{name}: skipped, cannot read (broken symbolic link)")
            continue
        if not _is_file(entry):
            continue
        if _suffix(parts[-1]).lower() in _SKIPPED_SUFFIXES:
            not_logs.append(relative)
            continue
        # A plain file in folders that are not links is its own real path; only a link needs resolving.
        real = os.path.realpath(name) if entry.is_symlink() else real_root + "/" + relative
        if real in seen:  # a link to a file already read
            continue
        seen.add(real)
        if not os.access(name, os.R_OK):
            warnings.append(f"{name}: skipped, cannot read (permission denied)")
            continue
        path = Path(name)
        problem, size = _sniff(path)
        if problem:
            warnings.append(f"{name}: skipped, {problem}")
            continue
        found = True
        yield Source(name=name, path=path, rank=rank_from_path(relative), size=size)
    if not_logs:
        shown = ", ".join(not_logs[:5]) + (f" and {len(not_logs) - 5} more" if len(not_logs) > 5 else "")
        warnings.append(f"{root}: skipped {len(not_logs)} file(s) that are not logs (data or source code): {shown}")
    if not found:
        raise InputError(f"{root}: directory holds no readable log files")


def _walk(folder: str, parts: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], os.DirEntry[str]]]:
    """(path parts below the root, entry) of every entry not named with a leading dot, in any
    order; a folder that cannot be listed is passed over, as pathlib's glob does."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except PermissionError:
        return
    for entry in entries:
        below = (*parts, entry.name)
        if not entry.name.startswith("."):
            yield below, entry
        try:
            is_folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_folder = False
        if is_folder:
            yield from _walk(entry.path, below)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _suffix(name: str) -> str:
    """`PurePath.suffix` of a bare name."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def _sniff(path: Path) -> tuple[str | None, int]:
    """Why a file in a directory is not read (None when it reads as text), and its size."""
    if path.suffix.lower() in _COMPRESSED:
        problem = _binary_or_unreadable(path)
        return problem, (0 if problem else path.stat().st_size)
    try:  # a plain file: one open, one read, one fstat (no file object)
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})", 0
    try:
        head = b""
        while len(head) < _SNIFF_BYTES:
            block = os.read(handle, _SNIFF_BYTES - len(head))
            if not block:
                break
            head += block
        size = os.fstat(handle).st_size
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})", 0
    finally:
        os.close(handle)
    return ("looks like a binary file" if is_binary(head) else None), size


def _binary_or_unreadable(path: Path) -> str | None:
    """Why a file in a directory is not read, or None when it reads as text."""
    try:
        with _open_maybe_compressed(path) as stream:
            head = _read_head(stream)  # type: ignore[arg-type]
    except InputError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    except Exception as exc:  # the decompressor's own error type
        return f"cannot decompress ({exc})"
    return "looks like a binary file" if is_binary(head) else None


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
    control = len(head) - len(head.translate(None, _CONTROL_BYTES))  # one pass, not one per byte value
    if control / len(head) > 0.3:
        return True
    if head.isascii():  # nothing to decode: most logs
        return False
    undecodable = head.decode("utf-8", "replace").count("\ufffd")
    return undecodable / len(head) > 0.3


def _reject_binary(path: Path, name: str) -> None:
    try:
        with _open_maybe_compressed(path) as stream:
            head = _read_head(stream)  # type: ignore[arg-type]
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from exc
    except Exception as exc:  # OSError, EOFError, or the decompressor's own error type
        raise InputError(f"{name}: cannot decompress: {exc}") from exc
    if is_binary(head):
        raise BinaryInputError(f"{name}: looks like a binary file, not a text log")
