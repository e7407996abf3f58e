"""``traintriage mask [FILE...|-]``: print a log with its secrets and personal data masked.

Output has the same lines as the input, only the sensitive spans replaced, so the masked
log can be shared in an issue or attached to a ticket. Each file gets its own numbering.
Exit codes: 0 ok, 65 a binary input, 66 a missing or unreadable input (others still run),
74 an output error, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from traintriage.errors import BinaryInputError, InputError, TraintriageError
from traintriage.ingest.mask import mask_stream
from traintriage.ingest.sources import STDIN, Source, discover, is_binary

_SNIFF_BYTES = 8192
EXIT_OK = 0
EXIT_NO_INPUT = 66
EXIT_IO = 74
EXIT_INTERRUPTED = 130


class _OutputError(Exception):
    """Writing the masked log failed (disk full, closed terminal): not the input's fault."""


class _Output:
    """stdout that tells its own write failures apart from the input's read failures."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def write(self, data: bytes) -> int:
        try:
            return self._raw.write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputError(exc.strerror or str(exc)) from exc

    def flush(self) -> None:
        self._raw.flush()


class _Sniffed:
    """A binary stream whose first bytes were already read to check it is text."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            return head
        return self._rest.read(size)

    def readinto(self, target: memoryview) -> int:
        """Fill a caller's buffer: the masker reuses one buffer instead of a new block per read."""
        if self._head:
            count = min(len(target), len(self._head))
            target[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        readinto = getattr(self._rest, "readinto", None)
        if readinto is None:
            block = self._rest.read(len(target))
            target[: len(block)] = block
            return len(block)
        return readinto(target) or 0


def mask_command(paths: list[str]) -> int:
    """Mask each path (``-`` is stdin) to stdout; return the worst exit code met."""
    out = _Output(sys.stdout.buffer)
    status = EXIT_OK
    for item in paths or [STDIN]:
        try:
            warnings: list[str] = []
            sources = discover([item], warnings)
            for warning in warnings:
                _error(f"warning: {warning}")
            for source in sources:
                _mask_source(source, out)
        except BrokenPipeError:
            _silence_stdout()
            return status
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        except _OutputError as exc:
            _error(f"cannot write output: {exc}")
            return EXIT_IO
        except TraintriageError as exc:
            _error(str(exc))
            status = max(status, exc.exit_code)
        except OSError as exc:
            _error(f"{item}: cannot read: {exc.strerror or exc}")
            status = max(status, EXIT_NO_INPUT)
        except Exception as exc:  # decompressors raise their own types; never show a traceback
            _error(f"{item}: cannot read: {_first_line(exc)}")
            status = max(status, EXIT_NO_INPUT)
    try:
        out.flush()
    except BrokenPipeError:
        _silence_stdout()
    return status


def _mask_source(source: Source, out: _Output) -> None:
    stream = source.open()
    try:
        head = stream.read(_SNIFF_BYTES)
        if is_binary(head):
            raise BinaryInputError(f"{source.name}: looks like a binary file, not a text log")
        mask_stream(_Sniffed(head, stream), out)  # type: ignore[arg-type]
    except (EOFError, ValueError) as exc:
        raise InputError(f"{source.name}: input ends early: {_first_line(exc)}") from exc
    finally:
        stream.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _error(message: str) -> None:
    print(f"traintriage mask: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    """After a closed pipe (``| head``), keep Python from complaining at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: list[str] | None = None) -> int:
    """``python -m traintriage.cli.mask_cmd [FILE...|-]`` until the typer CLI wires it."""
    args = sys.argv[1:] if argv is None else argv
    return mask_command(args)


if __name__ == "__main__":
    sys.exit(main())
