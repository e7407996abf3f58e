"""A pause after the last training step that ends in the program's own output (an evaluation's results,
a summary) was work, not a hang: the process was alive and printing at the end. A pause that ends in
a line about a signal or an error is still a stall."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def _steps() -> list[str]:
    return [f"2025-03-02 08:16:{s:02d},100 - INFO - Epoch 20 - Batch {s} loss: 0.00{s % 9 + 1}" for s in range(10, 30)]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return diagnosis.root_cause.id if diagnosis.root_cause else None


def test_a_long_validation_after_the_last_step_is_not_a_hang(tmp_path: Path) -> None:
    lines = _steps() + ["2025-03-02 08:17:31,979 - INFO - Epoch 20 - Validation BLEU-4 33.42",
                        "2025-03-02 08:17:50,443 - INFO - Epoch 20 - Dev BLEU-4 33.87"]
    assert _root(tmp_path, lines) is None


def test_a_pause_that_ends_in_a_caught_signal_is_still_a_hang(tmp_path: Path) -> None:
    lines = _steps() + ["2025-03-02 08:16:29,900 - INFO - prefetch queue drained, waiting for next batch",
                        "2025-03-02 08:18:03,862 - WARNING - SIGTERM caught, shutting down"]
    assert _root(tmp_path, lines) == "training-hang"
