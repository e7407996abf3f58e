"""cuda-oom-fragmentation only when the idle cache is large, not whenever it covers the request.

Messages are written in the wording of c10/cuda/CUDACachingAllocator.cpp (2.x) and of the
1.x allocator (`reserved in total by PyTorch`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.analyze.refine import is_fragmented, oom_numbers
from traintriage.pipeline import diagnose

NEW = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req}. GPU 0 has a total capacity of {total} "
       "of which {free} is free. {procs}Of the allocated memory {alloc} is allocated by PyTorch, and {unalloc} is "
       "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
OLD = ("RuntimeError: CUDA out of memory. Tried to allocate {req} (GPU 0; {total} total capacity; {alloc} already "
       "allocated; {free} free; {reserved} reserved in total by PyTorch) If reserved memory is >> allocated memory try "
       "setting max_split_size_mb to avoid fragmentation.")

CASES = {
    # the cache holds a third of the process's memory idle, more than the request: fragmented
    "large idle cache": (NEW.format(req="3.50 GiB", total="79.15 GiB", free="1.10 GiB",
                                    procs="Including non-PyTorch memory, this process has 77.90 GiB memory in use. ",
                                    alloc="51.20 GiB", unalloc="26.05 GiB"), True),
    # idle cache covers the request but is 5% of what the process holds: the card is simply full
    "small share of a full card": (NEW.format(req="2.96 GiB", total="79.25 GiB", free="1.16 GiB",
                                              procs="Including non-PyTorch memory, this process has 78.08 GiB memory "
                                              "in use. ", alloc="72.80 GiB", unalloc="4.37 GiB"), False),
    # most of the card belongs to other processes: the idle cache is not the problem
    "card full of other processes": (NEW.format(req="512.00 MiB", total="23.64 GiB", free="20.00 MiB",
                                                procs="Process 4412 has 20.10 GiB memory in use. Including non-PyTorch "
                                                "memory, this process has 3.50 GiB memory in use. ",
                                                alloc="1.60 GiB", unalloc="1.40 GiB"), False),
    # old wording: reserved 8.28 GiB against 1.54 GiB allocated
    "old wording, reserved >> allocated": (OLD.format(req="6.05 GiB", total="15.78 GiB", alloc="1.54 GiB",
                                                      free="6.05 GiB", reserved="8.28 GiB"), True),
    # old wording: a 24 GiB card where this process holds half and the rest is someone else's
    "old wording, others hold the rest": (OLD.format(req="258.00 MiB", total="23.54 GiB", alloc="11.75 GiB",
                                                     free="572.50 MiB", reserved="12.40 GiB"), False),
    # idle cache smaller than the request: plain shortage whatever the share
    "request larger than the idle cache": (NEW.format(req="30.00 GiB", total="79.15 GiB", free="1.10 GiB",
                                                      procs="", alloc="51.20 GiB", unalloc="26.05 GiB"), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fragmentation_reading(name: str) -> None:
    text, expected = CASES[name]
    numbers = oom_numbers(text)
    assert numbers is not None
    assert is_fragmented(numbers) is expected


@pytest.mark.parametrize("name", ["large idle cache", "small share of a full card", "card full of other processes"])
def test_the_diagnosis_follows_the_numbers(tmp_path: Path, name: str) -> None:
    text, expected = CASES[name]
    path = tmp_path / "oom.log"
    path.write_text('Traceback (most recent call last):\n  File "/workspace/train.py", line 88, in step\n' + text + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None
    assert diagnosis.root_cause.id == ("cuda-oom-fragmentation" if expected else "cuda-oom")


def test_zero_bytes_unit_is_read() -> None:
    numbers = oom_numbers(NEW.format(req="5.96 GiB", total="23.69 GiB", free="5.25 GiB", procs="", alloc="17.88 GiB",
                                     unalloc="0 bytes"))
    assert numbers is not None and numbers.unallocated == 0 and not is_fragmented(numbers)
