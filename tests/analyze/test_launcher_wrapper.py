"""A launcher's report (torchrun's ChildFailedError, Slurm's task exit) is the answer only when
the worker's own error is missing; when the worker printed an error no class explains, that
error is the failure to show, as an unknown failure."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

TORCHRUN_REPORT = """E1203 10:00:00.000000 123 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: {code}) local_rank: 1 (pid: 41237) of binary: /usr/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-03_10:00:00
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : {code} (pid: 41237)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

WORKER_ERROR = """[rank1]: Traceback (most recent call last):
[rank1]:   File "/opt/conda/lib/python3.11/site-packages/geoloader/tiles.py", line 210, in fetch
[rank1]:     raise TileServerError(f"tile {key} refused by server")
[rank1]: geoloader.errors.TileServerError: tile 12/2210/1345 refused by server
"""

ARGPARSE_ERROR = """usage: train.py [-h] [--config CONFIG] [--local_rank LOCAL_RANK]
train.py: error: unrecognized arguments: --local-rank=1
"""


def _diagnose(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "job.log"
    path.write_text(text)
    return diagnose([str(path)])


def test_the_report_alone_is_the_wrapper(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, TORCHRUN_REPORT.format(code=1))
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "elastic-child-failed"


def test_an_unexplained_worker_error_is_shown_instead_of_the_wrapper(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, WORKER_ERROR + TORCHRUN_REPORT.format(code=1))
    assert diagnosis.status.value == "unknown-failure"
    assert any("TileServerError" in line.text for line in diagnosis.unknown)
    assert diagnosis.initiating_rank == 1


def test_a_script_refusing_its_arguments_is_the_workers_error(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, ARGPARSE_ERROR + TORCHRUN_REPORT.format(code=2))
    assert diagnosis.status.value == "unknown-failure"
    assert any("unrecognized arguments" in line.text for line in diagnosis.unknown)


WORKER_TIMEOUT = """[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/job/train.py", line 77, in evaluate
[rank1]:     with FileLock(cache_dir / "eval.lock", timeout=5):
[rank1]:   File "/opt/conda/lib/python3.11/site-packages/filelock/_api.py", line 339, in acquire
[rank1]:     raise Timeout(lock_filename)
[rank1]: filelock._error.Timeout: The file lock '/srv/cache/eval.lock' could not be acquired.
"""


def test_a_worker_error_whose_class_name_says_nothing_is_still_the_workers_error(tmp_path: Path) -> None:
    """`Timeout` ends in neither Error nor Exception; its module (`filelock._error`) says what it is."""
    diagnosis = _diagnose(tmp_path, WORKER_TIMEOUT + TORCHRUN_REPORT.format(code=1))
    assert diagnosis.status.value == "unknown-failure"
    assert any("could not be acquired" in line.text for line in diagnosis.unknown)
