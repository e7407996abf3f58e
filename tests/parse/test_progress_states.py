"""A progress bar captured to a file is one line that redrew itself on every step: its states hold
the loss curve, read from a bounded number of them."""

from __future__ import annotations

from pathlib import Path

from traintriage.parse.metrics import PROGRESS_STATES, progress_states
from traintriage.pipeline import diagnose


def _bar(losses: list[float]) -> str:
    total = len(losses)
    return "".join(f"\rEpoch 0: {100 * n // total:3d}%|#| {n}/{total} [00:{n:02d}<00:10, 9.1it/s, loss={loss:.3f}, v_num=0]"
                   for n, loss in enumerate(losses, 1))


def test_a_line_without_carriage_returns_is_its_own_only_state() -> None:
    assert progress_states(b"step 3 loss 2.1") == [b"step 3 loss 2.1"]


def test_the_states_are_spread_along_the_line_bounded_first_and_last_included() -> None:
    line = _bar([float(n) for n in range(1, 1001)]).encode()
    states = progress_states(line)
    assert len(states) == PROGRESS_STATES and len(set(states)) == len(states)
    assert states[-1] == line.rsplit(b"\r", 1)[-1]
    assert all(b"\r" not in state for state in states)
    counts = [int(state.split(b"| ")[1].split(b"/")[0]) for state in states]
    assert counts == sorted(counts) and counts[0] == 1 and counts[-1] == 1000


def test_a_bar_whose_loss_climbs_far_above_its_early_level_is_a_divergence(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    losses = [4.3 - 0.02 * n for n in range(20)] + [30.0 + 2 * n for n in range(60)]
    path.write_text("model: 2 layers, lr=1.0\n" + _bar(losses) + "\ntraining finished: 80 steps\n")
    root = diagnose([str(path)]).root_cause
    assert root is not None and root.id == "loss-spike-divergence"


def test_a_bar_whose_loss_falls_is_healthy(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("model: 2 layers, lr=1e-3\n" + _bar([4.3 * 0.98 ** n for n in range(80)]) + "\ntraining finished\n")
    assert diagnose([str(path)]).status.value == "no-failure"
