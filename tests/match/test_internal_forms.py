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
