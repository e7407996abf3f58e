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
