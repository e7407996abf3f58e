"""A logger that prints a chain of tracebacks (`logger.exception` on an error raised while handling another)
and says the program carries on: the last exception of the chain is as handled as the first, even when the
chain is longer than a screen (up to the 80 lines of context a hit keeps) (Python 3.11 prints a line of carets under most frames)."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_FRAMES = [line for depth in range(8) for line in (
    f'  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line {1200 + depth}, in _get_data',
    f"    data = self._next_part_{depth}()",
    "           " + "^" * 24,
)]
_CHAIN = [
    "2026-12-01 10:15:02,311 ERROR   train | batch fetch failed at step 27; recreating the workers and continuing",
    "Traceback (most recent call last):",
    *_FRAMES,
    "RuntimeError: DataLoader worker (pid 4121) is killed by signal: Killed. ",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    *_FRAMES,
    "RuntimeError: DataLoader worker (pid(s) 4121) exited unexpectedly",
]


def _steps(first: int, last: int) -> list[str]:
    return [f"step {step:4d} | loss {1.2 - step / 100:.4f} | 91.0 ms/step" for step in range(first, last + 1)]


def _diagnose(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)]).status


def test_a_long_handled_chain_followed_by_training_is_no_failure(tmp_path: Path) -> None:
    assert 40 < len(_CHAIN) < 80
    assert _diagnose(tmp_path, _steps(1, 26) + _CHAIN + _steps(28, 60)) == "no-failure"


def test_the_same_chain_ending_the_log_is_a_failure(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, _steps(1, 26) + _CHAIN) == "failure"
