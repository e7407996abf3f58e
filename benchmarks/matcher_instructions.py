"""`make bench-instructions`: what the matcher costs per byte, counted in instructions, not seconds.

Seconds on a shared 2-core machine move by 2x between runs; instruction counts under valgrind's
callgrind do not. This counts, on 4 MB of two generated workloads (the console log of `make bench`
and its metric-dense variant), the instructions of:

- `rg -j1 -c -i error`, the baseline of issue 17's ratios;
- a Hyperscan scan of the same bytes for the one caseless literal `error` (Hyperscan doing rg's job);
- a Hyperscan scan with traintriage's whole compiled database (every KB signature, exclude and
  internal pattern, and the masker's prefilters), a match handler that does nothing.

Each figure is a run that scans minus the same run that does not (start-up, imports and loading the
database cancel out). It says how far any design that runs all these patterns over every byte
stays from `rg`, whatever the Python around it does.

usage: matcher_instructions.py   (needs valgrind and rg on PATH)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import write_console_log, write_metric_console_log  # noqa: E402

SAMPLE_BYTES = 4 << 20
_SCAN = """
import sys, hyperscan
from traintriage.match.compiler import load_scanner
data = open(sys.argv[2], "rb").read()
if sys.argv[1] == "all":
    database = load_scanner().database
else:
    database = hyperscan.Database()
    database.compile(expressions=[b"error"], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_CASELESS])
if sys.argv[3] == "scan":
    database.scan(data, match_event_handler=lambda *_: None, scratch=hyperscan.Scratch(database))
"""


def instructions(command: list[str]) -> int:
    """Instructions the command executes, by callgrind (its `I refs` total)."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                          capture_output=True, text=True, check=False)  # rg exits 1 when nothing matched
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no total for {command[0]}:\n{done.stderr[-400:]}")
    return int(found.group(1).replace(",", ""))


def per_byte(work: Path, sample: Path) -> dict[str, float]:
    size = sample.stat().st_size
    rg = instructions(["rg", "-j1", "-c", "-i", "error", str(sample)]) - instructions(
        ["rg", "-j1", "-c", "-i", "error", "/dev/null"])
    script = work / "scan.py"
    script.write_text(_SCAN)
    figures = {"rg -c -i error": rg / size}
    for label, which in (("hyperscan, literal `error`", "literal"), ("hyperscan, traintriage's database", "all")):
        scan = instructions([sys.executable, str(script), which, str(sample), "scan"])
        idle = instructions([sys.executable, str(script), which, str(sample), "idle"])
        figures[label] = (scan - idle) / size
    return figures


def main() -> None:
    if not shutil.which("valgrind") or not shutil.which("rg"):
        raise SystemExit("needs valgrind and rg (ripgrep) on PATH")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for name, write in (("console", write_console_log), ("metric-dense", write_metric_console_log)):
            sample = write(work / f"{name}.log", SAMPLE_BYTES)
            figures = per_byte(work, sample)
            baseline = figures["rg -c -i error"]
            print(f"{name} ({sample.stat().st_size >> 20} MB): instructions per byte")
            for label, value in figures.items():
                print(f"  {label:36} {value:6.2f}  ({value / baseline:5.1f}x rg)")


if __name__ == "__main__":
    main()
