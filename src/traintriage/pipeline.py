"""The one pipeline every front door calls: sources -> scan -> mask -> place -> analyze.

The scanner reads raw bytes and emits only the lines that matched (and their
neighbours); those lines are masked here, before anything parses, keeps, stores or
shows them. Nothing else of the log leaves the scanner.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from traintriage.analyze.engine import Analysis, analyze, failure_indicated
from traintriage.analyze.observations import Observation, place
from traintriage.ingest.sources import Source, discover
from traintriage.kb.loader import load_kb
from traintriage.match.compiler import load_scanner
from traintriage.match.parallel import scan_sources
from traintriage.match.scan import SourceScan
from traintriage.parse.prefix import parse_prefix
from traintriage.report.build import build_diagnosis
from traintriage.report.model import Diagnosis

ProgressCallback = Callable[[int, int], None]


@dataclass
class Run:
    """Intermediate results, for front doors that show more than the Diagnosis (timeline)."""

    sources: list[Source]
    scans: list[SourceScan]
    observations: list[Observation]
    analysis: Analysis


def mask_scans(scans: list[SourceScan]) -> None:
    """Replace every materialised line by its masked form; one Masker per diagnosis."""
    from traintriage.ingest.mask import Masker

    masker = Masker()
    for scan in scans:
        for hit in scan.hits:
            hit.before = [masker.mask_line(t) for t in hit.before]
            hit.text = masker.mask_line(hit.text)
            hit.after = [masker.mask_line(t) for t in hit.after]
        scan.tail = [masker.mask_line(t) for t in scan.tail]


def run(paths: list[str], *, mask: bool = True, jobs: int | None = None) -> tuple[Run, float]:
    started = time.perf_counter()
    sources = discover(paths)
    kb = load_kb()
    scanner = load_scanner()
    scans = scan_sources(sources, jobs=jobs)
    if mask:
        mask_scans(scans)
    for scan in scans:
        scan.tail_time = _tail_time(scan)
    observations = place(scans, sources)
    analysis = analyze(observations, scans, kb, scanner)
    if analysis.root is None and not failure_indicated(observations, scanner):
        analysis.salient = []
    return Run(sources=sources, scans=scans, observations=observations, analysis=analysis), started


def diagnose(paths: list[str], *, mask: bool = True, jobs: int | None = None) -> Diagnosis:
    """Diagnose the logs at `paths` (files, directories, '-' for stdin)."""
    result, started = run(paths, mask=mask, jobs=jobs)
    return build_diagnosis(result.sources, result.scans, result.observations, result.analysis,
                           load_kb(), time.perf_counter() - started)


def _tail_time(scan: SourceScan) -> float | None:
    for text in reversed(scan.tail):
        stamp = parse_prefix(text).time
        if stamp is not None:
            return stamp.timestamp()
    return None
