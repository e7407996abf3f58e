"""Styled terminal output with rich; plain text when piped (same rows as render_text)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from traintriage.report.model import Diagnosis
from traintriage.report.render import LABEL_WIDTH, render_text, text_lines

_STYLES = {"Root cause": "bold red", "First failed": "bold", "Collateral": "yellow", "Fix": "green",
           "Verify": "cyan", "Status": "bold", "Anomaly": "magenta", "Warning": "yellow"}


def print_diagnosis(diagnosis: Diagnosis) -> None:
    if not sys.stdout.isatty():
        sys.stdout.write(render_text(diagnosis))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=False)
    for label, text in text_lines(diagnosis):
        line = Text(f"{label:<{LABEL_WIDTH}}", style=_STYLES.get(label, "bold dim"))
        line.append(text)
        console.print(line)


PROGRESS_ABOVE = 64 << 20


@contextmanager
def scan_progress(total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr for long scans; silent when stderr is not a terminal."""
    if total < PROGRESS_ABOVE or not sys.stderr.isatty():
        yield lambda _: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    columns = ("scanning", BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("scan", total=total)
        yield lambda done: progress.advance(task, done)
