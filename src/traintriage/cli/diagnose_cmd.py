"""`traintriage diagnose`: run the engine on the paths and print the diagnosis.

A plain function, so that both the typer command and the entry point's fast path
(`cli/entry.py`) run exactly the same code.
"""

from __future__ import annotations

import sys
from enum import Enum


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def with_warnings(markdown: str, warnings: list[str]) -> str:
    """The Markdown report with a Warnings section (what was not read), unless it has one."""
    if not warnings or "### Warnings" in markdown:
        return markdown
    return markdown.rstrip("\n") + "\n\n### Warnings\n\n" + "".join(f"- {w}\n" for w in warnings)


def diagnose_command(paths: list[str], output_format: OutputFormat, mask: bool, jobs: int | None) -> int:
    """Diagnose, print in the chosen format, warnings on stderr; the exit status of OUTPUT.md."""
    from traintriage.cli.terminal import scan_progress
    from traintriage.pipeline import diagnose
    from traintriage.report.render import render_json, render_markdown

    diagnosis = diagnose(paths, mask=mask, jobs=jobs, progress=scan_progress)
    if output_format is OutputFormat.json:
        write(render_json(diagnosis))
    elif output_format is OutputFormat.markdown:
        write(with_warnings(render_markdown(diagnosis), diagnosis.warnings))
    else:
        from traintriage.cli.terminal import print_diagnosis

        print_diagnosis(diagnosis)
    for warning in diagnosis.warnings:
        print(f"traintriage: warning: {warning}", file=sys.stderr)
    return diagnosis.exit_code
