"""Exceptions a run went on from (a report Python printed as `Exception ignored in`, a torch.compile error
torch logged as a warning before running the frame eagerly) do not hide the failure that ended the run,
and the report of one process does not swallow another rank's traceback printed right after it."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

PROGRESS = [f"[rank0] step {step}/40 loss={2.0 - step / 40:.4f} grad_norm=0.41" for step in range(1, 41)]

IGNORED_AT_EXIT_OF_RANK_1 = [
    "[rank1] training finished: reason=max_steps step=40",
    "Exception ignored in: <function MetricsWriter.__del__ at 0x7f3a2c1d5e40>",
    "Traceback (most recent call last):",
    '  File "/srv/job/train.py", line 202, in __del__',
    "    self.f.write(json.dumps(event))",
    "ValueError: I/O operation on closed file.",
    "[rank0] training finished: reason=max_steps step=40",
]

RELOAD_FAILS_ON_RANK_0 = [
    "[rank0]: Traceback (most recent call last):",
    '[rank0]:   File "/srv/job/train.py", line 417, in main',
    '[rank0]:     model.load_state_dict(ckpt["model"])',
    '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 2638, in load_state_dict',
    "[rank0]:     raise RuntimeError(",
    "[rank0]: RuntimeError: Error(s) in loading state_dict for TinyLM:",
    '[rank0]: \tMissing key(s) in state_dict: "emb.weight", "head.weight". ',
    '[rank0]: \tUnexpected key(s) in state_dict: "_orig_mod.emb.weight", "_orig_mod.head.weight". ',
]


def test_another_process_s_ignored_exception_does_not_excuse_a_rank_s_uncaught_one(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(PROGRESS + IGNORED_AT_EXIT_OF_RANK_1 + RELOAD_FAILS_ON_RANK_0) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "state-dict-mismatch"


def _logged_compile_error(rank: int) -> list[str]:
    """torch's logger prints Dynamo's fallback to eager as one warning record, every line prefixed."""
    head = f"[rank{rank}]:W1206 12:39:34.248000 13{rank} torch/_dynamo/convert_frame.py:2415] "
    return [head + line for line in (
        "WON'T CONVERT forward /srv/job/model.py line 185 ",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/_inductor/cpp_builder.py", line 120, in check_compiler',
        "    raise exc.InvalidCxxCompiler",
        "torch._inductor.exc.InductorError: InvalidCxxCompiler: No working C++ compiler found in "
        "torch._inductor.config.cpp.cxx: (None, 'g++')",
    )]


def test_a_compile_error_logged_as_a_warning_before_training_went_on_is_not_the_failure(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    warnings = _logged_compile_error(1) + _logged_compile_error(1) + _logged_compile_error(0) + _logged_compile_error(0)
    path.write_text("\n".join(warnings + PROGRESS + RELOAD_FAILS_ON_RANK_0) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "state-dict-mismatch"


def test_the_same_compile_error_raised_is_still_the_failure(tmp_path: Path) -> None:
    raised = [line.split("] ", 1)[1] for line in _logged_compile_error(0)[1:]]
    path = tmp_path / "train.log"
    path.write_text("\n".join(PROGRESS[:3] + raised) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "inductor-cxx-compiler-error"


def test_a_rank_s_raised_nan_is_no_recovered_step_when_its_stdout_file_ends_with_finite_losses(tmp_path: Path) -> None:
    """torchrun's per-rank folder: the losses go to stdout.log, the exception to stderr.log; line numbers of
    two files say nothing about which came first."""
    for rank in (0, 1):
        folder = tmp_path / "attempt_0" / str(rank)
        folder.mkdir(parents=True)
        (folder / "stdout.log").write_text("\n".join(
            f"[rank{rank}] step {step:3d} | loss {1.9 - step / 20:.4f} | lr 1.00e-03" for step in range(1, 9)) + "\n")
        (folder / "stderr.log").write_text("" if rank == 0 else "\n".join([
            "[rank1]: Traceback (most recent call last):",
            '[rank1]:   File "/srv/job/train.py", line 173, in <module>',
            '[rank1]:     raise FloatingPointError(f"Non-finite loss {loss.item()} at step {step} on rank {rank}")',
            "[rank1]: FloatingPointError: Non-finite loss nan at step 9 on rank 1",
        ]) + "\n")
    diagnosis = diagnose([str(tmp_path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "loss-nan"
    assert diagnosis.initiating_rank == 1


def _timer_dump() -> list[str]:
    """What faulthandler.dump_traceback_later prints when its timer fires: every thread's stack."""
    return [
        "Timeout (0:05:00)!",
        "Thread 0x00007fd9a94bf6c0 (most recent call first):",
        '  File "/usr/lib/python3.11/threading.py", line 331 in wait',
        "",
        "Thread 0x00007fd9d123eb80 (most recent call first):",
        '  File "/srv/job/train.py", line 88 in train_step',
        '  File "/srv/job/train.py", line 140 in main',
    ]


def test_a_timer_s_stack_dump_followed_by_more_training_is_no_hang(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(PROGRESS[:20] + _timer_dump() + PROGRESS[20:] + ["[rank0] training finished"]) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status == "no-failure"


def test_a_timer_s_stack_dump_after_the_last_step_is_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(PROGRESS[:20] + _timer_dump() + _timer_dump()) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "training-hang"


SKIPPED_SAMPLE_WARNING = [
    "2026-05-02 11:04:09,118 WARNING loader-1 data - corrupt image /data/train/cat_0311.jpg: "
    "OSError('image file is truncated (212 bytes not processed)'); substituting sample 312",
]
STEPS = [f"2026-05-02 11:04:{10 + step:02d},400 INFO train - step {step} loss {1.9 - step / 50:.3f}" for step in range(1, 9)]
CTRL_C = ["Traceback (most recent call last):",
          '  File "/srv/job/train.py", line 88, in main',
          "    loss.backward()",
          "KeyboardInterrupt"]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    root = diagnose([str(path)]).root_cause
    return root.id if root is not None else None


def test_an_error_a_logger_reported_as_a_warning_before_more_training_is_not_why_the_run_stopped(
        tmp_path: Path) -> None:
    assert _root(tmp_path, STEPS[:2] + SKIPPED_SAMPLE_WARNING + STEPS[2:] + CTRL_C) == "user-interrupt"


def test_a_warning_no_training_followed_is_still_the_failure(tmp_path: Path) -> None:
    assert _root(tmp_path, STEPS + SKIPPED_SAMPLE_WARNING) == "corrupt-data-sample"


def test_a_run_that_trained_on_after_warning_of_a_corrupt_sample_is_healthy(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(STEPS[:2] + SKIPPED_SAMPLE_WARNING + STEPS[2:]) + "\n")
    assert diagnose([str(path)]).status.value == "no-failure"


def test_a_warning_that_announces_a_stop_from_outside_is_the_stop_though_reports_follow(tmp_path: Path) -> None:
    """Ray Tune prints its last trial results after the warning that it is ending the run."""
    stop = ["2026-05-02 11:04:12,006\tWARNING tune.py:219 -- Stop signal received (e.g. via SIGINT/Ctrl+C), ending "
            "Ray Tune run. This will try to checkpoint the experiment state one last time."]
    assert _root(tmp_path, STEPS[:3] + stop + STEPS[3:5]) == "user-interrupt"


# How Python reports an exit handler that raised (the exit status stays 0): up to 3.9, 3.10 to 3.12, 3.13.
EXIT_HANDLER_HEADERS = ["Error in atexit._run_exitfuncs:",
                        "Exception ignored in atexit callback: <function Plotter.close at 0x7f21c0a3e8e0>",
                        "Exception ignored in atexit callback <function Plotter.close at 0x7f21c0a3e8e0>:"]
EXIT_HANDLER_TRACEBACK = ["Traceback (most recent call last):",
                          '  File "/srv/job/plots.py", line 31, in close',
                          "    self.window.destroy()",
                          "RuntimeError: main thread is not in main loop"]


def test_an_exit_handler_that_raised_after_training_is_no_failure(tmp_path: Path) -> None:
    for header in EXIT_HANDLER_HEADERS:
        path = tmp_path / "train.log"
        path.write_text("\n".join([*PROGRESS, header, *EXIT_HANDLER_TRACEBACK]) + "\n")
        assert diagnose([str(path)]).status.value == "no-failure", header


def test_a_crash_before_an_exit_handler_s_report_is_still_the_failure(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join([*PROGRESS, *RELOAD_FAILS_ON_RANK_0, EXIT_HANDLER_HEADERS[1], *EXIT_HANDLER_TRACEBACK])
                    + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "state-dict-mismatch"
