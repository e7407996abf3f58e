"""Geometry of the result page's SVG figures."""

from __future__ import annotations

from traintriage.web import charts


def event(rank: int | None, role: str, time: float | None, order: int) -> dict[str, object]:
    return {"rank": rank, "what": f"{role}-class", "role": role, "time": time, "order": order,
            "source": "job.log", "line": order + 1}


def test_the_failed_rank_gets_the_first_lane_and_time_runs_left_to_right() -> None:
    events = [event(3, "root", 100.0, 0), event(0, "collateral", 700.0, 5), event(1, "collateral", 701.0, 6)]
    figure = charts.timeline(events)
    assert figure is not None
    assert [name for _, name in figure.lanes] == ["rank 3", "rank 0", "rank 1"]
    xs = [mark.x for mark in figure.marks]
    assert xs == sorted(xs) and xs[0] < xs[1] < xs[2]
    assert figure.marks[0].role == "root" and "rank 3" in figure.marks[0].label


def test_without_times_the_order_of_lines_is_the_axis() -> None:
    figure = charts.timeline([event(None, "root", None, 0), event(2, "collateral", 5.0, 1)])
    assert figure is not None and figure.axis == ("first line read", "last line read")


def test_many_ranks_are_capped_and_counted() -> None:
    events = [event(0, "root", 0.0, 0)] + [event(r, "collateral", float(r), r) for r in range(1, 100)]
    figure = charts.timeline(events)
    assert figure is not None
    assert len(figure.lanes) == charts.MAX_LANES and figure.hidden_ranks == 100 - charts.MAX_LANES
    assert len(figure.rows) == 100


def test_a_plot_breaks_its_line_where_values_were_not_finite() -> None:
    plot = charts.plot({"title": "loss", "mark": 3, "points": [[1, 2.0], [2, 1.5], [3, None], [4, 1.2], [5, 1.1]]})
    assert plot is not None
    assert plot.path.count("M") == 2 and plot.path.count("L") == 2
    assert len(plot.nonfinite_x) == 1 and plot.mark_x == plot.nonfinite_x[0]
    assert (plot.low, plot.high, plot.first_step, plot.last_step) == ("1.1", "2", "1", "5")


def test_no_plot_without_two_points() -> None:
    assert charts.plot({"title": "loss", "points": [[1, 2.0]]}) is None
    assert charts.timeline([event(0, "root", 1.0, 0)]) is None


def test_a_peer_rank_is_drawn_on_the_same_scale() -> None:
    slow = [[float(s), 0.08] for s in range(10)]
    peer = [[float(s), 0.02] for s in range(10)]
    plot = charts.plot({"title": "straggler", "points": slow, "peer_points": peer, "peer_rank": 0})
    assert plot is not None and plot.peer_label == "rank 0"
    top = charts.PLOT_PAD
    bottom = charts.PLOT_HEIGHT - charts.PLOT_PAD
    assert plot.path.split()[1] == str(float(top)) and plot.peer_path.split()[1] == str(float(bottom))
    assert (plot.low, plot.high) == ("0.02", "0.08")
