"""Training-curve lines in the formats the common frameworks print."""

from __future__ import annotations

import math

import pytest

from traintriage.parse.metrics import MetricPoint, MetricSampler, parse_metric_line


@pytest.mark.parametrize(
    ("line", "step", "loss"),
    [
        ("step 120 loss 2.3456 lr 3e-4", 120, 2.3456),
        ("[rank0] step=7 loss=nan grad_norm=inf", 7, math.nan),
        (" iteration      100/    1000 | consumed samples: 3200 | elapsed time per iteration (ms): 812.3 | "
         "learning rate: 1.5E-04 | lm loss: 3.217E+00 | grad norm: 1.043 |", 100, 3.217),
        ("{'loss': 1.9832, 'grad_norm': 0.713, 'learning_rate': 4.9e-05, 'epoch': 0.12}", None, 1.9832),
        ("Epoch 0:  45%|####5     | 45/100 [00:03<00:04, 12.3it/s, v_num=0, train_loss=0.512]", None, 0.512),
    ],
)
def test_loss_and_step(line: str, step: int | None, loss: float) -> None:
    point = parse_metric_line(line, 0, 1)
    assert point is not None
    assert point.step == step
    assert point.loss is not None
    assert (math.isnan(loss) and math.isnan(point.loss)) or point.loss == pytest.approx(loss)


def test_megatron_step_time_in_ms_is_seconds() -> None:
    point = parse_metric_line(" iteration 5/ 10 | elapsed time per iteration (ms): 250.0 | lm loss: 2.0 |", 0, 1)
    assert point is not None and point.step_time == pytest.approx(0.25)


def test_word_loss_without_value_is_not_a_point() -> None:
    assert parse_metric_line("Using CrossEntropyLoss with label smoothing", 0, 1) is None


def test_sampler_numbers_lines_and_reads_rank_prefix() -> None:
    chunk = b"init\n[default1]:step 1 loss 2.0\nnoise\n[default1]:step 2 loss 1.5\n"
    points: list[MetricPoint] = []
    MetricSampler().feed(chunk, 100, 0, points)
    assert [(p.line, p.rank, p.step) for p in points] == [(102, 1, 1), (104, 1, 2)]
