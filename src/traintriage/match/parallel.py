"""Scan on all cores: several sources in a process pool, one huge file split at line breaks.

Workers inherit the compiled scanner through fork, so nothing is compiled twice.
The pieces of a split file are merged back in order, with line numbers shifted by
the lines of the pieces before them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import replace

from traintriage.ingest.sources import Source
from traintriage.match.compiler import load_scanner
from traintriage.match.scan import SourceScan, Tail, scan_source

MIN_BYTES_FOR_PROCESSES = 64 << 20
MIN_SPLIT_BYTES = 128 << 20
TOTAL_METRIC_POINTS = 8_000
MIN_METRIC_POINTS = 1
MAX_JOBS_PER_TASK = 128
"""Sources a worker scans before it sends their results back: a worker held and pickled
2,500 small sources' scans at once on a fleet of 20,000 logs (the tree's peak memory). At 128
the tree's peak is the same as at 16 (186 MB on the bench's fleet) and the run 9% shorter, with
a tenth less CPU time: fewer round trips to the parent, which shares the two cores."""


Job = tuple[int, Source, bytes | None, int]


def _scan_one(job: Job) -> SourceScan:
    """In a worker: the scan, its tail packed for the trip back (see `Tail`)."""
    index, source, mask_key, budget = job
    scan = scan_source(index, source, load_scanner(), mask_key, metric_budget=budget)
    scan.tail = Tail(list(scan.tail))
    return scan


def keep_freed_buffers() -> None:
    """Ask glibc to keep freed multi-megabyte blocks for reuse instead of unmapping them.

    Every chunk is a fresh 4 MB object; by default glibc maps and unmaps each one, and the
    page faults on fresh pages cost ~0.2 s per GB scanned (measured: 105k minor faults per GB,
    10k with this). mallopt(3): M_MMAP_THRESHOLD=-3, M_TRIM_THRESHOLD=-1. Called in our own
    worker processes only: a library must not retune its caller's allocator. No-op off glibc.
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 64 << 20)
        libc.mallopt(-1, 256 << 20)
    except (OSError, AttributeError):
        pass


def metric_budgets(sources: list[Source]) -> list[int]:
    """Curve points per scan job: the run keeps about TOTAL_METRIC_POINTS, shared by size
    (a source of unknown size gets an even share). Each job gets at least MIN_METRIC_POINTS
    (a small log beside a big one keeps its first loss) while there are fewer jobs than
    points; past that (a fleet of 20,000 small logs), the points go to evenly spaced jobs.
    Every point costs a parse in Python (~25 us) and a place in the curves the parent
    analyses: a point per log of such a fleet was a fifth of its run time."""
    sizes = [_bytes_to_read(s) for s in sources]
    total = sum(size or 0 for size in sizes) or 1
    even = TOTAL_METRIC_POINTS / max(1, len(sources))
    shares = [even if size is None else TOTAL_METRIC_POINTS * size / total for size in sizes]
    if len(sources) <= TOTAL_METRIC_POINTS:
        return [max(MIN_METRIC_POINTS, int(share)) for share in shares]
    budgets: list[int] = []
    reached = 0.0
    for share in shares:
        given = math.ceil(reached + share) - math.ceil(reached)
        budgets.append(given)
        reached += share
    return budgets


def _bytes_to_read(source: Source) -> int | None:
    """The bytes a scan job reads: its span of a split file, the file, None for a stream."""
    return source.span[1] - source.span[0] if source.span is not None else source.size


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


def renumber_placeholders(scans: list[SourceScan]) -> None:
    """Give each masked value one placeholder across all scans (sources or shares of a file):
    the scans numbered theirs independently; the keyed digests say which are the same value."""
    global_names: dict[str, str] = {}
    counts: dict[str, int] = {}
    for scan in scans:
        renames: dict[str, str] = {}
        for local, digest in scan.placeholders.items():
            name = global_names.get(digest)
            if name is None:
                kind = _PLACEHOLDER.fullmatch(local)
                base = kind.group(1) if kind else local.strip("<>")
                counts[base] = counts.get(base, 0) + 1
                name = global_names[digest] = f"<{base}-{counts[base]}>"
            if name != local:
                renames[local] = name
        scan.placeholders = {renames.get(k, k): v for k, v in scan.placeholders.items()}
        if renames:
            _rename(scan, renames)


_PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)-(\d+)>")


def _rename(scan: SourceScan, renames: dict[str, str]) -> None:
    def swap(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: renames.get(m.group(0), m.group(0)), text) if "<" in text else text

    for hit in scan.hits:
        hit.text = swap(hit.text)
        hit.before = [swap(t) for t in hit.before]
        hit.after = [swap(t) for t in hit.after]
    scan.tail = [swap(t) for t in scan.tail]


def merge(index: int, parts: list[SourceScan]) -> SourceScan:
    """One scan from the in-order shares of a split file."""
    renumber_placeholders(parts)
    merged = SourceScan(source=index)
    for part in parts:
        merged.placeholders.update(part.placeholders)
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


def scan_sources(
    sources: list[Source],
    jobs: int | None = None,
    mask_key: bytes | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> list[SourceScan]:
    """In-process for small inputs (process start-up would dominate), else a process pool.
    `on_bytes` hears of progress: per chunk in-process, per finished share in the pool."""
    workers = jobs or os.cpu_count() or 1
    total = sum(s.size or 0 for s in sources)
    scanner = load_scanner()
    if workers <= 1 or total < MIN_BYTES_FOR_PROCESSES or any(s.is_stream for s in sources):
        budgets = metric_budgets(sources)
        scans = [scan_source(i, s, scanner, mask_key, metric_budget=budget, on_bytes=on_bytes)
                 for (i, s), budget in zip(enumerate(sources), budgets, strict=True)]
        renumber_placeholders(scans)
        return scans
    shares: list[tuple[int, Source]] = []
    for index, source in enumerate(sources):
        if source.splittable and (source.size or 0) >= MIN_SPLIT_BYTES and len(sources) < workers:
            shares.extend((index, replace(source, span=span)) for span in split_points(source, workers))
        else:
            shares.append((index, source))
    budgets = metric_budgets([source for _, source in shares])
    jobs_list: list[Job] = [(index, source, mask_key, budget)
                            for (index, source), budget in zip(shares, budgets, strict=True)]
    import multiprocessing  # only big inputs get here: keep the pool off the start-up path
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    results: list[SourceScan] = []
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs_list)), mp_context=context,
                             initializer=keep_freed_buffers) as pool:
        for result in pool.map(_scan_one, jobs_list, chunksize=max(1, min(MAX_JOBS_PER_TASK, len(jobs_list) // (workers * 4)))):
            results.append(result)
            if on_bytes is not None:
                on_bytes(result.bytes)
    grouped: dict[int, list[SourceScan]] = {}
    for (index, _, _, _), result in zip(jobs_list, results, strict=True):
        grouped.setdefault(index, []).append(result)
    scans = [merge(index, parts) if len(parts) > 1 else parts[0] for index, parts in sorted(grouped.items())]
    renumber_placeholders(scans)
    return scans
