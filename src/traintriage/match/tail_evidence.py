"""Failure lines only the end of a log can show, read from the tail a scan keeps anyway.

These forms have no literal Hyperscan could look for cheaply, or mean a failure only where
the log stops:
- a line that starts with a module-qualified exception class and its message
  (`pyarrow.lib.ArrowInvalid: Column 1 ...`): how Python prints an exception whose class
  lives outside builtins, whatever the class is named (a pattern for it in the scan cost a
  quarter of the scan time on a metric-dense log: module names are common words);
- an error report of a tool or library that stops the program: `uncaught exception`, a line
  that opens with `<Name> Error (N)` (TensorRT's `[E] ... Error Code N:` is not one: its
  builder logs an out-of-memory tactic that way, skips it and goes on);
- Ray's scheduler waiting for resources no node has (STUCK_ON_RESOURCES);
- a last line at error level (`ERROR`, `FATAL`, `CRITICAL`) or one that reports an error or
  a failure in words (`Unknown OpenCL Error (221)`, `sbatch: error: Batch job submission
  failed: ...`, `Shard 0 failed to start`, `... was not successful`, a shell's `bash: line 1:
  14629 CPU time limit exceeded  python train.py` for a process a resource limit stopped, `Disk
  quota exceeded`), unless it is a warning or an info or debug line (also when only its level
  letter says so: glog's `W0806 ...`, also behind a launcher's `[default1]:` tag, TF's `: W
  tensorflow/...`, ONNX Runtime's `[W:onnxruntime:...]`), a retry or a fallback (`... failed on
  device; falling back to CPU`), a progress bar (cloud loggers tag stderr, where tqdm writes, as
  ERROR), the tracker's own console line (`wandb: ERROR ...`: wandb
  retries, and its fatal errors raise), the column header of nccl-tests' results table (its last
  column is `error`, the largest difference from the expected sum), advice about what a practice will or may cause
  (`Failure to do this will result in ...`), Slurm's note about an optional SPANK plugin, or a count
  or rate (`0 failed`, `error rate 0.04`). Measured on the tune halves of the blind rounds as
  each round's engine first saw them, it catches 32 of the 83 failures called healthy; it
  names none of the 182 healthy logs of the tune and development corpora (three of them, a
  wandb line, a SPANK note and a progress bar tagged ERROR, are why those exclusions exist).

Each runs on the last few lines only (bounded: at most TAIL_WINDOW lines of at most
MAX_TEXT characters), so the cost per source is fixed whatever the log's size. Each form is
tried with `match` or behind a substring test: a `search` for an alternation steps through
every position of every line (a third more time per small log of a fleet); the last-line
test searches one line per source.
"""

from __future__ import annotations

import re

TAIL_WINDOW = 12
"""Lines from the end searched for the exception and error-report forms."""

QUALIFIED_EXCEPTION = re.compile(r"(?:[a-z_][a-z0-9_]{0,40}\.){1,8}_?[A-Z][A-Za-z0-9]{0,60}[a-z][A-Za-z0-9]{0,60}: \S")
NOT_AN_ERROR = "Warning: "
"""A qualified class a run that goes on prints: a warning (`sklearn.exceptions.ConvergenceWarning:`)."""
UNCAUGHT = re.compile(r"\buncaught exception\b")
STUCK_ON_RESOURCES = ("cannot be scheduled right now", "pending placement groups", "pending tasks/actors",
                      "Waiting for creating a placement group")
"""Ray's scheduler still waiting for CPUs or GPUs no node can give, where the log stops: the autoscaler's
warning (`The following resource request cannot be scheduled right now: {'GPU': 1.0}`), its status
report's `Demands:` (`{'CPU': 2.0} * 1 (SPREAD): 1+ pending placement groups`), Ray Train's
`Waiting for creating a placement group of specs for 150 seconds`. A healthy run shows them only while
it scales up, and ends with its own lines after them."""
NAMED_ERROR_CODE = re.compile(r"\s{0,16}[A-Z][A-Za-z]{0,30}(?: [A-Z][A-Za-z]{0,30})? ?Error ?\(\d{1,5}\)")
# A last line that opens with its level, after at most a container tag (`algo-1  | `), a time
# stamp and a bracketed logger name (`[TensorRT] ERROR: ...`).
LAST_ERROR_LINE = re.compile(r"(?:[\w.-]{1,64}\s{1,8}\|\s{1,8})?(?:\[?[\d/:.,TZ -]{8,40}\]?\s{1,4})?"
                             r"(?:\[[A-Za-z][\w. -]{0,30}\]\s{1,4})?(?:ERROR|FATAL|CRITICAL)\b")
FAILURE_WORD = re.compile(r"(?i)\b(?:error|fail(?:ed|ure|s)?|unsuccessful|not successful|connection refused"
                          r"|(?:limit|quota) exceeded)\b")
NOT_A_FAILURE_REPORT = re.compile(
    r"(?i)warn|retry|\bfall(?:ing|s)?\s{1,4}back\b|\bINFO\b|\bDEBUG\b|\d%\||it/s\b|s/it\b|^\s{0,8}wandb:|\bspank:"
    r"|(?-i:\[[WIV]:|(?:^|[\]:>]\s?)[WI]\d{4} \d|: [WI] \S)"
    r"|\b(?:will|may|might|could|can)\s{1,4}(?:result|cause|lead)\b"
    r"|\balgbw\s{1,8}busbw\b"
    r"|\b(?:no|without|0)\s{1,4}(?:errors?|failures)\b|\b(?:passed|succeeded|ok),?\s{1,4}0\s{1,4}failed\b"
    r"|\berror(?:\s{0,4}rate)?\s{0,4}[:=]?\s{0,4}\d|fail\w{0,8}\s{0,4}[:=]\s{0,4}0\b")


def reports_a_failure(text: str) -> bool:
    """A last line at error level, or one that says in words that something failed, which is
    not a warning, a retry, a progress bar or a count (see the module's docstring)."""
    return ((LAST_ERROR_LINE.match(text) is not None or FAILURE_WORD.search(text) is not None)
            and NOT_A_FAILURE_REPORT.search(text) is None)


def tail_evidence(lines: list[str], last_line: int) -> list[tuple[int, str, bool]]:
    """(line number, text, is an exception line) of the failure lines among a log's last
    lines; `lines` end with line `last_line` of the log (blank lines included, as read)."""
    found: list[tuple[int, str, bool]] = []
    first = last_line - len(lines) + 1
    last_text = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), None)
    for index in range(max(0, len(lines) - TAIL_WINDOW), len(lines)):
        text = lines[index]
        qualified = QUALIFIED_EXCEPTION.match(text)
        if qualified and NOT_AN_ERROR not in qualified.group():
            found.append((first + index, text, True))
        elif (("uncaught exception" in text and UNCAUGHT.search(text)) or NAMED_ERROR_CODE.match(text)
              or any(stuck in text for stuck in STUCK_ON_RESOURCES)
              or (index == last_text and reports_a_failure(text))):
            found.append((first + index, text, False))
    return found
