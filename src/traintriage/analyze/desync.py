"""Ranks that waited in different collectives: a desync, not a hang.

Collectives are matched by order alone, so when one rank times out (or loses its peer) inside
`barrier` while another does inside `all_reduce`, the ranks were not running the same sequence
of collectives: a rank-dependent branch, an early exit, a skipped step. Each rank's timeout is
then a symptom; the mismatch is the cause. Ranks stuck in the same collective say nothing of
the kind (a peer that stalled or died leaves them all waiting at one call).
"""

from __future__ import annotations

from dataclasses import dataclass

from traintriage.analyze.observations import Observation, context_before
from traintriage.parse.traceback import TRACEBACK_HEADER, Frame, python_frames

_C10D = "distributed_c10d.py"
_BACKWARD = ("autograd/graph.py", "autograd/__init__.py")
"""The autograd engine's frames (`_engine_run_backward` from torch 2.3 on, `backward` before): a
rank failing there waited in DDP's gradient all-reduce, which the reducer starts from C++
without a frame of torch.distributed."""


@dataclass(frozen=True)
class Desync:
    observation: Observation
    detail: str


def collective_called(observation: Observation) -> str | None:
    """The torch.distributed function the rank's script called before the failure line (the
    outermost frame in distributed_c10d.py: `all_gather_object`, not the `all_gather` it calls in
    turn). Frameworks' tracebacks outgrow the context kept before a line, so the frames are
    read without their header when it is out of reach."""
    lines = context_before(observation)
    headers = [index for index, line in enumerate(lines) if TRACEBACK_HEADER in line]
    frames: list[Frame] = python_frames(lines[headers[-1] + 1:] if headers else lines)
    files = [frame.file.replace("\\", "/") for frame in frames]
    called = next((frame.function for frame, file in zip(frames, files, strict=True) if file.endswith(_C10D)), None)
    if called is None and any(file.endswith(_BACKWARD) for file in files):
        return "backward (DDP's gradient all-reduce)"
    return called


def mismatched_collectives(timeouts: list[Observation], closed: list[Observation]) -> Desync | None:
    """Two ranks whose communication failures were raised in different collectives: `timeouts`,
    the lines of collective timeouts, and `closed`, the lines of connections a peer closed."""
    timed_out = {o.order for o in timeouts}
    called: dict[int, tuple[str, Observation]] = {}
    for observation in sorted(timeouts + closed, key=lambda o: o.sort_key):
        if observation.rank is None or observation.rank in called:
            continue
        function = collective_called(observation)
        if function is not None:
            called[observation.rank] = (function, observation)
    callers: dict[str, list[Observation]] = {}
    for function, observation in called.values():
        callers.setdefault(function, []).append(observation)
    if len(callers) < 2:
        return None
    waits = ", ".join(f"rank {rank} in {function}" for rank, (function, _) in sorted(called.items()))
    return Desync(_odd_one(callers, timed_out), f"the ranks waited in different collectives: {waits}")


def _odd_one(callers: dict[str, list[Observation]], timed_out: set[int]) -> Observation:
    """The rank that took the other path, as far as the log tells: the one rank in a collective no
    other rank called, among three or more; else the one rank in `barrier` (the call that ends a
    loop, an epoch or a checkpoint: that rank left the others' sequence early); else one that waited
    out the timeout (a peer that lost its connection only saw that rank give up), the first of them."""
    alone = [observations[0] for observations in callers.values() if len(observations) == 1]
    if len(alone) == 1 and sum(len(observations) for observations in callers.values()) > 2:
        return alone[0]
    if len(callers.get("barrier", [])) == 1:
        return callers["barrier"][0]
    ranks = [o for observations in callers.values() for o in observations]
    return min(ranks, key=lambda o: (o.order not in timed_out, o.sort_key))
