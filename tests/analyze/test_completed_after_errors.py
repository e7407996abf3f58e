"""An error line followed by more steps of the same run and by its own report that training finished
did not stop the run; without that report, the same line is the failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

PROBE = ["2026-01-04 10:00:01,100 WARNING [train] CUDA probe failed, continuing on CPU: "
         "Torch not compiled with CUDA enabled"]
STEPS = [f"2026-01-04 10:00:0{2 + n},100 INFO [train] step {5 * (n + 1)} loss {1.9 - 0.1 * n:.2f}" for n in range(4)]
DONE = ["2026-01-04 10:00:07,100 INFO [train] training finished at step 20"]


def _status(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)]).status.value


def test_an_error_worked_around_before_training_finished_is_not_the_failure(tmp_path: Path) -> None:
    assert _status(tmp_path, PROBE + STEPS + DONE) == "no-failure"


def test_the_same_error_without_the_finish_is_the_failure(tmp_path: Path) -> None:
    assert _status(tmp_path, PROBE + STEPS) != "no-failure"



CAUGHT = ["2026-01-04 10:00:03,100 ERROR [eval] metric 'rare_f1' failed, left out this epoch",
          "Traceback (most recent call last):",
          '  File "/srv/job/train.py", line 92, in evaluate',
          "    worst = max(per_class)",
          "ValueError: max() arg is an empty sequence"]


def test_an_exception_the_process_logged_before_it_reported_training_finished_is_not_the_failure(
        tmp_path: Path) -> None:
    assert _status(tmp_path, STEPS + CAUGHT + DONE) == "no-failure"


@pytest.mark.parametrize("done", ["2026-01-04 10:00:07,100 INFO [train] training done",
                                  "2026-01-04 10:00:07,100 INFO [train] Training complete after 20 steps"])
def test_a_caught_exception_before_the_scripts_own_training_done_line_is_not_the_failure(
        tmp_path: Path, done: str) -> None:
    """`traceback.print_exc()` in an except block, no logger line before it: only the finish line says the run went on."""
    printed = CAUGHT[1:] + ["2026-01-04 10:00:03,200 WARNING [eval] rare_f1 left out this epoch"]
    assert _status(tmp_path, STEPS[:2] + printed + STEPS[2:] + [done]) == "no-failure"


def test_a_wrapper_reporting_that_training_finished_with_errors_recovers_nothing(tmp_path: Path) -> None:
    wrapper = ["--- STDERR reader thread for training finished. ---",
               "--- training process finished with errors or non-zero exit code (1). ---"]
    assert _status(tmp_path, STEPS + CAUGHT + wrapper) != "no-failure"


def test_another_ranks_report_that_training_finished_does_not_recover_this_ranks_error(tmp_path: Path) -> None:
    rank1 = [f"[rank1]: {line}" for line in CAUGHT]
    assert _status(tmp_path, [f"[rank0]: {s}" for s in STEPS] + rank1 + [f"[rank0]: {DONE[0]}"]) != "no-failure"


def test_a_rank_that_fails_after_another_rank_finished_failed(tmp_path: Path) -> None:
    """Rank 1 reports that training finished; rank 0 then dies saving its checkpoint, and torchrun reports it."""
    steps = [f"[rank{rank}]: {line}" for line in STEPS for rank in (0, 1)]
    crash = ["Traceback (most recent call last):",
             '  File "/srv/job/train.py", line 204, in main',
             "    torch.save(state, os.path.join(args.ckpt_dir, name))",
             "RuntimeError: [enforce fail at inline_container.cc:747] . open file failed with strerror: "
             "File name too long"]
    lines = steps + [f"[rank1]: {DONE[0]}"] + [f"[rank0]: {line}" for line in crash] + [
        "E0104 10:00:09.044000 2517 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
        "local_rank: 0 (pid: 25235) of binary: /usr/bin/python3"]
    assert _status(tmp_path, lines) != "no-failure"


UNCAUGHT = ["Traceback (most recent call last):",
            '  File "/srv/job/train.py", line 240, in <module>',
            "    export(model, args.out)",
            '  File "/srv/job/train.py", line 118, in export',
            "    torch.jit.script(model)",
            "RuntimeError: Expected a default value of type Tensor on parameter \"cache\"."]


def test_an_uncaught_exception_after_training_finished_is_the_failure(tmp_path: Path) -> None:
    """The script reported that training finished, then died exporting the model: the job failed."""
    assert _status(tmp_path, STEPS + DONE + UNCAUGHT) != "no-failure"


def test_a_threads_exception_after_training_finished_is_not(tmp_path: Path) -> None:
    thread = ["Exception in thread Thread-3 (upload_metrics):", *UNCAUGHT]
    assert _status(tmp_path, STEPS + DONE + thread) == "no-failure"


def test_a_logged_exception_after_training_finished_is_not(tmp_path: Path) -> None:
    logged = ["2026-01-04 10:00:08,100 ERROR [export] TorchScript export failed, keeping the eager checkpoint",
              *UNCAUGHT]
    assert _status(tmp_path, STEPS + DONE + logged) == "no-failure"


def test_a_notebook_traceback_showing_the_line_that_would_print_training_complete_recovers_nothing(
        tmp_path: Path) -> None:
    cell = ["Stopping app - uncaught exception raised locally: PermissionError('no GPU quota left in this project').",
            "PermissionError                           Traceback (most recent call last)",
            "Cell In[7], line 2",
            "      1 print('--- training ---')",
            "----> 2 result = job.train()",
            "      3 print('--- Training complete ---')"]
    assert _status(tmp_path, STEPS + cell) != "no-failure"
