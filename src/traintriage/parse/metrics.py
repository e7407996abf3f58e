"""Training-curve points (step, loss, grad norm, learning rate, step time) from log lines.

Formats: Hugging Face Trainer dicts (`{'loss': 2.3, 'grad_norm': 1.1, ...}`), Lightning
progress bars (`loss=2.31`), Megatron (`iteration 100/ 1000 | ... | lm loss: 2.3E+00 |`),
DeepSpeed, plain `step N loss X` and `key=value` lines. Curves are sampled evenly across
a big input, so parsing stays a small fraction of the scan; non-finite values are found
exactly by the scanner itself, not by sampling.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from traintriage.parse.prefix import parse_prefix

# Searched in the lower-cased message, case-sensitively: Python's `re` skips ahead to a
# pattern's literal only without IGNORECASE, and these run on every sampled line of a big log.
# Lightning pads a progress-bar value to five characters, non-finite ones too: `train_loss=nan.0`.
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|(?:nan|inf(?:inity)?)(?:\.0{1,8})?)"
# A number may end a sentence (`ends with loss NaN.`), but not run on into more digits or a word.
# OpenNMT-py names its loss by the cross-entropy it is (`ppl:  8.43; xent: 2.13;`).
_AGGREGATE = r"[ _](?:total|avg|mean|sum)"
LOSS_AGGREGATE = r"(?:" + _AGGREGATE + r")?"
"""A loss key may name its aggregate after the word (HiFi-GAN's `Gen Loss Total : 141.385`), but not any
word: `loss scale: 65536` is the fp16 loss scaler's."""
# A value may be a one-element list: PaddlePaddle prints a loss as its numpy array (`loss: [10.000229]`).
_LOSS = re.compile(r"(?<![\w/])(?:(?:lm |train[_/]|av[gr]_)?loss(?:_?value|" + _AGGREGATE + r")?|xent)['\"]?\s*(?:is\s+)?[:=]?\s*['\"]?\[?("
                   + _NUMBER + r")(?!\w|\.\w)")
LOSS_TERM_NAMES = r"loss|crossentropy|cross_entropy|smoothl1|\bl_[a-z]{1,12}"
"""Keys of a loss term (lower-cased): any key with the word loss, and the names GluonCV logs its
losses by (`CrossEntropy=nan, SmoothL1=nan`) and BasicSR's (`l_pix`, `l_percep`, `l_g_gan`)."""
_TERM_NAN = re.compile(r"(?:" + LOSS_TERM_NAMES + r")" + LOSS_AGGREGATE + r"['\"]?\s*[:=]\s*['\"]?\[?[-+]?nan(?:\.0{1,8})?(?![\w.])")
"""A NaN in any loss term (`actor/pg_loss:nan`, `kl_loss=nan`, `l_pix: nan`): the objective they
sum to is NaN too. Read only when the line reports no loss of its own, and NaN only: `best_loss:
inf` is a tracker's starting value, not a diverged run."""
GBM_EVAL_NAN = r"\s{0,8}\[\d{1,7}\]\s{1,8}[^\n]{0,300}?(?:-|'s )[\w@.-]{1,40}:\s?[-+]?nan(?![\w.])"
"""A gradient-boosting round's evaluation line with a NaN metric: XGBoost's `[3]\ttrain-rmse:nan`
(`[round]\t<data>-<metric>:<value>`), LightGBM's `[40]\tvalid_0's l2: nan`. Read for NaN only: the
metric may be one that rises as the model improves (auc, ndcg), so its values make no loss curve."""
_GBM_EVAL_NAN = re.compile(GBM_EVAL_NAN)
_GRAD = re.compile(r"grad[_ ]?norm['\"]?\s*[:=]?\s*['\"]?(" + _NUMBER + r")(?![\w.])")
_LR = re.compile(r"(?:learning[_ ]rate|\blr)['\"]?\s*[:=]\s*['\"]?(" + _NUMBER + r")(?![\w.])")
_STEP = re.compile(r"(?:\bglobal[_ ]step|\bstep|\biteration|\biter)['\"]?\s*[:=]?\s*\[?\s*(\d+)")
_STEP_TIME = re.compile(
    r"(?:elapsed time per iteration \(ms\)|step[_ ]time|iter[_ ]time|\btime)['\"]?\s*[:=]?\s*(\d+\.?\d*)\s*(ms|s)?\b"
)
# `data_time: 0.0166` (a key that says it is a time), or `data 83.1ms` / `(data 60.3 ms)` with a unit
_DATA_TIME = re.compile(r"\bdata[_ ]time['\"]?\s*[:=]?\s*(\d+\.?\d*)\s*(ms|s)?\b|\bdata[ :=]\s?(\d+\.?\d*)\s?(ms|s)\b")
# ... or a key that carries its unit (`"data_ms": 202.9` in a JSON-lines record)
_DATA_MS = re.compile(r"\bdata(?:_wait|_time)?_ms['\"]?\s*[:=]\s*(\d+\.?\d*)")
# A rate is a number before its unit (`91582 tokens/s`, tqdm's `5.37it/s`) or after its key:
# the unit is found first and the number read just before it, not tried at every digit.
_RATE_UNIT = re.compile(r"(?:samples|tokens)/s(?:ec)?|it/s")
_NUMBER_BEFORE_UNIT = re.compile(r"(\d+\.?\d*)\s*$")
_RATE_KEY = re.compile(r"(?:samples_per_sec(?:ond)?|tokens_per_sec(?:ond)?|throughput)['\"]?\s*[:=]\s*(\d+\.?\d*)")
# The process's rank as a key of a JSON-lines or dict record (`{"rank": 1, "step": 31, "loss": 4.58, ...}`),
# read only when no prefix and no per-rank file names it.
_RECORD_RANK = re.compile(r"[\"']rank[\"']\s*:\s*(\d{1,6})\b")
UNIT_LOOKBACK = 48

MAX_POINTS = 4000
MAX_TEXT = 400
TYPICAL_LINE_BYTES = 100


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
    text: str = ""
    host: str | None = None
    local_rank: int | None = None
    """torchrun's local-rank tag of the line: with `host`, it tells whether the log spans nodes."""
    local_only: bool = False
    """`rank` is only the local-rank tag (no global tag, no per-rank file): the analysis keeps
    it as the rank only when the log shows one node."""
    data_time: float | None = None
    """Seconds the step waited for its batch (`data 83.1ms`, mmengine's `data_time: 0.0166`): in
    synchronous data parallelism every rank's step time includes waiting for the slowest, so a
    slow input pipeline shows only here."""


_PADDED_NONFINITE = re.compile(r"([-+]?(?:nan|inf(?:inity)?))\.0+$")


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    padded = _PADDED_NONFINITE.match(text)
    try:
        return float(padded.group(1) if padded else text)
    except ValueError:
        return None


def _search_from(pattern: re.Pattern[str], text: str, literals: tuple[str, ...], back: int = 0) -> re.Match[str] | None:
    """`pattern.search(text)`, begun where its first match can start: each of its matches holds one of
    `literals` at most `back` characters after its start. Python's `re` skips ahead to a literal only in
    a pattern that opens with one; these open with a look-behind, a word boundary or an alternation and
    were tried at every position (60 us on one Megatron line). A look-behind still sees the text before."""
    found = [at for at in map(text.find, literals) if at >= 0]
    return pattern.search(text, max(0, min(found) - back)) if found else None


def parse_metric_line(line: str, source: int, number: int, rank: int | None = None) -> MetricPoint | None:
    """A point when the line reports a loss or a grad norm; None for lines that only mention them."""
    prefix = parse_prefix(line)
    lower = prefix.message.lower()
    loss_match = _search_from(_LOSS, lower, ("loss", "xent"), back=len("train_"))
    loss = _float(loss_match.group(1)) if loss_match else None
    if loss is None and "nan" in lower and (_TERM_NAN.search(lower) or _GBM_EVAL_NAN.match(lower)):
        loss = math.nan
    grad = _GRAD.search(lower) if "norm" in lower else None
    if loss is None and not grad:
        return None
    step_match = _search_from(_STEP, lower, ("global", "step", "iter"))
    step_time: float | None = None
    time_match = _search_from(_STEP_TIME, lower, ("elapsed", "step", "iter", "time"))
    if time_match:
        step_time = _float(time_match.group(1))
        if step_time is not None and (time_match.group(2) == "ms" or "(ms)" in time_match.group(0)):
            step_time /= 1000.0
    lr = _search_from(_LR, lower, ("learning", "lr"))
    data_match = _search_from(_DATA_TIME, lower, ("data",))
    data_time = _float(data_match.group(1) or data_match.group(3)) if data_match else None
    if data_time is not None and data_match is not None and "ms" in (data_match.group(2), data_match.group(4)):
        data_time /= 1000.0
    if data_time is None and "_ms" in lower:
        data_ms = _DATA_MS.search(lower)
        data_time = float(data_ms.group(1)) / 1000.0 if data_ms else None
    if prefix.rank is None and rank is None and "rank" in lower:
        record_rank = _RECORD_RANK.search(lower)
        rank = int(record_rank.group(1)) if record_rank else None
    return MetricPoint(
        source=source,
        line=number,
        # a per-process curve: torchrun's local rank still separates the processes of one console
        rank=next((r for r in (prefix.rank, rank, prefix.local_rank) if r is not None), None),
        step=int(step_match.group(1)) if step_match else None,
        loss=loss,
        grad_norm=_float(grad.group(1)) if grad else None,
        lr=_float(lr.group(1)) if lr else None,
        step_time=step_time,
        throughput=_throughput(lower),
        time=prefix.time.timestamp() if prefix.time else None,
        text=line[:MAX_TEXT],
        host=prefix.host,
        local_rank=prefix.local_rank,
        local_only=prefix.rank is None and rank is None and prefix.local_rank is not None,
        data_time=data_time,
    )


def _throughput(lower: str) -> float | None:
    """The first rate the line reports, by unit or by key, whichever comes first."""
    if "/s" not in lower and "per_sec" not in lower and "throughput" not in lower:
        return None
    found: tuple[int, str] | None = None
    for unit in _RATE_UNIT.finditer(lower):
        before = _NUMBER_BEFORE_UNIT.search(lower, max(0, unit.start() - UNIT_LOOKBACK), unit.start())
        if before:
            found = (before.start(), before.group(1))
            break
    keyed = _RATE_KEY.search(lower)
    if keyed and (found is None or keyed.start() < found[0]):
        found = (keyed.start(), keyed.group(1))
    return _float(found[1]) if found else None


class MetricSampler:
    """Picks which loss lines of a chunk to parse: all of them in a small log, an evenly
    spaced sample of about `budget` points in a big one. Memory stays bounded whatever the
    input: past twice the budget, `thin` halves the points kept and doubles the stride.
    A budget of 0 (a log of a fleet whose points went to other logs) samples nothing."""

    def __init__(self, source_size: int | None, budget: int = MAX_POINTS) -> None:
        self.budget = budget
        expected_lines = (source_size or 0) // TYPICAL_LINE_BYTES
        self.stride = (source_size or 0) // budget if budget and expected_lines > budget else 0

    def thin(self, points: list[MetricPoint]) -> list[MetricPoint]:
        if len(points) <= 2 * self.budget:
            return points
        self.stride = max(2 * self.stride, 1024)
        return points[::2]

    def spans(self, chunk: bytes | bytearray, limit: int | None = None) -> list[tuple[int, int]]:
        """(start, stop) byte offsets of the sampled lines of `chunk[:limit]` that mention a loss."""
        limit = len(chunk) if limit is None else limit
        found: list[tuple[int, int]] = []
        if not self.budget:
            return found
        position = 0
        while True:
            hit = chunk.find(b"oss", position, limit)
            if hit < 1:
                return found
            start = chunk.rfind(b"\n", 0, hit) + 1
            stop = chunk.find(b"\n", hit, limit)
            stop = stop if stop >= 0 else limit
            position = stop + 1
            if chunk[hit - 1 : hit] in (b"l", b"L"):
                found.append((start, stop))
                position += self.stride


PROGRESS_STATES = 16
"""States of one progress-bar line read at most: a tqdm or Lightning bar captured to a file is one
line that redrew itself with `\r` on every step, so its postfix (`loss=2.31`) holds the curve."""


def progress_states(line: bytes) -> list[bytes]:
    """The line itself, or for a line a progress bar redrew with `\r`, up to PROGRESS_STATES of its
    states spread evenly along it, the first and the last included (found from byte offsets, not by splitting:
    a bar of a long run is one line of megabytes)."""
    if b"\r" not in line:
        return [line]
    states: list[bytes] = []
    starts: set[int] = set()
    for k in range(PROGRESS_STATES):
        start = line.rfind(b"\r", 0, 1 + (len(line) - 1) * k // (PROGRESS_STATES - 1)) + 1
        stop = line.find(b"\r", start)
        state = line[start : stop if stop >= 0 else len(line)]
        if start not in starts and state.strip():
            starts.add(start)
            states.append(state)
    return states or [line.replace(b"\r", b"")]


def parse_sampled(text: bytes, source: int, number: int, rank: int | None = None) -> MetricPoint | None:
    line = text.decode("utf-8", "replace")
    if "\r" in line:
        line = line.rsplit("\r", 1)[-1] or line.replace("\r", "")
    return parse_metric_line(line, source, number, rank)
