"""A server diagnoses several uploads at once in threads of one process: they share the scanner."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from traintriage.pipeline import diagnose_bytes

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    loss.backward()\n"
)


def _log(index: int) -> bytes:
    steps = "".join(f"step {i} loss {2.0 - i / 1000:.3f}\n" for i in range(20_000))
    failure = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB." if index % 2 else (
        "RuntimeError: CUDA error: an illegal memory access was encountered")
    return (steps + TRACEBACK + failure + "\n").encode()


def test_concurrent_diagnoses_in_threads_each_get_their_own_answer() -> None:
    logs = [_log(i) for i in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda item: diagnose_bytes([(f"run{item[0]}.log", item[1])]), enumerate(logs)))
    ids = [d.root_cause.id if d.root_cause else None for d in results]
    assert ids == ["cuda-illegal-memory-access" if i % 2 == 0 else "cuda-oom" for i in range(8)]
