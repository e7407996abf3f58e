"""tqdm repaints a bar that is still open when the interpreter shuts down, after Python printed the traceback
that ended the process. A warning record that happened to sit right above that traceback made it read as an
exception a logger printed and the run went on from; the repaint repeats the last loss, so it is no progress."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/srv/train.py", line 190, in <module>',
    "    torch.save(state, f)",
    '  File "/usr/lib/python3/dist-packages/torch/serialization.py", line 1312, in _save',
    "    zip_file.write_record(name, storage, num_bytes)",
    "OSError: [Errno 28] No space left on device",
]


def _bar(step: int, loss: str) -> str:
    return f"train:  {step * 2}%|#####      | {step}/50 [00:1{step % 10}<00:04,  2.40it/s, loss={loss}]"


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return diagnosis.root_cause.id if diagnosis.root_cause else None


def _lead_in() -> list[str]:
    return [_bar(step, f"2.{step:02d}") for step in range(30, 38)] + [
        _bar(38, "2.4800") + "[rank0] WARNING grad norm 8.26 above clip threshold 1.0, clipped"]


def test_the_bar_repainted_at_exit_is_not_progress_after_the_crash(tmp_path: Path) -> None:
    assert _root(tmp_path, [*_lead_in(), *_TRACEBACK, _bar(39, "2.4800")]) == "disk-full"


def test_a_bar_that_moved_on_to_a_new_loss_still_means_the_run_went_on(tmp_path: Path) -> None:
    assert _root(tmp_path, [*_lead_in(), *_TRACEBACK, _bar(39, "2.3100"), _bar(40, "2.2900")]) is None


def _status(tmp_path: Path, text: str) -> str:
    path = tmp_path / "train.log"
    path.write_text(text)
    return diagnose([str(path)]).status.value


_NAME_TOO_LONG = [
    '  File "/srv/train.py", line 150, in save',
    '    with open(path, "wb") as fh:',
    "OSError: [Errno 36] File name too long: 'ckpt/run_lr=0.001_data=a.jsonl,b.jsonl,c.jsonl.pt'",
]


def test_a_repaint_after_a_crash_whose_bar_states_share_one_line(tmp_path: Path) -> None:
    """A terminal capture keeps tqdm's redraws on one line (carriage returns), the traceback glued to the last
    state: the bar's final repaint after the exception repeats that state, so the exception ended the run."""
    states = "\r".join(_bar(step, f"2.{step:02d}") for step in range(1, 11))
    text = states + "Traceback (most recent call last):\n" + "\n".join(_NAME_TOO_LONG) + "\n" + _bar(10, "2.10") + "\n"
    assert _status(tmp_path, text) != "no-failure"


def test_a_bar_that_goes_on_after_the_exception_is_progress(tmp_path: Path) -> None:
    states = "\r".join(_bar(step, f"2.{step:02d}") for step in range(1, 11))
    text = (states + "Traceback (most recent call last):\n" + "\n".join(_NAME_TOO_LONG) + "\n"
            + "\r".join(_bar(step, f"1.{step:02d}") for step in range(11, 20)) + "\n")
    assert _status(tmp_path, text) == "no-failure"
