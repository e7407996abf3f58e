"""Scan on all cores: several sources in a process pool, one huge file split at line breaks.

Workers inherit the compiled scanner through fork, so nothing is compiled twice.
The pieces of a split file are merged back in order, with line numbers shifted by
the lines of the pieces before them.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from traintriage.ingest.sources import Source
from traintriage.match.compiler import load_scanner
from traintriage.match.scan import SourceScan, scan_source

MIN_BYTES_FOR_PROCESSES = 64 << 20
MIN_SPLIT_BYTES = 128 << 20


def _scan_one(job: tuple[int, Source]) -> SourceScan:
    index, source = job
    return scan_source(index, source, load_scanner())


def split_points(source: Source, pieces: int) -> list[tuple[int, int]]:
    """Byte spans of about equal size, each starting right after a newline."""
    assert source.path is not None and source.size is not None
    size = source.size
    cuts = [0]
    with open(source.path, "rb") as handle:
        for number in range(1, pieces):
            handle.seek(max(cuts[-1], size * number // pieces))
            handle.readline()
            position = handle.tell()
            if position >= size:
                break
            if position > cuts[-1]:
                cuts.append(position)
    cuts.append(size)
    return list(zip(cuts, cuts[1:], strict=False))


def merge(index: int, parts: list[SourceScan]) -> SourceScan:
    merged = SourceScan(source=index)
    for part in parts:
        shift = merged.lines
        for hit in part.hits:
            hit.line += shift
            hit.source = index
            merged.hits.append(hit)
        merged.metrics.extend(replace(p, line=p.line + shift, source=index) for p in part.metrics)
        for pattern, count in part.counts.items():
            merged.counts[pattern] += count
        merged.lines += part.lines
        merged.bytes += part.bytes
        merged.problems.extend(part.problems)
        merged.tail = part.tail or merged.tail
    return merged


def scan_sources(sources: list[Source], jobs: int | None = None) -> list[SourceScan]:
    """In-process for small inputs (process start-up would dominate), else a process pool."""
    workers = jobs or os.cpu_count() or 1
    total = sum(s.size or 0 for s in sources)
    scanner = load_scanner()
    if workers <= 1 or total < MIN_BYTES_FOR_PROCESSES or any(s.path is None for s in sources):
        return [scan_source(i, s, scanner) for i, s in enumerate(sources)]
    jobs_list: list[tuple[int, Source]] = []
    for index, source in enumerate(sources):
        if source.splittable and (source.size or 0) >= MIN_SPLIT_BYTES and len(sources) < workers:
            for span in split_points(source, workers):
                jobs_list.append((index, replace(source, span=span)))
        else:
            jobs_list.append((index, source))
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs_list)), mp_context=context) as pool:
        results = list(pool.map(_scan_one, jobs_list, chunksize=max(1, len(jobs_list) // (workers * 4))))
    grouped: dict[int, list[SourceScan]] = {}
    for (index, _), result in zip(jobs_list, results, strict=True):
        grouped.setdefault(index, []).append(result)
    return [merge(index, parts) if len(parts) > 1 else parts[0] for index, parts in sorted(grouped.items())]
