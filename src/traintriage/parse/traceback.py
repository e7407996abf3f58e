"""Python tracebacks: the exception that ended the run and the user's own frame.

A chained traceback ("The above exception was the direct cause of the following
exception") prints the cause first; the last block is what was raised, the first
is usually what went wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
# Frames not of the user: installed packages, the standard library, frozen modules, and Cython
# sources and includes (`h5py/h5f.pyx`, `pyarrow/error.pxi`: a compiled extension, printed with a
# relative path).
_LIBRARY_PATH = re.compile(
    r"(?:site-packages|dist-packages|/lib/python\d[\d.]*/|^<frozen |/torch/|/conda/lib/|/bin/[\w.-]+$|\.(?:pyx|pxi)$)"
)
TRACEBACK_HEADER = "Traceback (most recent call last)"
_CHAIN = ("The above exception was the direct cause", "During handling of the above exception")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    code: str = ""
    """The source line Python printed under the frame (empty when the paste has none)."""

    @property
    def is_user_code(self) -> bool:
        return not _LIBRARY_PATH.search(self.file) and not self.file.startswith("<")


@dataclass(frozen=True)
class Traceback:
    frames: list[Frame]
    exception: str
    chained_from: str | None = None

    @property
    def user_frame(self) -> Frame | None:
        user = [f for f in self.frames if f.is_user_code]
        return user[-1] if user else None


def parse_traceback(lines: list[str], exception_line: str) -> Traceback | None:
    """The traceback that ends at `exception_line`, from the lines printed before it."""
    start = None
    for index in range(len(lines) - 1, -1, -1):
        if TRACEBACK_HEADER in lines[index]:
            start = index
            break
    if start is None:
        return None
    frames = []
    body = lines[start + 1 :]
    for index, text in enumerate(body):
        match = _FRAME.match(text)
        if match:
            following = body[index + 1].strip() if index + 1 < len(body) else ""
            code = "" if _FRAME.match(following) else following
            frames.append(Frame(file=match.group(1), line=int(match.group(2)), function=match.group(3), code=code))
    chained_from = None
    for index in range(start - 1, max(start - 4, -1), -1):
        if any(marker in lines[index] for marker in _CHAIN):
            chained_from = _previous_exception(lines[:index])
            break
    return Traceback(frames=frames, exception=exception_line.strip(), chained_from=chained_from)


def _previous_exception(lines: list[str]) -> str | None:
    for text in reversed(lines):
        stripped = text.strip()
        if stripped and not stripped.startswith(("File ", "^", "~")) and ":" in stripped:
            return stripped
    return None
