"""Curve anomalies judged against the run's own recent history, not fixed thresholds."""

from __future__ import annotations

import pytest

from traintriage.analyze import curves
from traintriage.parse.metrics import MetricPoint


def _series(losses: list[float], grads: list[float] | None = None, throughput: list[float] | None = None,
            rank: int = 0) -> list[MetricPoint]:
    return [MetricPoint(source=0, line=i + 1, rank=rank, step=i, loss=loss,
                        grad_norm=grads[i] if grads else None, throughput=throughput[i] if throughput else None)
            for i, loss in enumerate(losses)]


def test_spike_relative_to_rolling_median_whatever_the_scale() -> None:
    for scale in (0.01, 1.0, 100.0):
        losses = [scale * (2.0 + 0.01 * (i % 5)) for i in range(40)]
        losses[30] = scale * 12.0
        found = curves.spikes(_series(losses))
        assert (found[0].step == 30) if scale >= 1.0 else not found  # tiny absolute jumps are noise


def test_llm_divergence_from_a_high_start_is_found() -> None:
    losses = [10.9 - i * 0.2 for i in range(40)] + [2.8] * 10 + [7.4 + 0.05 * (i % 3) for i in range(20)]
    finding = curves.diverged(_series(losses))
    assert finding is not None and finding.kind == "loss-divergence"


def test_healthy_noisy_curve_has_no_anomaly() -> None:
    losses = [3.0 - i * 0.01 + (0.15 if i % 7 == 0 else 0.0) for i in range(120)]
    series = _series(losses, grads=[1.0 + 0.2 * (i % 4) for i in range(120)], throughput=[50.0 + i % 3 for i in range(120)])
    assert not curves.spikes(series) and curves.diverged(series) is None
    assert not curves.grad_norm_explosions(series) and not curves.throughput_drops(series)


def test_grad_norm_explosion_and_throughput_drop() -> None:
    grads = [1.0] * 30 + [45.0] + [1.0] * 9
    throughput = [50.0] * 30 + [12.0] * 10
    series = _series([2.0] * 40, grads=grads, throughput=throughput)
    assert curves.grad_norm_explosions(series)[0].step == 30
    assert curves.throughput_drops(series)[0].kind == "throughput-drop"


def test_single_amp_warmup_nan_recovers() -> None:
    series = _series([float("nan")] + [2.0] * 10)
    finding = curves.first_nonfinite(series)
    assert finding is not None and curves.recovered_after(series, finding)


def test_median_matches_the_statistics_module() -> None:
    import random
    import statistics

    from traintriage.analyze.middle import median

    rng = random.Random(7)
    for size in range(1, 40):
        values = [rng.uniform(-5, 5) for _ in range(size)]
        assert median(values) == statistics.median(values)
    with pytest.raises(ValueError):
        median([])


def test_grad_norm_nan_from_the_first_logged_step_is_a_nan_onset() -> None:
    finding = curves.persistent_nonfinite_grad(_series([60.5, 0.0], grads=[float("nan"), float("nan")]))
    assert finding is not None and finding.step == 0


def test_one_late_nan_grad_norm_is_not_persistent() -> None:
    assert curves.persistent_nonfinite_grad(_series([2.3, 2.2], grads=[1.1, float("nan")])) is None
