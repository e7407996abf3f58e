"""The scanner's non-finite metric key: every common metric shape of a NaN or inf loss is
found, and the per-iteration counters that merely name NaN never reach Python."""

from __future__ import annotations

from pathlib import Path

import hyperscan
import pytest

from traintriage.ingest.sources import Source
from traintriage.match.compiler import PatternKind, load_scanner, split_flags
from traintriage.match.internal import INTERNAL_PATTERNS, Internal
from traintriage.match.scan import scan_source

MEGATRON_STEP = (
    " iteration      120/   10000 | consumed samples:        61440 | elapsed time per iteration (ms): 1843.2 |"
    " learning rate: 2.999E-04 | global batch size:   512 | lm loss: {loss} | loss scale: 65536.0 |"
    " grad norm: 1.231 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)

NAN_SHAPES = [
    "{'loss': nan, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.3}",
    "Epoch 0:  41%|####      | 410/1000 [01:02<01:30, 6.5it/s, loss=nan, v_num=3]",
    MEGATRON_STEP.format(loss="NAN"),
    "[INFO] [trainer.py:412] step 120 | loss nan | grad_norm 1.18 | lr 3.0e-04 | tokens/s 91582",
    "step 120 loss  -nan grad_norm 0.9",
    "[default3]:step 120 loss: inf | grad_norm: inf",
    "INFO:root:[Epoch 2][Batch 40], Speed: 96.1 samples/sec, CrossEntropy=nan, SmoothL1=nan",
    "2025-03-02 11:04:51,112 INFO: [train..][epoch:  1, iter:   2,400, lr:(1.000e-04,)] l_pix: nan l_percep: 3.1e-01",
]


def _nonfinite_ids() -> set[int]:
    table = load_scanner().table
    return {i for i, p in enumerate(table) if p.kind is PatternKind.internal and p.internal is Internal.metric_nonfinite}


def _scan(tmp_path: Path, text: str) -> object:
    path = tmp_path / "run.log"
    path.write_text(text)
    return scan_source(0, Source(name="run.log", path=path, size=path.stat().st_size), load_scanner())


@pytest.mark.parametrize("line", NAN_SHAPES)
def test_a_non_finite_loss_is_found_in_every_metric_shape(tmp_path: Path, line: str) -> None:
    scan = _scan(tmp_path, "step 119 loss 2.31\n" + line + "\nstep 121 loss 2.30\n")
    ids = _nonfinite_ids()
    assert [hit.line for hit in scan.hits if ids & set(hit.patterns)] == [2]  # type: ignore[attr-defined]


def test_megatron_nan_iteration_counter_is_not_a_non_finite_loss(tmp_path: Path) -> None:
    scan = _scan(tmp_path, "\n".join(MEGATRON_STEP.format(loss="2.310E+00") for _ in range(50)) + "\n")
    ids = _nonfinite_ids()
    assert not [hit for hit in scan.hits if ids & set(hit.patterns)]  # type: ignore[attr-defined]


def _fast_matches(text: str) -> int:
    """How often the fast (Hyperscan) keys of the non-finite pattern fire on `text`: each
    match costs a Python callback and a confirm search."""
    keys = [p.pattern for p in INTERNAL_PATTERNS if p.kind is Internal.metric_nonfinite]
    bodies, flags = zip(*(split_flags(regex) for regex in keys), strict=True)
    database = hyperscan.Database()
    database.compile(expressions=[b.encode() for b in bodies], ids=list(range(len(keys))),
                     elements=len(keys), flags=list(flags))
    matches: list[int] = []
    database.scan(text.encode(), match_event_handler=lambda *args: matches.append(args[0]))
    return len(matches)


def test_the_nan_iteration_counter_costs_no_callback() -> None:
    assert _fast_matches(MEGATRON_STEP.format(loss="2.310E+00")) == 0
    assert _fast_matches("number OF  NaN iterations: 0") == 0
    assert _fast_matches(MEGATRON_STEP.format(loss="NAN")) >= 1  # the loss itself still fires
