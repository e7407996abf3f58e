"""On a log spanning nodes, torchrun's `[defaultN]:` tag is a local rank: each node's local
rank 0 is its own curve, so one node's NaN is not hidden by the other's finite losses."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose


def _node_lines(host: str, nan_from: int | None, steps: int = 30) -> list[str]:
    """One node's console, two local ranks; local rank 0's loss turns NaN at `nan_from`."""
    lines = []
    for step in range(1, steps + 1):
        for local in range(2):
            nan = nan_from is not None and local == 0 and step >= nan_from
            loss = "nan" if nan else f"{2.5 - step * 0.02:.4f}"
            lines.append(f"{host}[default{local}]:step {step} | loss {loss} | lr 0.0001")
    return lines


@pytest.mark.parametrize("sick", ["node1", "node2"])
def test_pdsh_log_names_the_node_whose_loss_went_nan(tmp_path: Path, sick: str) -> None:
    """pdsh prints each node's output after the other's: the healthy node's local rank 0
    ends with finite losses, which must not count as the sick one recovering."""
    lines = [*_node_lines("node1: ", 20 if sick == "node1" else None),
             *_node_lines("node2: ", 20 if sick == "node2" else None)]
    path = tmp_path / "pdsh.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"
    evidence = diagnosis.root_cause.evidence[0]
    assert evidence.host == sick and "loss nan" in evidence.text
    assert [a.rank for a in diagnosis.anomalies if a.kind == "loss-nan"] == [None], "no global rank is known"


def test_per_node_files_keep_their_curves_apart(tmp_path: Path) -> None:
    (tmp_path / "node-a.log").write_text("\n".join(_node_lines("", 20)) + "\n")
    (tmp_path / "node-b.log").write_text("\n".join(_node_lines("", None)) + "\n")
    diagnosis = diagnose([str(tmp_path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"
    assert Path(diagnosis.root_cause.evidence[0].source).name == "node-a.log"


def test_one_node_keeps_local_ranks_as_ranks(tmp_path: Path) -> None:
    path = tmp_path / "one-node.log"
    path.write_text("\n".join(_node_lines("", 20)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"
    assert [a.rank for a in diagnosis.anomalies if a.kind == "loss-nan"] == [0]
