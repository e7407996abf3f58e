"""A ZeroDivisionError whose divisor is the length of the data means the loader or dataset is empty
(empty-dataset); dividing by anything else stays the script's own error."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose


def _traceback(code: str, exception: str = "ZeroDivisionError: division by zero") -> str:
    return ("Traceback (most recent call last):\n"
            '  File "/home/ana/proj/train.py", line 210, in <module>\n'
            "    train(cfg)\n"
            '  File "/home/ana/proj/train.py", line 131, in train\n'
            f"    {code}\n"
            f"{exception}\n")


@pytest.mark.parametrize("code", [
    "epoch_offset = max(0, int(iteration / len(train_loader)))",
    "start_epoch = global_step // self.steps_per_epoch",
    "avg = total_loss / len(self.val_dataset)",
    "mean_loss = total_loss / batches",
    "print(epoch + 1, total_loss / (len(train_loader)), total_cer * 100 / total_char)",
])
def test_dividing_by_the_length_of_the_data_is_an_empty_dataset(tmp_path: Path, code: str) -> None:
    path = tmp_path / "train.log"
    path.write_text(_traceback(code))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "empty-dataset"


def test_dividing_by_something_else_stays_the_scripts_error(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(_traceback("scale = base_lr / warmup_ratio"))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"


def test_another_exception_on_such_a_line_is_not_an_empty_dataset(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(_traceback("epoch_offset = iteration / len(train_loader)",
                               "TypeError: object of type 'generator' has no len()"))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "empty-dataset"
