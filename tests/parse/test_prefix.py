"""Launcher and logger prefixes as the real tools print them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from traintriage.parse.prefix import failed_process_rank, parse_prefix


@pytest.mark.parametrize(
    ("line", "rank", "message_start"),
    [
        ("[rank3]: torch.OutOfMemoryError: CUDA out of memory.", 3, "torch.OutOfMemoryError"),
        ("[default12]:[rank12]: RuntimeError: boom", 12, "RuntimeError"),
        ("3: RuntimeError: CUDA error: an illegal memory access was encountered", 3, "RuntimeError"),
        ("[1,3]<stderr>:RuntimeError: x", 3, "RuntimeError"),
        ("[1,mpirank:5,algo-2]<stderr>:RuntimeError: x", 5, "RuntimeError"),
        ("[PG ID 0 PG GUID 0(default_pg) Rank 6] Watchdog caught collective operation timeout", 6, "Watchdog"),
        ("rank 1: step 15 loss nan grad_norm nan", 1, "step 15"),
        ("Rank 12: RuntimeError: x", 12, "RuntimeError"),
        # a progress bar redrawn with carriage returns, then the log line: the terminal shows the last
        ("\rrank1 train:   2%|2         | 1/40 [00:02<01:51,  2.85s/it]\r      \r[rank1]: step 15 loss nan", 1,
         "step 15"),
    ],
)
def test_rank_prefixes(line: str, rank: int, message_start: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank == rank
    assert prefix.message.startswith(message_start)


@pytest.mark.parametrize(
    ("line", "rank", "host"),
    [
        # a wrapper that prints the time of day, the node and the rank before torchrun's own tag
        ("03:14:03 trn-node1 rank1: [rank1]: RuntimeError: boom", 1, "trn-node1"),
        ("10:02:11.482 [rank2]: torch.OutOfMemoryError: CUDA out of memory.", 2, None),
        ("gpu-node12 [rank7]: RuntimeError: boom", 7, "gpu-node12"),
    ],
)
def test_a_time_of_day_and_a_host_before_a_rank_tag(line: str, rank: int, host: str | None) -> None:
    prefix = parse_prefix(line)
    assert (prefix.rank, prefix.host, prefix.time) == (rank, host, None)  # no date to invent
    assert prefix.message.startswith(("RuntimeError", "torch.OutOfMemoryError"))


@pytest.mark.parametrize("line", ["2024 rank 1: done", "12:30 is the time", "model rank1: top"])
def test_numbers_and_words_before_a_rank_are_no_host_or_time(line: str) -> None:
    assert parse_prefix(line).host is None


def test_words_that_start_like_a_rank_tag_are_not_one() -> None:
    assert parse_prefix("ranking: 3 candidates").rank is None
    assert parse_prefix("rank 1 of 4 joined").rank is None


def test_torchrun_tag_is_a_local_rank() -> None:
    """torchrun's `[{role}{local_rank}]:` names the local rank, never the global one."""
    prefix = parse_prefix("[default5]:Traceback (most recent call last):")
    assert prefix.rank is None
    assert prefix.local_rank == 5
    assert prefix.message.startswith("Traceback")


def test_pdsh_host_prefix_then_iso_time() -> None:
    prefix = parse_prefix("worker-1: [2024-05-01 10:02:11,123] [INFO] [launch.py:351:main] Process 4412 exits successfully.")
    assert prefix.host == "worker-1"
    assert prefix.time == datetime(2024, 5, 1, 10, 2, 11, 123000, tzinfo=timezone.utc)


def test_glog_time_takes_the_year_given() -> None:
    prefix = parse_prefix("E0321 02:07:08.408271 1234 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:607] [Rank 1] x", 2024)
    assert prefix.time == datetime(2024, 3, 21, 2, 7, 8, 408271, tzinfo=timezone.utc)
    assert prefix.message.startswith("torch/csrc")


def test_nccl_warn_line_names_its_host() -> None:
    prefix = parse_prefix("node7:4412:4490 [3] NCCL WARN NET/IB : Got completion from peer with error 12")
    assert prefix.host == "node7"


def test_iso_with_offset_is_normalised_to_utc() -> None:
    prefix = parse_prefix("2024-05-01T12:02:11.500+02:00 ERROR training crashed")
    assert prefix.time == datetime(2024, 5, 1, 10, 2, 11, 500000, tzinfo=timezone.utc)


@pytest.mark.parametrize("line", ["RuntimeError: CUDA error: unknown error", "torch.OutOfMemoryError: CUDA out of memory."])
def test_exception_names_are_not_hosts(line: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.host is None
    assert prefix.message == line


def test_pytorch_bracketed_glog_with_nanoseconds() -> None:
    prefix = parse_prefix("[rank2]:[E304 11:22:44.883102377 ProcessGroupNCCL.cpp:1899] [PG 0 Rank 2] Process group watchdog", 2026)
    assert prefix.rank == 2
    assert prefix.time == datetime(2026, 3, 4, 11, 22, 44, 883102, tzinfo=timezone.utc)


def test_dmesg_human_time_and_syslog() -> None:
    dmesg = parse_prefix("[Wed Mar  4 11:22:41 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.")
    assert dmesg.time == datetime(2026, 3, 4, 11, 22, 41, tzinfo=timezone.utc)
    assert dmesg.message.startswith("NVRM: Xid")
    syslog = parse_prefix("Mar 04 11:22:41 gpu-node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", 2026)
    assert syslog.host == "gpu-node7"
    assert syslog.time == datetime(2026, 3, 4, 11, 22, 41, tzinfo=timezone.utc)


def test_long_host_like_tokens_cost_linear_time() -> None:
    """Issue 13: a 4000-character `node0-node1-...` token once backtracked quadratically."""
    import time

    body = "".join(f"node{i}-" for i in range(700))[:3960]
    lines = [f"[rank{i % 8}]: {body} RuntimeError: NCCL error" if i % 2 else f"{body} Error: x" for i in range(600)]
    started = time.perf_counter()
    for line in lines:
        parse_prefix(line)
    assert time.perf_counter() - started < 1.0  # was ~20 ms per line; now microseconds


@pytest.mark.parametrize(
    ("line", "rank", "host", "message_start"),
    [
        # pdsh (DeepSpeed's multi-node runner) puts the host, or the address it was given, first
        ("10.0.3.17: [rank19]: RuntimeError: CUDA error: an illegal memory access was encountered", 19, "10.0.3.17",
         "RuntimeError"),
        ("gpu-node-12: [rank9]:[E1203 07:12:40.112233445 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
         "Rank 9] Process group watchdog thread terminated", 9, "gpu-node-12", "ProcessGroupNCCL.cpp"),
        # line numbers a viewer or `cat -n` put in front
        ("   2 [rank0]: Traceback (most recent call last):", 0, None, "Traceback"),
        ("    17\t[rank5]: ValueError: bad shape", 5, None, "ValueError"),
        ("[1743] [rank6]: torch.distributed.DistBackendError: NCCL error", 6, None, "torch.distributed"),
        # a logger's own rank tag, then its timestamp and level
        ("[RANK 1] 2026-12-03 07:12:40,101 [ERROR] Training failed: loss is nan", 1, None, "Training failed"),
        # torchrun --tee's tag holds the local rank; the inner [rank11] is the global one
        ("[default3]:[rank11]: RuntimeError: x", 11, None, "RuntimeError"),
        # Open MPI --tag-output behind a pdsh host
        ("node4: [1,3]<stderr>:RuntimeError: x", 3, "node4", "RuntimeError"),
        # kubectl logs --prefix: the pod, then the process's own tags
        ("[pod/llama-pretrain-worker-2/pytorch] [rank6]: torch.OutOfMemoryError: CUDA out of memory.", 6,
         "llama-pretrain-worker-2", "torch.OutOfMemoryError"),
        # srun --label, then torchrun's tag
        ("3: [default0]:[rank24]: RuntimeError: x", 24, None, "RuntimeError"),
    ],
)
def test_stacked_prefixes_take_the_innermost_rank(line: str, rank: int, host: str | None, message_start: str) -> None:
    prefix = parse_prefix(line, 2026)
    assert prefix.rank == rank
    assert prefix.host == host
    assert prefix.message.startswith(message_start)


def test_a_logger_stamp_under_a_rank_tag_is_read() -> None:
    prefix = parse_prefix("[RANK 1] 2026-12-03 07:12:40,101 [ERROR] Training failed")
    assert prefix.time == datetime(2026, 12, 3, 7, 12, 40, 101000, tzinfo=timezone.utc)


@pytest.mark.parametrize("line", ["10.0.3.17: [ran", "[rank1", "gpu-node-12: [default", "   2 ["])
def test_a_line_cut_inside_its_prefixes_keeps_what_was_read(line: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank is None
    assert prefix.message  # the cut text is still the message, never an exception


@pytest.mark.parametrize("line", ["100 steps done", "2 GPUs found", "Error: [12] not found", "epoch 3: loss 2.1"])
def test_plain_text_keeps_its_numbers(line: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank is None
    assert prefix.message == line


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("mpirun noticed that process rank 5 with PID 4412 on node gpu7 exited on signal 9 (Killed).", 5),
        ("srun: error: gpu-node-4: task 12: Out Of Memory", 12),
        ("torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGKILL", 3),
        ("Process 0 exit with status code 137.", 0),
        ("-- Process 3 terminated with the following error:", 3),
        ("Worker proc VllmWorker-2 died unexpectedly, shutting down executor.", 2),
        ("x1921c0s3b0n0.hsn.cm.aurora.alcf.anl.gov: rank 17 died from signal 6", 17),
        ("gpu-node-2: rank 3 exited with code 134", 3),
        ("  Process name: [[32288,1],6]", 6),
        ("  Process name: [prterun-gpu01-48211@1,3]", 3),
        ("Process name: 2", 2),
        ("MPI_ABORT was invoked on rank 4 in communicator MPI_COMM_WORLD", 4),
    ],
)
def test_launchers_name_the_process_that_died(line: str, rank: int) -> None:
    assert failed_process_rank(line) == rank


def test_a_rank_the_launcher_stopped_is_not_the_one_that_failed() -> None:
    # PALS sends SIGTERM to the ranks still running once one has failed, and reports each.
    assert failed_process_rank(parse_prefix("gpu-node-2: rank 4 died from signal 15").message) is None
    assert failed_process_rank(parse_prefix("gpu-node-2: rank 4 exited with code 0").message) is None


def test_deepspeeds_exit_report_names_no_failed_rank() -> None:
    # launch.py's sigkill_handler prints the command of the last worker it started, not of the one that failed
    line = ("[2026-11-30 09:41:52,310] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
            "'--local_rank=7', '--deepspeed', 'ds.json'] exits with return code = -9")
    assert failed_process_rank(parse_prefix(line).message) is None


def test_a_process_list_in_an_oom_message_names_no_failed_rank() -> None:
    assert failed_process_rank("Process 4412 has 20.10 GiB memory in use. Of the allocated memory ...") is None


@pytest.mark.parametrize(
    ("line", "rank", "message_start"),
    [
        ("(VllmWorker rank=3 pid=4412) ERROR 12-03 07:12:40 [multiproc_executor.py:527] RuntimeError: x", 3,
         "RuntimeError"),
        ("(VllmWorker TP1 pid=4412) INFO 12-03 07:12:40 [gpu_model_runner.py:1234] Loading model", 1, "Loading"),
        ("        | [rank0]: FileNotFoundError: Caught FileNotFoundError in DataLoader worker process 2.", 0,
         "FileNotFoundError"),
        ("> [rank2]: RuntimeError: x", 2, "RuntimeError"),
    ],
)
def test_worker_tags_and_quoted_pastes(line: str, rank: int, message_start: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank == rank
    assert prefix.message.startswith(message_start)


def test_a_quoted_traceback_keeps_its_indented_frames() -> None:
    """A traceback pasted as a quote: `>   File ...` and its code line lose the quote mark."""
    assert parse_prefix('>   File "/work/train.py", line 40, in <module>').message.startswith('File "/work/train.py"')
    assert parse_prefix(">     loss = total / len(loader)").message == "loss = total / len(loader)"


def test_a_host_named_without_digits_before_a_rank_tag() -> None:
    prefix = parse_prefix("nodeB: [rank1]: KeyError: 'grad_norm'")
    assert (prefix.host, prefix.rank, prefix.message) == ("nodeB", 1, "KeyError: 'grad_norm'")


def test_a_capitalised_word_is_no_host_without_a_rank_tag_after_it() -> None:
    for line in ("Error: could not open file", "Warning: deprecated", "Node7: hello"):
        assert parse_prefix(line).host is None


def test_the_rank_field_of_a_json_log_record_is_its_rank() -> None:
    from traintriage.parse.prefix import json_record_rank

    assert json_record_rank('{"level": "ERROR", "message": "failed", "rank": 3, "world_size": 4}') == 3
    assert json_record_rank('{"event": "step", "global_rank": "12"}') == 12
    assert json_record_rank('{"message": "local_rank: 2 started"}') is None
    assert json_record_rank('step 5 "rank": 1,') is None  # not a record
