"""Curve points are a budget of the whole run: shared by size, so a fleet of thousands of
small logs parses about as many metric lines as one big log, and a big log beside small
ones keeps its curve."""

from __future__ import annotations

from pathlib import Path

from traintriage.ingest.sources import Source
from traintriage.match.compiler import load_scanner
from traintriage.match.parallel import MIN_METRIC_POINTS, TOTAL_METRIC_POINTS, metric_budgets
from traintriage.match.scan import scan_source


def _file(name: str, size: int) -> Source:
    return Source(name=name, path=Path(name), size=size)


def test_a_fleet_of_small_logs_keeps_the_run_budget_spread_evenly() -> None:
    budgets = metric_budgets([_file(f"job-{i}.log", 20_000) for i in range(20_000)])
    assert abs(sum(budgets) - TOTAL_METRIC_POINTS) <= 1
    assert set(budgets) == {0, 1}
    sampled = [i for i, budget in enumerate(budgets) if budget]
    assert sampled[0] == 0 and max(b - a for a, b in zip(sampled, sampled[1:], strict=False)) <= 3


def test_up_to_the_budget_every_log_gives_a_point() -> None:
    budgets = metric_budgets([_file(f"job-{i}.log", 20_000) for i in range(TOTAL_METRIC_POINTS)])
    assert set(budgets) == {MIN_METRIC_POINTS}


def test_a_log_without_points_parses_no_metric_line(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text("".join(f"step {step} | loss {2.5 - step / 1000:.3f} | lr 3e-4\n" for step in range(50)))
    source = Source(name="job.log", path=path, size=path.stat().st_size)
    assert scan_source(0, source, load_scanner(), metric_budget=0).metrics == []


def test_the_budget_follows_size() -> None:
    big, small = metric_budgets([_file("console.log", 2 << 30), _file("stderr.log", 10_000)])
    assert big >= TOTAL_METRIC_POINTS - 1
    assert small == MIN_METRIC_POINTS


def test_a_stream_of_unknown_size_gets_an_even_share() -> None:
    assert metric_budgets([Source(name="-", path=None)]) == [TOTAL_METRIC_POINTS]


def test_a_split_file_shares_by_span() -> None:
    size = 1 << 30
    halves = [Source(name="big.log", path=Path("big.log"), size=size, span=span)
              for span in ((0, size // 4), (size // 4, size))]
    assert metric_budgets(halves) == [TOTAL_METRIC_POINTS // 4, 3 * TOTAL_METRIC_POINTS // 4]


def test_a_small_log_on_the_floor_still_gives_its_first_loss(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text("".join(f"step {step} | loss {2.5 - step / 1000:.3f} | lr 3e-4\n" for step in range(400)))
    source = Source(name="job.log", path=path, size=path.stat().st_size)
    scan = scan_source(0, source, load_scanner(), metric_budget=MIN_METRIC_POINTS)
    assert [(p.step, p.loss) for p in scan.metrics][:1] == [(0, 2.5)]
    assert len(scan.metrics) <= 2 * MIN_METRIC_POINTS
