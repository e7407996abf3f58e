"""A trainer that logs a non-finite loss, skips the update and trains on (a skip-on-non-finite guard, dynamic
loss scaling) has not failed; the same line with nothing finite after it has."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

BEFORE = [f"2026-03-01 10:00:{n:02d},100 INFO trainer: step {n} loss={2.5 - 0.05 * n:.4f} grad_norm 1.2"
          for n in range(10)]
SKIPPED = ["2026-03-01 10:00:10,100 WARNING trainer: step 10: non-finite grad norm (inf), loss=inf - skipping update"]
AFTER = [f"2026-03-01 10:00:{n:02d},100 INFO trainer: step {n} loss={2.0 - 0.05 * (n - 10):.4f} grad_norm 1.1"
         for n in range(11, 20)]
STUCK = [f"2026-03-01 10:00:{n:02d},100 INFO trainer: step {n} loss=nan grad_norm nan" for n in range(11, 20)]


def _diagnose(tmp_path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)])


def test_a_skipped_non_finite_step_the_run_trained_past_is_no_failure(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, BEFORE + SKIPPED + AFTER).status.value == "no-failure"


def test_a_non_finite_loss_that_stays_is_loss_nan(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, BEFORE + SKIPPED + STUCK)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"


def test_a_non_finite_loss_at_the_end_of_the_log_is_loss_nan(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, BEFORE + SKIPPED)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"


def test_a_rank_that_only_logs_its_skipped_non_finite_steps_is_no_failure(tmp_path: Path) -> None:
    """Data parallelism: rank 1 logs only its guard's warnings (its local loss was NaN, the step was skipped);
    rank 0 logs finite losses to the end. Rank 1's own curve cannot show the recovery, the run's does."""
    lines = []
    for step in range(12):
        lines.append(f"[default0]:INFO:trainer:step {step:4d} | loss {1.4 - 0.02 * step:.4f} | lr 0.05")
        if step % 4 == 3:
            lines.append(f"[default1]:WARNING:trainer:step {step}: non-finite loss detected (local loss nan on rank 1), "
                         "skipping optimizer step")
    assert _diagnose(tmp_path, lines).status.value == "no-failure"


def _rank_reports_inf_then_all_ranks(notice: str) -> list[str]:
    """Rank 2 reports its own non-finite loss; the ranks agree (an all-reduced flag) and each logs `notice`;
    the run-wide mean loss goes on."""
    lines = [f"step {step:3d} | mean loss {2.8 - 0.1 * step:.4f}" for step in range(5)]
    lines.append("rank2: WARNING step 5: non-finite loss inf on this rank")
    lines += [f"rank{rank}: step 5: {notice}" for rank in (0, 2, 1)]
    return lines + [f"step {step:3d} | mean loss {2.0 - 0.1 * step:.4f}" for step in range(6, 10)]


def test_a_skip_announced_on_the_next_lines_is_no_failure(tmp_path: Path) -> None:
    lines = _rank_reports_inf_then_all_ranks("a rank reported a non-finite loss, skipping this step on all ranks")
    assert _diagnose(tmp_path, lines).status.value == "no-failure"


def test_a_non_finite_loss_followed_by_other_words_is_loss_nan(tmp_path: Path) -> None:
    lines = _rank_reports_inf_then_all_ranks("a rank reported a non-finite loss")
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"


def test_non_finite_losses_on_every_rank_are_loss_nan_even_when_skipped(tmp_path: Path) -> None:
    lines = [f"[default{rank}]:WARNING:trainer:step {step}: non-finite loss detected (local loss nan on rank {rank}), "
             "skipping optimizer step" for step in range(3, 12) for rank in (0, 1)]
    lines = [f"[default0]:INFO:trainer:step {step:4d} | loss {1.4 - 0.02 * step:.4f}" for step in range(3)] + lines
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"


def test_a_boosting_run_whose_evaluation_metric_stays_nan_is_loss_nan(tmp_path: Path) -> None:
    """XGBoost prints `[round]\t<data>-<metric>:<value>`; a NaN there on every round is a NaN objective."""
    rounds = [f"[{n}]\ttrain-poisson-nloglik:nan\teval-poisson-nloglik:nan" for n in range(12)]
    diagnosis = _diagnose(tmp_path, ["[10:02:11] WARNING: learner.cc:740: Parameters: { \"silent\" } are not used."]
                          + rounds)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"


def test_a_boosting_run_with_finite_metrics_is_no_failure(tmp_path: Path) -> None:
    rounds = [f"[{n}]\ttrain-auc:{0.7 + 0.01 * n:.4f}\teval-auc:{0.68 + 0.01 * n:.4f}" for n in range(12)]
    assert _diagnose(tmp_path, rounds).status.value == "no-failure"


def test_a_paddle_loss_array_that_turns_nan_is_loss_nan(tmp_path: Path) -> None:
    lines = [f"2026-03-01 10:00:{n:02d},100-INFO: Total iter: {10 * n}, epoch: 0, batch: {10 * n}, "
             f"loss: [{'nan' if n > 3 else f'{9.8 - n:.6f}'}]" for n in range(12)]
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"


def test_a_loss_that_blew_up_while_only_the_grad_norm_went_inf_diverged(tmp_path: Path) -> None:
    """The loss stays finite (1e34) while the grad norm is inf from some step on: the non-finite values are
    the gradient's, the run did not stop on NaN, and its loss diverged."""
    losses = [0.52, 0.41, 0.93, 0.90, 2.3, 50.3, 1.2e16] + [1.7e34 + n * 1e32 for n in range(14)]
    lines = [f"2026-03-01 10:00:{n:02d} rank=0 step={2 * n} loss={loss:.4f} lr=6.0e-01 "
             f"grad_norm={'inf' if loss > 1e20 else f'{1.5 * (n + 1):.3f}'}" for n, loss in enumerate(losses)]
    diagnosis = _diagnose(tmp_path, lines + ["training finished: 42 steps"])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-spike-divergence"


SAMPLING_ERROR = [
    "Traceback (most recent call last):",
    '  File "/home/ana/lm/sample.py", line 41, in <module>',
    "    next_token = torch.multinomial(probs, num_samples=1)",
    "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
]


def test_a_non_finite_loss_that_stays_explains_sampling_from_its_probabilities(tmp_path: Path) -> None:
    """Sampling after training fails on NaN probabilities because the weights went NaN during training: the
    loss that stayed NaN is the cause, the multinomial error its consequence."""
    diagnosis = _diagnose(tmp_path, BEFORE + STUCK + SAMPLING_ERROR)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"
    assert "multinomial-invalid-probability" in {c.id for c in diagnosis.collateral}


def test_sampling_from_nan_probabilities_after_a_finite_run_is_the_sampling_error(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, BEFORE + AFTER + SAMPLING_ERROR)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "multinomial-invalid-probability"
