"""The stored result: the Diagnosis document (OUTPUT.md) plus what the result page draws.

Only masked material is kept: the Diagnosis, the masked lines around each evidence line,
per-rank first events and metric numbers for the plots. The raw upload is never stored.
The page's extras live under `views`, outside the OUTPUT.md contract; the API leaves them out.
"""

from __future__ import annotations

import math
from typing import Any

from traintriage.analyze.observations import Observation
from traintriage.analyze.scoring import Candidate
from traintriage.parse.metrics import MetricPoint
from traintriage.pipeline import Run
from traintriage.report.model import Diagnosis

VIEWS = "views"
CONTEXT_LINES = 3
MAX_RANK_EVENTS = 1024
MAX_PLOT_POINTS = 160
_FIELD_OF_KIND = (("loss", "loss"), ("grad", "grad_norm"), ("throughput", "throughput"), ("straggler", "step_time"),
                  ("step", "step_time"))


def build_document(diagnosis: Diagnosis, run: Run) -> dict[str, Any]:
    """The document to store and render: the contract's fields, then `views`."""
    document: dict[str, Any] = diagnosis.to_json_dict()
    document[VIEWS] = {
        "context": _context(diagnosis, run.observations),
        "rank_events": _rank_events(run),
        "plots": _plots(diagnosis, [p for scan in run.scans for p in scan.metrics]),
    }
    return document


def contract_part(document: dict[str, Any]) -> dict[str, Any]:
    """The OUTPUT.md document alone (what the API returns)."""
    return {key: value for key, value in document.items() if key != VIEWS}


def _context(diagnosis: Diagnosis, observations: list[Observation]) -> list[dict[str, Any]]:
    """For each evidence line, a few masked lines before and after, as the scanner kept them."""
    by_place = {(o.source_name, max(1, o.hit.line)): o for o in observations}
    rows: list[dict[str, Any]] = []
    for evidence in diagnosis.root_cause.evidence if diagnosis.root_cause else []:
        found = by_place.get((evidence.source, evidence.line))
        if found is None:
            continue
        before = [line.rstrip("\n") for line in found.hit.before[-CONTEXT_LINES:]]
        after = [line.rstrip("\n") for line in found.hit.after[:CONTEXT_LINES]]
        rows.append({"source": evidence.source, "line": evidence.line, "before": before, "after": after})
    return rows


def _rank_events(run: Run) -> list[dict[str, Any]]:
    """The first line of the root cause and of each collateral class on every rank."""
    analysis = run.analysis
    involved: list[tuple[Candidate, str]] = [(analysis.root, "root")] if analysis.root else []
    involved += [(candidate, "collateral") for candidate, _ in analysis.collateral]
    events: list[dict[str, Any]] = []
    for candidate, role in involved:
        first: dict[int | None, Observation] = {}
        for observation in sorted(candidate.roots, key=lambda o: o.sort_key):
            first.setdefault(observation.rank, observation)
        for observation in first.values():
            events.append({"rank": observation.rank, "what": candidate.entry_id, "role": role,
                           "time": observation.time.timestamp() if observation.time else None,
                           "order": observation.order, "source": observation.source_name,
                           "line": max(1, observation.hit.line)})
    events.sort(key=lambda e: (e["time"] is None, e["time"] or 0.0, e["order"]))
    return events[:MAX_RANK_EVENTS]


def _plots(diagnosis: Diagnosis, points: list[MetricPoint]) -> list[dict[str, Any]]:
    """One small series per anomaly (the metric it is about, on its rank), else the loss curve."""
    plots: list[dict[str, Any]] = []
    for anomaly in diagnosis.anomalies:
        field = next((name for prefix, name in _FIELD_OF_KIND if anomaly.kind.startswith(prefix)), "loss")
        series = _series(points, field, anomaly.rank)
        if series:
            plot: dict[str, Any] = {"title": f"{anomaly.kind}: {anomaly.detail}", "field": field,
                                    "rank": anomaly.rank, "mark": anomaly.step, "points": series}
            peer = _peer(points, field, anomaly.rank)
            if peer is not None:  # a slow or diverging rank is seen against one that was not
                plot.update(peer_rank=peer, peer_points=_series(points, field, peer))
            plots.append(plot)
    if not plots:
        ranks = [p.rank for p in points if p.loss is not None]
        if ranks:
            rank = max(set(ranks), key=ranks.count)
            plots.append({"title": "loss" + (f" on rank {rank}" if rank is not None else ""), "field": "loss",
                          "rank": rank, "mark": None, "points": _series(points, "loss", rank)})
    return plots


def _peer(points: list[MetricPoint], field: str, rank: int | None) -> int | None:
    """Another rank with the most values of `field`, or None in a single-rank log."""
    counts: dict[int, int] = {}
    for point in points:
        if point.rank is not None and point.rank != rank and getattr(point, field) is not None:
            counts[point.rank] = counts.get(point.rank, 0) + 1
    return max(counts, key=lambda r: (counts[r], -r)) if rank is not None and counts else None


def _series(points: list[MetricPoint], field: str, rank: int | None) -> list[list[float | None]]:
    """[step or index, value] pairs of one rank, thinned to MAX_PLOT_POINTS; a value that is
    not finite (NaN, inf) becomes None, which JSON and every database can hold."""
    values = [(p.step, getattr(p, field)) for p in points if p.rank == rank and getattr(p, field) is not None]
    stride = max(1, math.ceil(len(values) / MAX_PLOT_POINTS))
    thinned = values[::stride]
    if values and thinned[-1] is not values[-1]:
        thinned.append(values[-1])
    nonfinite = [pair for pair in values if not math.isfinite(pair[1])][:1]
    if nonfinite and nonfinite[0] not in thinned:
        thinned.append(nonfinite[0])
        thinned.sort(key=lambda pair: float("inf") if pair[0] is None else pair[0])
    return [[float(step if step is not None else index), value if math.isfinite(value) else None]
            for index, (step, value) in enumerate(thinned)]
