"""Raw confidence -> how often such a claim was right on the tuning corpora.

The engine's raw confidence orders candidates well but is not a probability: a faint
candidate scores 0.35 and was right about half the time on logs nobody tuned on.
benchmarks/calibration.py fits monotone bands on the scored corpora, cross-fitted so
that the figures it reports are measured on claims the fit did not see
(data/calibration.json); a raw value is mapped by interpolating between the bands'
mean raw confidences, so the order of candidates is kept.
TRAINTRIAGE_CALIBRATION=off gives the raw values (what the fit itself needs).
"""

from __future__ import annotations

import json
import os
from functools import cache
from itertools import pairwise
from pathlib import Path

MAP_FILE = Path(__file__).resolve().parent.parent / "data" / "calibration.json"


@cache
def _bands() -> tuple[tuple[float, float], ...]:
    if os.environ.get("TRAINTRIAGE_CALIBRATION") == "off":
        return ()
    try:
        bands = json.loads(MAP_FILE.read_text(encoding="utf-8"))["bands"]
        return tuple((float(raw), float(rate)) for raw, rate in bands)
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def calibrated(raw: float) -> float:
    return apply(_bands(), raw)


def apply(bands: tuple[tuple[float, float], ...], raw: float) -> float:
    """Map a raw confidence through fitted bands (mean raw confidence, rate right)."""
    if not bands:
        return raw
    if raw <= bands[0][0]:
        # Below the weakest claim the fit saw (weak candidates, a faint second opinion): no
        # evidence that these are right that often, so scale toward zero instead of clamping.
        low, low_rate = bands[0]
        return round(min(raw, raw * low_rate / low) if low > 0 else raw, 2)
    for (low, low_rate), (high, high_rate) in pairwise(bands):
        if raw <= high:
            share = (raw - low) / (high - low) if high > low else 1.0
            return round(low_rate + share * (high_rate - low_rate), 2)
    return round(bands[-1][1], 2)
