"""Python tracebacks: the exception that ended the run and the user's own frame.

A chained traceback ("The above exception was the direct cause of the following
exception") prints the cause first; the last block is what was raised, the first
is usually what went wrong.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass

_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
# Frames not of the user: installed packages, the standard library, frozen modules, and (below)
# Cython sources and includes.
_LIBRARY_PATH = re.compile(
    r"(?:site-packages|dist-packages|/lib/python\d[\d.]*/|^<frozen |/torch/|/conda/lib/|/bin/[\w.-]+$)"
)
_CYTHON_SUFFIXES = (".pyx", ".pxi")
# IPython's (Jupyter, Colab) frames: a header naming the file, then source lines with the current
# one marked by an arrow (`----> 6 clf.fit(X)`, `-> 5487     return ...`). IPython <= 7 prints
# `<ipython-input-7-5527dad455e1> in <module>()` (7.x: `in <module>`, no brackets) or `/path/generic.py in __getattr__(self, name)`
# (Colab wraps the path as a link, `[/path/generic.py](https://localhost:8080/#) in ...`); 8.x prints
# `Cell In[3], line 5` (8.0-8.4: `Input In [3], in <cell line: 5>()`) and `File /path/x.py:70, in f(...)`.
_IPYTHON_FRAME = re.compile(
    r"^\s*\[?(<ipython-input-[\w-]{1,80}>|(?:[A-Za-z]:)?[~/\\][^\s\]\[]{0,400}?\.py)\]?(?:\([^)\s]{0,200}\))? in "
    r"(?:([\w<>.]{1,200})\(|(<module>)\s*$)"
)
_IPYTHON_FILE_FRAME = re.compile(r"^\s*File ((?:[A-Za-z]:)?[~/\\]\S{0,400}?\.py):(\d+), in ([^\s(]{1,200})")
_IPYTHON_CELL = re.compile(r"^\s*(?:Cell In ?\[(\d+)\], line (\d+)|Input In \[(\d+)\], in <cell line: (\d+)>)")
_IPYTHON_ARROW = re.compile(r"^\s*-*-> ?(\d+) ?(.*)$")
# rich's tracebacks (rich.traceback.install(), Typer, RichHandler): a box whose top border holds the header,
# one `│ <file>:<line> in <function>` line a frame, then its source with the current line marked `❱`
# (rich/traceback.py Traceback._render_stack).
_RICH_FRAME = re.compile(r"^\s*│ ((?:[A-Za-z]:)?[^\s│:][^│]{0,400}?):(\d+) in(?: ([\w<>.]{1,200}))?\s*│?\s*$")
_RICH_WRAPPED_NAME = re.compile(r"^\s*│ ([\w<>.]{1,200})\s*│?\s*$")  # a long path pushes the name onto the next line
_RICH_ARROW = re.compile(r"^\s*│ ❱ *(\d+) │(.*?)│?\s*$")
# A script that does not compile: Python prints the file and line (no `, in <function>`), the source
# line, a caret and the error, with no traceback header (the failing module is the script itself).
_COMPILE_ERROR = re.compile(r"^\s*(?:\w{1,40}\.)?(?:SyntaxError|IndentationError|TabError): ")
_COMPILE_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)\s*$')
COMPILE_FRAME_REACH = 6
TRACEBACK_HEADER = "Traceback (most recent call"
"""What every header of a Python traceback starts with: Python's `... call last):`, and Sacred's own
`Traceback (most recent calls WITHOUT Sacred internals):` (experiments run by Sacred print that one)."""
_CHAIN = ("The above exception was the direct cause", "During handling of the above exception")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    code: str = ""
    """The source line Python printed under the frame (empty when the paste has none)."""

    @property
    def is_compiled_extension(self) -> bool:
        """A Cython source or include (`h5py/h5f.pyx`, `pyarrow/error.pxi`): a compiled package's
        own code, printed with a relative path like a script's."""
        return self.file.endswith(_CYTHON_SUFFIXES)

    @property
    def is_windows_stdlib(self) -> bool:
        """A module of the standard library in a Windows install, which keeps it straight under the
        prefix's `Lib` folder (`C:\\...\\Anaconda3\\lib\\multiprocessing\\reduction.py`), not under
        `lib/pythonX.Y/` as on POSIX."""
        at = self.file.lower().rfind("\\lib\\")
        if at < 0:
            return False
        top = self.file[at + 5 :].split("\\", 1)[0]
        return top.removesuffix(".py") in sys.stdlib_module_names

    @property
    def is_user_code(self) -> bool:
        return not (_LIBRARY_PATH.search(self.file) or self.file.startswith("<") or self.is_compiled_extension
                    or self.is_windows_stdlib)


@dataclass(frozen=True)
class Traceback:
    frames: list[Frame]
    exception: str
    chained_from: str | None = None

    @property
    def user_frame(self) -> Frame | None:
        user = [f for f in self.frames if f.is_user_code]
        return user[-1] if user else None


def is_frame_line(text: str) -> bool:
    """A traceback's `File "...", line N, in f` line (leading blanks allowed)."""
    return _FRAME.match(text) is not None


def parse_traceback(lines: list[str], exception_line: str) -> Traceback | None:
    """The traceback that ends at `exception_line`, from the lines printed before it."""
    start = None
    for index in range(len(lines) - 1, -1, -1):
        if TRACEBACK_HEADER in lines[index]:
            start = index
            break
    if start is None:
        return _compile_error(lines, exception_line)
    body = lines[start + 1 :]
    frames = python_frames(body) or _ipython_frames(body) or _rich_frames(body)
    chained_from = None
    for index in range(start - 1, max(start - 4, -1), -1):
        if any(marker in lines[index] for marker in _CHAIN):
            chained_from = _previous_exception(lines[:index])
            break
    return Traceback(frames=frames, exception=exception_line.strip(), chained_from=chained_from)


_ESCAPED_HEADER = TRACEBACK_HEADER + " last):\\n"  # Python's own header, as a JSON string escapes it
_JSON_STRING_BODY = re.compile(r'(?:[^"\\]|\\.){0,65536}')
"""The rest of a JSON string up to its closing quote: escapes are skipped whole, so `\\"` does not end it."""


def escaped_traceback(line: str) -> Traceback | None:
    """A traceback a structured logger wrote into one JSON string (python-json-logger's or structlog's
    `exc_info`, loguru's `serialize=True`): `"Traceback (most recent call last):\\n  File ...\\nKeyError: 'x'"`
    on the record's own line, decoded and parsed as the lines Python printed."""
    at = line.find(_ESCAPED_HEADER)
    if at < 0:
        return None
    body = _JSON_STRING_BODY.match(line, at)
    try:
        text = json.loads('"' + (body.group(0) if body else "") + '"')
    except ValueError:
        return None
    lines = [row for row in text.splitlines() if row.strip()]
    return parse_traceback(lines[:-1], lines[-1]) if len(lines) > 1 else None


def _compile_error(lines: list[str], exception_line: str) -> Traceback | None:
    """The one frame of a script that did not compile: its `File "x.py", line N` a few lines up."""
    if not _COMPILE_ERROR.match(exception_line):
        return None
    for index in range(len(lines) - 1, max(len(lines) - 1 - COMPILE_FRAME_REACH, -1), -1):
        found = _COMPILE_FRAME.match(lines[index])
        if found:
            code = lines[index + 1].strip() if index + 1 < len(lines) else ""
            frame = Frame(file=found.group(1), line=int(found.group(2)), function="<module>", code=code)
            return Traceback(frames=[frame], exception=exception_line.strip())
    return None


def python_frames(body: list[str]) -> list[Frame]:
    """The `File "...", line N, in f` frames among `body`, with the code line under each."""
    frames = []
    for index, text in enumerate(body):
        match = _FRAME.match(text)
        if match:
            following = body[index + 1].strip() if index + 1 < len(body) else ""
            code = "" if _FRAME.match(following) else following
            frames.append(Frame(file=match.group(1), line=int(match.group(2)), function=match.group(3), code=code))
    return frames


def _ipython_frames(body: list[str]) -> list[Frame]:
    """IPython's frames: each header, with the line and code its arrow marks (a header whose
    arrow line the paste lost keeps the header's line number and no code)."""
    frames: list[Frame] = []
    pending: Frame | None = None
    for text in body:
        header = _ipython_header(text)
        if header is not None:
            if pending is not None:
                frames.append(pending)
            pending = header
            continue
        arrow = _IPYTHON_ARROW.match(text)
        if arrow and pending is not None and not pending.code:
            pending = Frame(pending.file, int(arrow.group(1)), pending.function, arrow.group(2).strip())
    if pending is not None:
        frames.append(pending)
    return frames


def _rich_frames(body: list[str]) -> list[Frame]:
    """rich's frames, each with the code line its `❱` marks."""
    frames: list[Frame] = []
    for index, text in enumerate(body):
        header = _RICH_FRAME.match(text)
        if header:
            name = header.group(3)
            wrapped = _RICH_WRAPPED_NAME.match(body[index + 1]) if name is None and index + 1 < len(body) else None
            frames.append(Frame(file=header.group(1), line=int(header.group(2)),
                                function=name or (wrapped.group(1) if wrapped else "?")))
            continue
        arrow = _RICH_ARROW.match(text)
        if arrow and frames and not frames[-1].code:
            last = frames[-1]
            frames[-1] = Frame(last.file, last.line, last.function, arrow.group(2).strip())
    return frames


def _ipython_header(text: str) -> Frame | None:
    cell = _IPYTHON_CELL.match(text)
    if cell:
        number, line = (cell.group(1), cell.group(2)) if cell.group(1) else (cell.group(3), cell.group(4))
        return Frame(file=f"Cell In[{number}]", line=int(line), function="<cell>")
    found = _IPYTHON_FILE_FRAME.match(text)
    if found:
        return Frame(file=found.group(1), line=int(found.group(2)), function=found.group(3))
    found = _IPYTHON_FRAME.match(text)
    if found:
        return Frame(file=found.group(1).strip("<>"), line=0, function=found.group(2) or found.group(3))
    return None


def _previous_exception(lines: list[str]) -> str | None:
    for text in reversed(lines):
        stripped = text.strip()
        if stripped and not stripped.startswith(("File ", "^", "~")) and ":" in stripped:
            return stripped
    return None
