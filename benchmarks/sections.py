"""Each benchmark owns a section of benchmarks/RESULTS.md between its own markers, so that
`make bench` and `make bench-serve` can be run in any order without erasing each other."""

from __future__ import annotations

from pathlib import Path


def write_section(results: Path, name: str, body: str) -> None:
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    section = f"{begin}\n{body.rstrip()}\n{end}"
    text = results.read_text() if results.exists() else "# Benchmark results\n"
    if begin in text and end in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    results.write_text(text)
