"""Training-curve points (step, loss, grad norm, learning rate, step time) from log lines.

Formats: Hugging Face Trainer dicts (`{'loss': 2.3, 'grad_norm': 1.1, ...}`), Lightning
progress bars (`loss=2.31`), Megatron (`iteration 100/ 1000 | ... | lm loss: 2.3E+00 |`),
DeepSpeed, plain `step N loss X` and `key=value` lines. Curves are sampled per window
of the input, so parsing stays a small fraction of the scan on huge logs; non-finite
values are found exactly by the scanner itself, not by sampling.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from traintriage.parse.prefix import parse_prefix

_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Infinity|-inf)"
_LOSS = re.compile(r"(?<![\w/])(?:lm |train[_/])?loss['\"]?\s*[:=]?\s*['\"]?(" + _NUMBER + r")(?![\w.])", re.I)
_GRAD = re.compile(r"grad[_ ]?norm['\"]?\s*[:=]?\s*['\"]?(" + _NUMBER + r")(?![\w.])", re.I)
_LR = re.compile(r"(?:learning[_ ]rate|\blr)['\"]?\s*[:=]\s*['\"]?(" + _NUMBER + r")(?![\w.])", re.I)
_STEP = re.compile(r"(?:\bglobal[_ ]step|\bstep|\biteration|\biter)\s*[:=]?\s*\[?\s*(\d+)", re.I)
_STEP_TIME = re.compile(
    r"(?:elapsed time per iteration \(ms\)|step[_ ]time|iter[_ ]time|\btime)\s*[:=]?\s*(\d+\.?\d*)\s*(ms|s)?\b", re.I
)
_THROUGHPUT = re.compile(r"(\d+\.?\d*)\s*(?:samples/s|tokens/s|it/s|samples/sec|tokens/sec)|"
                         r"(?:samples_per_second|tokens_per_second|throughput)['\"]?\s*[:=]\s*(\d+\.?\d*)", re.I)

WINDOW = 1 << 20
PER_WINDOW = 64
SAMPLE_ABOVE = 4 << 20


@dataclass(frozen=True)
class MetricPoint:
    source: int
    line: int
    rank: int | None
    step: int | None
    loss: float | None
    grad_norm: float | None = None
    lr: float | None = None
    step_time: float | None = None
    throughput: float | None = None
    time: float | None = None


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_metric_line(line: str, source: int, number: int, rank: int | None = None) -> MetricPoint | None:
    """A point when the line reports a loss; None for lines that only mention the word."""
    prefix = parse_prefix(line)
    body = prefix.message
    loss_match = _LOSS.search(body)
    if not loss_match:
        return None
    loss = _float(loss_match.group(1))
    step_match = _STEP.search(body)
    step_time: float | None = None
    time_match = _STEP_TIME.search(body)
    if time_match:
        step_time = _float(time_match.group(1))
        if step_time is not None and (time_match.group(2) == "ms" or "(ms)" in time_match.group(0)):
            step_time /= 1000.0
    throughput_match = _THROUGHPUT.search(body)
    throughput = None
    if throughput_match:
        throughput = _float(throughput_match.group(1) or throughput_match.group(2))
    grad = _GRAD.search(body)
    lr = _LR.search(body)
    return MetricPoint(
        source=source,
        line=number,
        rank=prefix.rank if prefix.rank is not None else rank,
        step=int(step_match.group(1)) if step_match else None,
        loss=loss,
        grad_norm=_float(grad.group(1)) if grad else None,
        lr=_float(lr.group(1)) if lr else None,
        step_time=step_time,
        throughput=throughput,
        time=prefix.time.timestamp() if prefix.time else None,
    )


class MetricSampler:
    """Every loss line of a small chunk; about PER_WINDOW evenly spaced per WINDOW of a big one."""

    def feed(self, chunk: bytes, line_base: int, source: int, out: list[MetricPoint]) -> None:
        counted_to = 0
        lines_before = 0
        stride = WINDOW // PER_WINDOW if len(chunk) > SAMPLE_ABOVE else 0
        for window_start in range(0, len(chunk), WINDOW):
            window_end = min(window_start + WINDOW, len(chunk))
            position = window_start
            while True:
                found = chunk.find(b"oss", position, window_end)
                if found < 1:
                    break
                start = chunk.rfind(b"\n", 0, found) + 1
                stop = chunk.find(b"\n", found)
                stop = stop if stop >= 0 else len(chunk)
                position = stop + 1
                if chunk[found - 1 : found] not in (b"l", b"L"):
                    continue
                lines_before += chunk.count(b"\n", counted_to, start)
                counted_to = start
                text = chunk[start:stop].decode("utf-8", "replace")
                if "\r" in text:
                    text = text.rsplit("\r", 1)[-1] or text.replace("\r", "")
                point = parse_metric_line(text, source, line_base + lines_before + 1)
                if point is not None and point.loss is not None:
                    out.append(point)
                    position += stride


def is_finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
