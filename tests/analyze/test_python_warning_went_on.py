"""A line Python's warnings module printed (`<file>.py:<line>: <Category>Warning: ...`) is a warning like a
logger's WARNING record: when training goes on after it, it did not stop the run."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_WARNING = ("/opt/venv/lib/python3.12/site-packages/keras/src/saving/saving_lib.py:869: UserWarning: Skipping variable "
            "loading for optimizer 'adam', because it has 2 variables whereas the saved optimizer has 14 variables.")


def _epochs() -> list[str]:
    return [line for e in range(1, 4) for line in (
        f"Epoch {e}/3", f"58/58 - 1s - 20ms/step - accuracy: 0.8{e} - loss: 0.{7 - e}1 - val_loss: 0.{8 - e}0")]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    path = tmp_path / "finetune.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return diagnosis.root_cause.id if diagnosis.root_cause else None


def test_training_that_goes_on_after_a_python_warning_is_healthy(tmp_path: Path) -> None:
    assert _root(tmp_path, ["restoring weights from ckpt/model.weights.h5", _WARNING, *_epochs()]) is None


def test_the_same_warning_with_no_progress_after_it_is_still_the_finding(tmp_path: Path) -> None:
    assert _root(tmp_path, [*_epochs(), _WARNING]) == "optimizer-state-mismatch"
