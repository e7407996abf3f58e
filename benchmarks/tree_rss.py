"""Run a command and report its wall time, CPU time and the peak resident memory of its whole
process tree (worker processes included), sampled from /proc every 20 ms.

usage: python tree_rss.py CMD...   (stdout passes through; stderr gets "wall rss_kb cpu")
"""

from __future__ import annotations

import contextlib
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in task.read_text().split()]
    return found


def _tree_rss_kb(root: int) -> int:
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        stack += _children(pid)
    return total


def main() -> None:
    started = time.perf_counter()
    child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    peak = [0]

    def sample() -> None:
        while child.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kb(child.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = child.stdout.read() if child.stdout else b""
    child.wait()
    wall = time.perf_counter() - started
    sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kb = max(peak[0], usage.ru_maxrss)  # a run shorter than one sample still has its own peak
    sys.stderr.write(f"{wall:f} {peak_kb} {usage.ru_utime + usage.ru_stime:f}\n")
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
