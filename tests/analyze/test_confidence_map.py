"""Calibrated confidence: monotone in the raw value, fitted bands never go down."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from traintriage.analyze import confidence_map

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calibration  # noqa: E402


def test_the_map_keeps_the_order_of_candidates() -> None:
    values = [confidence_map.calibrated(raw / 100) for raw in range(0, 100)]
    assert values == sorted(values)
    assert all(0.0 <= v <= 1.0 for v in values)


def test_weak_raw_values_are_not_promoted_to_the_fitted_rates() -> None:
    """A faint candidate below every fitted claim keeps a low confidence."""
    bands = confidence_map._bands()
    if not bands:
        pytest.skip("no calibration map shipped")
    weakest = bands[0][0]
    assert confidence_map.calibrated(weakest / 3) <= weakest / 3 + 0.01
    assert confidence_map.calibrated(weakest / 3) < confidence_map.calibrated(weakest)


def test_switched_off_gives_raw_values(monkeypatch: pytest.MonkeyPatch) -> None:
    confidence_map._bands.cache_clear()
    monkeypatch.setenv("TRAINTRIAGE_CALIBRATION", "off")
    try:
        assert confidence_map.calibrated(0.97) == 0.97
    finally:
        confidence_map._bands.cache_clear()


def test_fitted_bands_pool_until_the_rate_never_goes_down() -> None:
    # raw 0.9 right less often than raw 0.6: the two must pool into one band
    claims = ([calibration.Claim(0.3, False)] * 20 + [calibration.Claim(0.6, True)] * 16
              + [calibration.Claim(0.6, False)] * 4 + [calibration.Claim(0.9, True)] * 14
              + [calibration.Claim(0.9, False)] * 6)
    bands = calibration.fit(claims)
    rates = [rate for _, rate in bands]
    assert rates == sorted(rates)
    assert bands[0] == [0.3, 0.0]
    assert bands[-1][1] == pytest.approx(30 / 40)


def test_expected_calibration_error_of_a_perfect_tool_is_zero() -> None:
    claims = [calibration.Claim(0.8, True)] * 8 + [calibration.Claim(0.8, False)] * 2
    error, rows = calibration.table(claims)
    assert error == pytest.approx(0.0)
    assert any(row.startswith("| 0.8-0.9 | 10 | 8 |") for row in rows)


def test_crossfitting_maps_each_claim_by_the_other_half_only() -> None:
    """A claim never calibrates itself: a half that is always right, mapped by a half that is
    always wrong at the same raw confidence, comes out at zero (and the reverse at its raw
    value: the map never lifts a claim above raw at the weakest fitted band)."""
    cases = [f"case-{i}" for i in range(200)]
    right = [calibration.Claim(0.9, True, c) for c in cases if calibration.fold_of(calibration.Claim(0, True, c)) == 0]
    wrong = [calibration.Claim(0.9, False, c) for c in cases if calibration.fold_of(calibration.Claim(0, True, c)) == 1]
    mapped = {c.case: c.confidence for c in calibration.crossfitted(right + wrong)}
    assert {mapped[c.case] for c in right} == {0.0}
    assert {mapped[c.case] for c in wrong} == {0.9}
