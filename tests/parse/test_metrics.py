"""Training-curve lines in the formats the common frameworks print."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from traintriage.ingest.sources import Source
from traintriage.match.compiler import load_scanner
from traintriage.match.scan import scan_source
from traintriage.parse.metrics import MetricSampler, parse_metric_line


@pytest.mark.parametrize(
    ("line", "step", "loss"),
    [
        ("step 120 loss 2.3456 lr 3e-4", 120, 2.3456),
        ("[rank0] step=7 loss=nan grad_norm=inf", 7, math.nan),
        (" iteration      100/    1000 | consumed samples: 3200 | elapsed time per iteration (ms): 812.3 | "
         "learning rate: 1.5E-04 | lm loss: 3.217E+00 | grad norm: 1.043 |", 100, 3.217),
        ("{'loss': 1.9832, 'grad_norm': 0.713, 'learning_rate': 4.9e-05, 'epoch': 0.12}", None, 1.9832),
        ("Epoch 0:  45%|####5     | 45/100 [00:03<00:04, 12.3it/s, v_num=0, train_loss=0.512]", None, 0.512),
        # kohya sd-scripts' tqdm postfix: the running average of the training loss
        ("steps:  12%|#2        | 120/1000 [01:40<12:13,  1.20it/s, avr_loss=0.0921]", None, 0.0921),
        ("epoch 3 | step 400 | avg_loss 1.207", 400, 1.207),
        # a loss key that names its aggregate (HiFi-GAN's console line)
        ("Steps : 40, Gen Loss Total :  nan, Mel-Spec. Error : 2.021, s/b : 0.443", None, math.nan),
        # Lightning pads a progress-bar value to five characters, NaN too
        ("Epoch 1:  52%|#####2    | 33/64 [00:01<00:01, 30.2it/s, v_num=3, train_loss=nan.0]", None, math.nan),
        # PaddlePaddle prints the loss as its one-element array
        ("2026-12-03 10:41:07,118-INFO: Total iter: 10, epoch: 0, batch: 10, loss: [7.402214]", 10, 7.402214),
        ("2026-12-03 10:41:08,402-INFO: Total iter: 20, epoch: 0, batch: 20, loss: [nan]", 20, math.nan),
    ],
)
def test_loss_and_step(line: str, step: int | None, loss: float) -> None:
    point = parse_metric_line(line, 0, 1)
    assert point is not None
    assert point.step == step
    assert point.loss is not None
    assert (math.isnan(loss) and math.isnan(point.loss)) or point.loss == pytest.approx(loss)


def test_a_nan_loss_term_is_a_nan_loss_when_the_line_has_no_loss_of_its_own() -> None:
    point = parse_metric_line("step:12 - actor/entropy:0.41 - actor/pg_loss:nan - actor/grad_norm:0.9", 0, 1)
    assert point is not None and point.step == 12 and point.loss is not None and math.isnan(point.loss)
    finite = parse_metric_line("step:12 - actor/pg_loss:0.03 - actor/vf_loss:nan - loss: 1.25", 0, 1)
    assert finite is not None and finite.loss == pytest.approx(1.25)
    assert parse_metric_line("epoch 0 - best_val_loss: inf", 0, 1) is None
    assert parse_metric_line("epoch 0 - val_loss: 0.93", 0, 1) is None


def test_a_boosting_rounds_nan_metric_is_a_nan_loss_and_its_other_values_no_point() -> None:
    """XGBoost's and LightGBM's evaluation lines: NaN in any metric is a NaN objective; a finite
    value makes no point (an auc rises as the model improves)."""
    for line in ("[3]\ttrain-gamma-nloglik:nan", "[40]\tvalid_0's l2: nan",
                 "[12]\tvalidation_0-rmse:0.4012\tvalidation_1-rmse:nan"):
        point = parse_metric_line(line, 0, 1)
        assert point is not None and point.loss is not None and math.isnan(point.loss), line
    assert parse_metric_line("[3]\ttrain-auc:0.8812\teval-auc:0.8519", 0, 1) is None
    assert parse_metric_line("[40]\tvalid_0's binary_error: 0.1183", 0, 1) is None


def test_megatron_step_time_in_ms_is_seconds() -> None:
    point = parse_metric_line(" iteration 5/ 10 | elapsed time per iteration (ms): 250.0 | lm loss: 2.0 |", 0, 1)
    assert point is not None and point.step_time == pytest.approx(0.25)


def test_word_loss_without_value_is_not_a_point() -> None:
    assert parse_metric_line("Using CrossEntropyLoss with label smoothing", 0, 1) is None


def test_scan_numbers_metric_lines_and_reads_rank_prefix(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_bytes(b"init\n[default1]:step 1 loss 2.0\nnoise\n[default1]:step 2 loss 1.5\n")
    scan = scan_source(0, Source(name="run.log", path=path, size=path.stat().st_size), load_scanner())
    assert [(p.line, p.rank, p.step) for p in scan.metrics] == [(2, 1, 1), (4, 1, 2)]


def test_big_sources_are_sampled_evenly() -> None:
    sampler = MetricSampler(source_size=400 << 20)
    chunk = b"".join(b"step %d loss 2.0\n" % i for i in range(100_000))
    spans = sampler.spans(chunk)
    assert 0 < len(spans) < 200
    assert spans[-1][0] > len(chunk) * 0.9


def test_the_fp16_loss_scale_is_no_loss() -> None:
    point = parse_metric_line("iteration 30 | loss scale: 65536.0 | grad norm: 1.2", 0, 1)
    assert point is None or point.loss is None


def test_a_json_lines_record_gives_its_rank_step_rate_and_data_wait() -> None:
    line = '{"rank": 3, "step": 26, "loss": 2.81, "lr": 0.0005, "tokens_per_sec": 2240.3, "data_ms": 202.9}'
    point = parse_metric_line(line, source=0, number=7)
    assert point is not None
    assert (point.rank, point.step, point.loss, point.throughput) == (3, 26, 2.81, 2240.3)
    assert point.data_time is not None and abs(point.data_time - 0.2029) < 1e-9


def test_a_prefix_rank_wins_over_a_records_rank_key() -> None:
    point = parse_metric_line('[rank1]: {"rank": 0, "step": 4, "loss": 3.2}', source=0, number=1)
    assert point is not None and point.rank == 1
