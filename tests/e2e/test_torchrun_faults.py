"""Real multi-process torchrun jobs (CPU, gloo), each failing in a known way on a known rank.

The diagnosis must name the class, the rank that started it and, for curves, the step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import run_torchrun
from traintriage.pipeline import diagnose

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("torchrun")]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("torchrun")
    return {
        "crash": run_torchrun(root / "crash.log", 3, "--mode", "crash", "--fault-rank", "2", "--fault-step", "3"),
        "hang": run_torchrun(root / "hang.log", 3, "--mode", "hang", "--fault-rank", "1", "--fault-step", "4"),
        "slow": run_torchrun(root / "slow.log", 3, "--mode", "slow", "--fault-rank", "2", "--steps", "30"),
        "nan": run_torchrun(root / "nan.log", 3, "--mode", "nan", "--fault-rank", "0", "--fault-step", "5"),
        "ok": run_torchrun(root / "ok.log", 2, "--mode", "ok", healthy=True),
    }


def test_rank_crash_is_the_root_cause_and_peers_are_collateral(logs: dict[str, Path]) -> None:
    diagnosis = diagnose([str(logs["crash"])])
    assert diagnosis.root_cause is not None
    assert diagnosis.root_cause.id == "embedding-index-out-of-range"
    assert diagnosis.initiating_rank == 2
    collateral_ranks = {r for c in diagnosis.collateral for r in c.ranks}
    assert {0, 1} <= collateral_ranks
    assert 2 not in diagnosis.ranks.collateral


def test_hung_rank_is_found(logs: dict[str, Path]) -> None:
    diagnosis = diagnose([str(logs["hang"])])
    assert diagnosis.root_cause is not None
    assert diagnosis.root_cause.id == "training-hang"
    assert diagnosis.initiating_rank == 1


def test_straggler_is_named_with_its_factor(logs: dict[str, Path]) -> None:
    diagnosis = diagnose([str(logs["slow"])])
    stragglers = [a for a in diagnosis.anomalies if a.kind == "straggler"]
    assert stragglers and stragglers[0].rank == 2
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "straggler-slow-rank"
    assert diagnosis.initiating_rank == 2


def test_nan_onset_names_rank_and_step(logs: dict[str, Path]) -> None:
    diagnosis = diagnose([str(logs["nan"])])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"
    onset = [a for a in diagnosis.anomalies if a.kind == "loss-nan"]
    assert onset and onset[0].rank == 0 and onset[0].step == 5
    assert diagnosis.initiating_rank == 0


def test_healthy_run_is_no_failure(logs: dict[str, Path]) -> None:
    diagnosis = diagnose([str(logs["ok"])])
    assert diagnosis.status.value == "no-failure", diagnosis.root_cause
