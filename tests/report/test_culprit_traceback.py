"""The report's "your code" frame and exception come from the culprit rank's own traceback,
also when torchrun tags lines only with `[defaultN]:` and two ranks' tracebacks interleave."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
_WATCHDOG = ("  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
             "exception: CUDA error: an illegal memory access was encountered")


def _frames(function: str, line: int, code: str) -> list[str]:
    return ['  File "/home/alice/proj/train.py", line 88, in <module>', "    main(cfg)",
            f'  File "/home/alice/proj/train.py", line {line}, in {function}', f"    {code}"]


def _log(tmp_path: Path, lines: list[tuple[int, str]]) -> Path:
    path = tmp_path / "torchrun.log"
    path.write_text("".join(f"[default{rank}]:{text}\n" for rank, text in lines))
    return path


def test_the_frame_is_the_culprits_when_another_ranks_traceback_is_nearer(tmp_path: Path) -> None:
    """Rank 1's watchdog line is the root; rank 0's traceback ends between rank 1's first
    frames and the rest of rank 1's traceback."""
    rank0 = _frames("evaluate", 52, "dist.all_reduce(t)")
    rank1 = _frames("load_batch", 41, "x = model(batch)")
    lines = [(0, "step 10 loss 2.31"), (1, "step 10 loss 2.30"),
             (1, "terminate called after throwing an instance of 'c10::DistBackendError'"), (1, _WATCHDOG),
             (1, "Traceback (most recent call last):"), *[(1, text) for text in rank1[:2]],
             (0, "Traceback (most recent call last):"), *[(0, text) for text in rank0], (0, _ILLEGAL),
             *[(1, text) for text in rank1[2:]], (1, _ILLEGAL)]
    diagnosis = diagnose([str(_log(tmp_path, lines))])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == 1
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and (frame.line, frame.function) == (41, "load_batch")


def test_both_ranks_raise_and_the_report_shows_the_first_ones_exception(tmp_path: Path) -> None:
    rank0 = _frames("evaluate", 52, "dist.all_reduce(t)")
    rank1 = _frames("load_batch", 41, 'x = batch["pixels"]')
    lines = [(0, "Traceback (most recent call last):"), (1, "Traceback (most recent call last):")]
    lines += [pair for a, b in zip(rank0, rank1, strict=True) for pair in ((0, a), (1, b))]
    lines += [(1, "KeyError: 'pixels'"), (0, "RuntimeError: Connection closed by peer [127.0.0.1]:29500")]
    diagnosis = diagnose([str(_log(tmp_path, lines))])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
    assert diagnosis.initiating_rank == 1
    assert diagnosis.root_cause.exception == "KeyError: 'pixels'"
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and (frame.line, frame.function) == (41, "load_batch")


def test_a_silent_culprit_borrows_no_waiting_ranks_traceback(tmp_path: Path) -> None:
    """Rank 2 stopped without a word; ranks 0, 1 and 3 time out in the collective it never
    joined and print tracebacks, then torchrun's agent reports the first exit (untagged). The
    report names rank 2 and shows neither another rank's frame nor the agent's line as its own."""
    gloo = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
            "waiting 30000ms for recv operation to complete")
    lines = [(r, f"step {s} loss 2.{r}{s}") for s in range(1, 6) for r in range(4)]
    for rank in (0, 1, 3):
        lines += [(rank, "Traceback (most recent call last):"),
                  (rank, '  File "/home/alice/proj/train.py", line 63, in <module>'),
                  (rank, "    dist.all_reduce(grad)"), (rank, gloo)]
    path = _log(tmp_path, lines)
    with path.open("a") as handle:
        handle.write("W1203 10:15:09.100000 4242 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
                     "5123 closing signal SIGTERM\n"
                     "E1203 10:15:09.300000 4242 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
                     "(exitcode: 1) local_rank: 0 (pid: 5121) of binary: /home/alice/venv/bin/python3\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.initiating_rank == 2
    assert diagnosis.root_cause.user_frame is None
    assert diagnosis.root_cause.exception is None or "Timed out" not in diagnosis.root_cause.exception
    assert diagnosis.root_cause.exception is None or "exitcode" not in diagnosis.root_cause.exception


_SESSION_THEN_SCRIPT = """Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/tensorflow/python/client/session.py", line 1322, in _do_call
    return fn(*args)
  File "/usr/lib/python3/dist-packages/tensorflow/python/framework/errors_impl.py", line 466, in __exit__
    c_api.TF_GetCode(self.status.status))
tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[512,4096]

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/kim/seq2seq/train.py", line 64, in <module>
    loss, _ = sess.run([model.loss, model.train_op], feed_dict=feed)
  File "/usr/lib/python3/dist-packages/tensorflow/python/client/session.py", line 900, in run
    run_metadata_ptr)
"""


def test_the_frame_comes_from_the_traceback_printed_after_a_library_only_one(tmp_path: Path) -> None:
    """The root's own traceback runs inside TensorFlow only; the script's call is in the one Python
    printed next, even though the paste stops before that one's exception line."""
    path = tmp_path / "train.log"
    path.write_text(_SESSION_THEN_SCRIPT)
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.user_frame is not None
    frame = diagnosis.root_cause.user_frame
    assert (frame.file.rsplit("/", 1)[-1], frame.line) == ("train.py", 64)  # the user's name is masked


def test_a_worker_killed_by_a_signal_has_no_exception_even_under_the_launchers_traceback(tmp_path: Path) -> None:
    """torchrun prints its own ChildFailedError traceback, then the failure report; the report's `exitcode`
    line that names the signal ends no traceback, so the report shows no exception and no frame."""
    lines = ["[default0]:step 40 loss 2.10", "[default1]:step 40 loss 2.11",
             "Traceback (most recent call last):",
             '  File "/opt/venv/bin/torchrun", line 8, in <module>', "    sys.exit(main())",
             '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1019, in run',
             "    elastic_launch(",
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "============================================================", "train.py FAILED",
             "------------------------------------------------------------",
             "Root Cause (first observed failure):", "[0]:", "  time      : 2026-03-01_10:22:02",
             "  host      : node7", "  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 19200)  (SIGKILL)",
             "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 19200",
             "============================================================"]
    path = tmp_path / "console.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.evidence[0].text.strip().startswith("exitcode")
    assert diagnosis.root_cause.exception is None and diagnosis.root_cause.user_frame is None
