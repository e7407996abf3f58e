"""`make bench-patterns`: which scanner patterns slow the scan down, on the bench workload.

Hyperscan's cost is not the sum of its patterns: a few patterns whose first literal is
common in training logs (a digit run before `+cpu`, `loss` before `nan`) cost as much as
hundreds of others. This scans 32 MB of the generated console log with the whole database,
then with the costliest patterns (timed alone) removed one by one, and prints what each
removal saved. A pattern listed with a large saving wants rewriting: bounded repeats before
its distinctive literal, or a rare literal first and a `confirm` check in Python.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import hyperscan

from traintriage.match.compiler import PatternInfo, load_scanner, split_flags

HERE = Path(__file__).resolve().parent
SAMPLE_BYTES = 32 << 20
CANDIDATES = 25


def scan_seconds(patterns: list[PatternInfo], data: bytes, repeat: int = 5) -> float:
    """Best of `repeat` scans of `data` with a database of `patterns`."""
    bodies, flags = zip(*(split_flags(p.regex) for p in patterns), strict=True)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=[b.encode() for b in bodies], ids=list(range(len(patterns))),
                     elements=len(patterns), flags=list(flags))
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        database.scan(data, match_event_handler=lambda *_: None)
        best = min(best, time.perf_counter() - started)
    return best


def label(info: PatternInfo) -> str:
    owner = info.entry_id or (info.internal.value if info.internal else info.kind.value)
    return f"{owner}: {info.regex[:90]}"


def main() -> None:
    logs = sorted((HERE / "work").glob("console-64rank-*MB.log"), key=lambda p: p.stat().st_size)
    if not logs:
        sys.exit("no workload: run `make bench` once to generate benchmarks/work/")
    with logs[0].open("rb") as handle:
        data = handle.read(SAMPLE_BYTES)
    table = load_scanner().table
    whole = scan_seconds(table, data)
    mb = len(data) / (1 << 20)
    print(f"{len(table)} patterns on {mb:.0f} MB of {logs[0].name}: {whole * 1000:.1f} ms ({mb / whole:.0f} MB/s)")
    alone = sorted(range(len(table)), key=lambda i: scan_seconds([table[i]], data, 1), reverse=True)
    kept = set(range(len(table)))
    before = whole
    print("saving  then   pattern (removed cumulatively, costliest alone first)")
    for index in alone[:CANDIDATES]:
        kept.discard(index)
        after = scan_seconds([table[i] for i in sorted(kept)], data)
        print(f"{(before - after) * 1000:+6.1f}  {after * 1000:5.1f}  {label(table[index])}")
        before = after


if __name__ == "__main__":
    main()
