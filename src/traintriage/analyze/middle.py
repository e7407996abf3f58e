"""The median, without `statistics`: that module imports decimal, fractions and random,
4 ms of every start, for the one function the analysis needs."""

from __future__ import annotations

from collections.abc import Iterable


def median(values: Iterable[float]) -> float:
    """Middle value of `values` (mean of the two middle ones for an even count)."""
    return median_of_sorted(sorted(values))


def median_of_sorted(ordered: list[float]) -> float:
    """`median` of values already in order (a rolling window kept sorted)."""
    if not ordered:
        raise ValueError("median of no values")
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
