"""Internal patterns keep up with the wordings current tools print."""

from __future__ import annotations

import pytest

from traintriage.match.compiler import load_scanner, matching_patterns
from traintriage.match.internal import Internal


@pytest.mark.parametrize(
    "line",
    [
        "Thread 0x00007f3a9c1ff6c0 (most recent call first):",
        "Thread 0x00007f3a9c1ff6c0 [pt_autograd_0] (most recent call first):",  # Python 3.14 names the thread
        "Current thread 0x00007f3aa2b4e740 [python] (most recent call first):",
    ],
)
def test_faulthandler_thread_headers_are_stack_dumps(line: str) -> None:
    scanner = load_scanner()
    assert set(matching_patterns(scanner, line)) & set(scanner.by_internal(Internal.stack_dump))


@pytest.mark.parametrize(
    "line",
    [
        "F1107 09:12:41.907733 30211 syncedmem.cpp:51] Check failed: (cudaMalloc(&gpu_ptr_, size_)) == cudaSuccess (2 vs. 0)",
        # abseil's prefix before its clock is set, glued to a progress bar that ended without a newline
        "12/40 [=====>......] - loss: 0.8812F0000 00:00:1751203366.114872   90211 gpu_event_mgr.cc:208] Unexpected Event status: 1",
    ],
)
def test_glog_and_abseil_fatal_lines_are_failure_evidence(line: str) -> None:
    scanner = load_scanner()
    assert set(matching_patterns(scanner, line)) & set(scanner.by_internal(Internal.fatal_line))


def test_abseil_info_lines_are_not_fatal() -> None:
    scanner = load_scanner()
    line = "I0000 00:00:1751203366.114872   90211 service.cc:152] XLA service 0x55d1 initialized for platform CUDA"
    assert not set(matching_patterns(scanner, line)) & set(scanner.by_internal(Internal.fatal_line))


def test_thc_cublas_errors_are_failure_evidence() -> None:
    scanner = load_scanner()
    line = ("/opt/torch/bin/lua: /opt/torch/share/lua/5.2/nn/Linear.lua:66: cublas runtime error : "
            "an internal operation failed at /opt/torch/extra/cutorch/lib/THC/THCBlas.cu:246")
    assert set(matching_patterns(scanner, line)) & set(scanner.by_internal(Internal.fatal_line))
