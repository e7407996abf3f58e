"""A line a class's own `excludes` excuses (a warning the run goes on without) stays a candidate only when
nothing else explains the failure: a later error of another class is what stopped the run."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

# torchvision's start-up warning, hard-wrapped by the terminal so that its second half reads like a loader error
_WRAPPED_WARNING = [
    "/opt/env/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python extension: libc10_cu",
    "da.so: cannot open shared object file: No such file or directory",
    '  warn(f"Failed to load image Python extension: {e}")',
]


def test_a_later_error_outranks_an_excused_warning(tmp_path: Path) -> None:
    log = [*_WRAPPED_WARNING, "building model", "Traceback (most recent call last):",
           '  File "/home/dev/seg/train.py", line 64, in <module>',
           "    writer = SummaryLogger(cfg['run_name'], run_id)",
           "NameError: name 'run_id' is not defined"]
    assert root_of(tmp_path, "\n".join(log) + "\n") == "user-code-exception"


def test_the_excused_warning_alone_still_names_the_failure(tmp_path: Path) -> None:
    log = [*_WRAPPED_WARNING, "building model", "Aborted (core dumped)"]
    assert root_of(tmp_path, "\n".join(log) + "\n") != "user-code-exception"
