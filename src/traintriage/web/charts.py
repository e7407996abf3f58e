"""Geometry of the result page's SVG figures, computed here and drawn by templates (no script).

Coordinates are plain numbers; the templates escape every text they print.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

TIMELINE_WIDTH = 720
LANE_HEIGHT = 18
LABEL_WIDTH = 84
MAX_LANES = 40
PLOT_WIDTH = 280
PLOT_HEIGHT = 72
PLOT_PAD = 6


@dataclass
class Mark:
    x: float
    y: float
    role: str
    label: str


@dataclass
class Timeline:
    width: int
    height: int
    lanes: list[tuple[float, str]]
    marks: list[Mark]
    axis: tuple[str, str]
    hidden_ranks: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)


def _lane_name(rank: int | None) -> str:
    return "no rank" if rank is None else f"rank {rank}"


def _when(event: dict[str, Any]) -> str:
    if event.get("time") is None:
        return f"{event['source']}:{event['line']}"
    return datetime.fromtimestamp(event["time"], tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def timeline(events: list[dict[str, Any]]) -> Timeline | None:
    """Which rank failed when, and what followed: one lane per rank, earliest root event first.
    X is time when every event has one, else the order in which lines were read."""
    if len(events) < 2:
        return None
    ordered_ranks: list[int | None] = []
    for event in sorted(events, key=lambda e: e["role"] != "root"):
        if event["rank"] not in ordered_ranks:
            ordered_ranks.append(event["rank"])
    shown = ordered_ranks[:MAX_LANES]
    hidden = len(ordered_ranks) - len(shown)
    lanes_of = {rank: index for index, rank in enumerate(shown)}
    timed = all(e.get("time") is not None for e in events)
    position = [e["time"] if timed else float(index) for index, e in enumerate(events)]
    low, high = min(position), max(position)
    span = (high - low) or 1.0
    plot_width = TIMELINE_WIDTH - LABEL_WIDTH - 16
    marks = []
    for event, value in zip(events, position, strict=True):
        if event["rank"] not in lanes_of:
            continue
        x = LABEL_WIDTH + 8 + plot_width * (value - low) / span
        y = lanes_of[event["rank"]] * LANE_HEIGHT + LANE_HEIGHT / 2 + 4
        marks.append(Mark(round(x, 1), round(y, 1), event["role"],
                          f"{_lane_name(event['rank'])}: {event['what']} at {_when(event)}"))
    lanes = [(lanes_of[rank] * LANE_HEIGHT + LANE_HEIGHT / 2 + 8, _lane_name(rank)) for rank in shown]
    first, last = (events[0], events[-1])
    axis = (_when(first), _when(last)) if timed else ("first line read", "last line read")
    return Timeline(width=TIMELINE_WIDTH, height=len(shown) * LANE_HEIGHT + 24, lanes=lanes, marks=marks,
                    axis=axis, hidden_ranks=hidden, rows=[{**e, "when": _when(e)} for e in events])


@dataclass
class Plot:
    title: str
    width: int
    height: int
    path: str
    mark_x: float | None
    nonfinite_x: list[float]
    low: str
    high: str
    first_step: str
    last_step: str
    peer_path: str = ""
    peer_label: str = ""


def _number(value: float) -> str:
    """Steps as whole numbers (28,840), metric values with four significant digits."""
    value = float(value)  # JSON gives ints too
    return f"{value:,.0f}" if value.is_integer() and abs(value) >= 1 else f"{value:.4g}"


def plot(series: dict[str, Any]) -> Plot | None:
    """A small line plot of one metric (and, when given, the same metric on a peer rank, on the
    same scale); points that were not finite are drawn as marks on top."""
    points: list[list[float | None]] = series.get("points") or []
    peer: list[list[float | None]] = series.get("peer_points") or []
    finite = [(x, y) for x, y in points + peer if x is not None and y is not None and math.isfinite(y)]
    if len(points) < 2 or not finite:
        return None
    xs = [x for x, _ in points + peer if x is not None]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = min(y for _, y in finite), max(y for _, y in finite)
    x_span, y_span = (x_high - x_low) or 1.0, (y_high - y_low) or 1.0
    inner_w, inner_h = PLOT_WIDTH - 2 * PLOT_PAD, PLOT_HEIGHT - 2 * PLOT_PAD

    def sx(x: float) -> float:
        return round(PLOT_PAD + inner_w * (x - x_low) / x_span, 1)

    def sy(y: float) -> float:
        return round(PLOT_PAD + inner_h * (1 - (y - y_low) / y_span), 1)

    def path(pairs: list[list[float | None]]) -> str:
        commands: list[str] = []
        pen_down = False
        for x, y in pairs:
            if x is None or y is None or not math.isfinite(y):
                pen_down = False
                continue
            commands.append(f"{'L' if pen_down else 'M'}{sx(x)} {sy(y)}")
            pen_down = True
        return " ".join(commands)

    mark = series.get("mark")
    peer_rank = series.get("peer_rank")
    return Plot(title=str(series.get("title", "")), width=PLOT_WIDTH, height=PLOT_HEIGHT, path=path(points),
                mark_x=sx(float(mark)) if mark is not None and x_low <= mark <= x_high else None,
                nonfinite_x=[sx(x) for x, y in points if x is not None and y is None],
                low=_number(y_low), high=_number(y_high), first_step=_number(x_low), last_step=_number(x_high),
                peer_path=path(peer) if peer else "",
                peer_label=f"rank {peer_rank}" if peer and peer_rank is not None else "")
