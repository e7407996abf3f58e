"""The one pipeline every front door calls: sources -> scan + mask -> place -> analyze.

Masking happens at ingest, in the scanning pass: every line that anything later parses,
keeps, stores or shows is masked before it is decoded (unless a local CLI user turns it
off); see docs/MASKING.md. Placeholders are made consistent across sources with
keyed digests; the key lives only for the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from traintriage.analyze.engine import Analysis, analyze
from traintriage.analyze.observations import Observation, place
from traintriage.ingest.sources import Source, discover, sources_from_bytes
from traintriage.kb.loader import load_kb
from traintriage.match.compiler import load_scanner
from traintriage.match.parallel import scan_sources
from traintriage.match.scan import SourceScan, last_time
from traintriage.report.build import build_diagnosis
from traintriage.report.model import Diagnosis

ProgressFactory = Callable[[int], AbstractContextManager[Callable[[int], None]]]
"""Given the total bytes, a context that yields a callback advanced by bytes scanned."""


@dataclass
class Run:
    """Intermediate results, for front doors that show more than the Diagnosis (timeline)."""

    sources: list[Source]
    scans: list[SourceScan]
    observations: list[Observation]
    analysis: Analysis
    warnings: list[str] = field(default_factory=list)
    """What discovery did not read (unreadable or skipped files); scans carry their own."""


def run(
    paths: list[str], *, mask: bool = True, jobs: int | None = None, progress: ProgressFactory | None = None
) -> tuple[Run, float]:
    started = time.perf_counter()
    warnings: list[str] = []
    sources = discover(paths, warnings)
    return _run_sources(sources, warnings, mask=mask, jobs=jobs, progress=progress), started


def run_bytes(items: list[tuple[str, bytes]], *, mask: bool = True) -> tuple[Run, float]:
    """`run` on logs held in memory, each (display name, raw bytes, compressed or not): an
    upload is diagnosed without being written to disk, in this process."""
    started = time.perf_counter()
    return _run_sources(sources_from_bytes(items), [], mask=mask, jobs=1, progress=None), started


def _run_sources(
    sources: list[Source], warnings: list[str], *, mask: bool, jobs: int | None, progress: ProgressFactory | None
) -> Run:
    kb = load_kb()
    scanner = load_scanner()
    mask_key = os.urandom(32) if mask else None
    if progress is None:
        scans = scan_sources(sources, jobs=jobs, mask_key=mask_key)
    else:
        with progress(sum(s.size or 0 for s in sources)) as advance:
            scans = scan_sources(sources, jobs=jobs, mask_key=mask_key, on_bytes=advance)
    for scan in scans:
        scan.tail_time = last_time(scan.tail)
    observations = place(scans, sources)
    analysis = analyze(observations, scans, kb, scanner, [s.name for s in sources])
    return Run(sources=sources, scans=scans, observations=observations, analysis=analysis, warnings=warnings)


def diagnose(
    paths: list[str], *, mask: bool = True, jobs: int | None = None, progress: ProgressFactory | None = None
) -> Diagnosis:
    """Diagnose the logs at `paths` (files, directories, '-' for stdin)."""
    return diagnosis_of_run(*run(paths, mask=mask, jobs=jobs, progress=progress))


def diagnose_bytes(items: list[tuple[str, bytes]], *, mask: bool = True) -> Diagnosis:
    """Diagnose logs held in memory, each (display name, raw bytes); see `run_bytes`."""
    return diagnosis_of_run(*run_bytes(items, mask=mask))


def diagnosis_of_run(result: Run, started: float) -> Diagnosis:
    """The report of a finished run, for front doors that also keep the Run (the web app's timeline)."""
    diagnosis = build_diagnosis(result.sources, result.scans, result.analysis, load_kb(),
                                time.perf_counter() - started)
    diagnosis.warnings[:0] = result.warnings  # what discovery did not read, before what scans met
    return diagnosis
