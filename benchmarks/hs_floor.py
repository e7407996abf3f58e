"""The matcher's floor: one Hyperscan pass of traintriage's own compiled database over the
input, on all cores, 4 MB windows, a match handler that does nothing. No masking, no line
numbers, no parsing: what any design that runs these patterns through Hyperscan must pay.

usage: hs_floor.py PATH   (a file, split into one byte range per core, or a directory)
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from traintriage.match.compiler import load_scanner

WINDOW = 4 << 20


def _ignore(*_: object) -> None:
    return None


def scan_ranges(jobs: list[tuple[str, int, int]]) -> int:
    """Scan each (file, start, end) range window by window; returns the bytes scanned."""
    scanner = load_scanner()
    scratch = scanner.scratch()
    buffer = bytearray(WINDOW)
    scanned = 0
    for name, start, end in jobs:
        with open(name, "rb", buffering=0) as handle:
            handle.seek(start)
            while start < end:
                read = handle.readinto(memoryview(buffer)[: min(WINDOW, end - start)])
                if not read:
                    break
                scanner.database.scan(bytes(memoryview(buffer)[:read]), match_event_handler=_ignore, scratch=scratch)
                start += read
                scanned += read
    return scanned


def plan(path: Path, workers: int) -> list[list[tuple[str, int, int]]]:
    """Byte ranges per worker: a file cut into equal shares, a directory's files dealt round-robin."""
    if path.is_dir():
        files = sorted(str(p) for p in path.rglob("*") if p.is_file())
        return [[(f, 0, os.path.getsize(f)) for f in files[i::workers]] for i in range(workers)]
    size = path.stat().st_size
    cuts = [size * i // workers for i in range(workers + 1)]
    return [[(str(path), cuts[i], cuts[i + 1])] for i in range(workers)]


def main() -> None:
    path = Path(sys.argv[1])
    load_scanner()  # compiled or loaded once; the workers inherit it through fork
    workers = os.cpu_count() or 1
    with ProcessPoolExecutor(workers) as pool:
        total = sum(pool.map(scan_ranges, plan(path, workers)))
    print(total)


if __name__ == "__main__":
    main()
