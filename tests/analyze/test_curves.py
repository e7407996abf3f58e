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


def test_a_loss_that_only_climbed_from_its_first_values_diverged() -> None:
    """A learning rate far too high from step one: no low point to fall from, so no rolling minimum to rise above."""
    losses = [14.6, 102.0, 408.0] + [600.0 + 37.0 * (i % 9) for i in range(27)]
    finding = curves.diverged(_series(losses))
    assert finding is not None and finding.kind == "loss-divergence" and "rose from" in finding.detail


def test_a_spike_the_curve_never_came_down_from_diverged_on_that_rank() -> None:
    """A few healthy steps, then a jump by orders of magnitude that stays: every rolling window is past the jump."""
    healthy = _series([2.1, 1.4, 0.9, 0.7, 0.6, 0.55, 0.5, 0.48, 0.47, 0.46, 0.45, 0.44] * 2, rank=0)
    blown = [2.1, 1.4, 0.9, 0.6, 0.5, 0.45, 3.5e5, 1.9e5, 1.1e5, 6e4, 3e4] + [5e3 - 100 * i for i in range(40)]
    finding = curves.diverged(healthy + _series(blown, rank=2))
    assert finding is not None and finding.rank == 2


def test_a_loss_that_spiked_and_recovered_did_not_diverge() -> None:
    losses = [2.0 + 0.01 * (i % 5) for i in range(40)]
    losses[25] = 40.0
    assert curves.spikes(_series(losses)) and curves.diverged(_series(losses)) is None


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
    assert finding is not None and curves.recovered_after(series, finding.point)


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


def test_a_nan_grad_norm_logged_with_a_loss_of_exactly_zero_is_a_nan_onset() -> None:
    # HF Trainer logs 0.0 when every loss of the window was NaN (logging_nan_inf_filter)
    finding = curves.persistent_nonfinite_grad(_series([2.3, 0.0], grads=[1.1, float("nan")]))
    assert finding is not None and finding.step == 1
    assert curves.persistent_nonfinite_grad(_series([0.0], grads=[float("nan")])) is not None
    assert curves.persistent_nonfinite_grad(_series([2.2], grads=[float("nan")])) is None


def _lockstep(slow_rank: int | None, onset: int, wait: float) -> list[MetricPoint]:
    """Four ranks in lockstep: every step takes as long as the slowest rank's; from `onset` on,
    `slow_rank` waits `wait` seconds for each batch."""
    points = []
    for step in range(40):
        slow = slow_rank is not None and step >= onset
        for rank in range(4):
            data = wait if slow and rank == slow_rank else 0.0004
            points.append(MetricPoint(source=0, line=4 * step + rank, rank=rank, step=step, loss=2.0 - step / 40,
                                      step_time=0.006 + (wait if slow else 0.0), data_time=data))
    return points


def test_a_rank_whose_input_pipeline_slows_midway_is_the_straggler() -> None:
    finding = curves.straggler(_lockstep(slow_rank=3, onset=15, wait=0.08))
    assert finding is not None and finding.rank == 3 and "batch" in finding.detail


@pytest.mark.parametrize("wait", [0.0004, 0.005])
def test_lockstep_ranks_with_fast_input_have_no_straggler(wait: float) -> None:
    assert curves.straggler(_lockstep(slow_rank=1, onset=0, wait=wait)) is None


def test_data_time_is_read_from_the_common_metric_shapes() -> None:
    from traintriage.parse.metrics import parse_metric_line

    shapes = {
        "[rank3] step 40/50 loss 1.24 step_time 96.0ms data 83.1ms fwd_bwd 3.5ms": 0.0831,
        "trainer: step 5/60 loss 2.37 step_time 61.5 ms (data 60.3 ms) sync_wait 8.2 ms": 0.0603,
        "Epoch(train) [2][150/788] lr: 2.0e-03 time: 0.8396 data_time: 0.0166 loss: 1.50": 0.0166,
        "step 3 loss 2.10 data 12 samples": None,
    }
    for line, seconds in shapes.items():
        point = parse_metric_line(line, 0, 1)
        assert point is not None
        assert (point.data_time is None) if seconds is None else point.data_time == pytest.approx(seconds)
