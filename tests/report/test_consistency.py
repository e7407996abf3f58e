"""Consistency rules, end to end on logs in the frameworks' real formats: what a report
says agrees with itself and with the log."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose
from traintriage.report.render import render_markdown, render_text


def _log(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _traceback(rank: int, frame_line: int, error: str) -> str:
    p = f"[rank{rank}]:"
    return (f"{p} Traceback (most recent call last):\n"
            f'{p}   File "/workspace/proj/train.py", line 120, in <module>\n'
            f"{p}     main()\n"
            f'{p}   File "/workspace/proj/train.py", line {frame_line}, in main\n'
            f"{p}     loss = model(batch).sum()\n"
            f'{p}   File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _call_impl\n'
            f"{p}     return forward_call(*args, **kwargs)\n"
            f"{p} {error}\n")


OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
       "79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB memory in use.")

WATCHDOG = ("[rank{r}]:[E1202 10:15:03.{ms:06d} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=212, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")


def test_initiator_is_never_its_own_collateral_and_each_line_is_one_row(tmp_path: Path) -> None:
    text = ("[2026-12-02 10:05:01] step 40 loss 2.113\n"
            + _traceback(1, 88, OOM)
            + "".join(WATCHDOG.format(r=r, ms=r) for r in (0, 2, 3))
            + "E1202 10:15:09.100000 4242 torch/distributed/elastic/multiprocessing/api.py:882] failed "
              "(exitcode: 1) local_rank: 1 (pid: 5121) of binary: /opt/conda/bin/python3\n")
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.initiating_rank == 1
    assert 1 not in diagnosis.ranks.collateral
    assert all(1 not in item.ranks for item in diagnosis.collateral)
    rows = [(e.source, e.line) for e in diagnosis.timeline]
    assert len(rows) == len(set(rows))


def test_a_time_is_only_the_events_own(tmp_path: Path) -> None:
    """The OOM lines carry no stamp; the step line before them does: the evidence has no time."""
    text = "[2026-12-02 10:05:01] step 40 loss 2.113\n" + _traceback(1, 88, OOM)
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.root_cause is not None
    assert all(e.time is None for e in diagnosis.root_cause.evidence)
    assert "10:05:01" not in render_text(diagnosis).split("First failed", 1)[-1].split("\n", 1)[0]
    assert all("10:05:01" not in suspect.reason for suspect in diagnosis.suspects)


def test_single_rank_log_with_only_a_timeout_asks_for_the_other_logs(tmp_path: Path) -> None:
    text = ("[rank0]:[I1202 10:00:01.000000 ProcessGroupNCCL.cpp:1012] [PG ID 0 PG GUID 0 Rank 0] NCCL version 2.21.5\n"
            + WATCHDOG.format(r=0, ms=1))
    diagnosis = diagnose([_log(tmp_path, "rank0.log", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "nccl-watchdog-timeout"
    assert diagnosis.initiating_rank is None and diagnosis.ranks.failed == []
    assert any("not in this log" in note and "other ranks' logs" in note for note in diagnosis.notes)
    assert "First failed" not in render_text(diagnosis)
    assert "not in this log" in render_markdown(diagnosis)


def test_every_rank_failing_alike_singles_none_out(tmp_path: Path) -> None:
    error = "AttributeError: 'Config' object has no attribute 'warmup_ratio'"
    text = "".join(_traceback(rank, 64, error) for rank in range(4))
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.facts is not None and diagnosis.facts.all_ranks_same is True
    assert diagnosis.initiating_rank is None
    assert diagnosis.ranks.failed == [0, 1, 2, 3]
    assert any("code or the environment, not of one node" in note for note in diagnosis.notes)


def test_collateral_on_a_gloo_run_is_not_named_after_nccl(tmp_path: Path) -> None:
    gloo = ("[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
            "Timed out waiting 20000ms for recv operation to complete\n")
    text = (_traceback(2, 88, OOM).replace("CUDA out of memory", "CUDA out of memory")
            + "".join(gloo.format(r=r) for r in (0, 1, 3))
            + "[rank0]: INFO init_process_group backend=gloo world_size=4\n")
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.facts is not None and diagnosis.facts.backend == "gloo"
    assert not [c.id for c in diagnosis.collateral if c.id.startswith("nccl")]
    assert diagnosis.ranks.collateral == [0, 1, 3]


def test_nccl_named_collateral_on_a_gloo_run_becomes_a_note() -> None:
    """The rule itself, for a class that only has an NCCL name (whatever the KB holds today)."""
    from traintriage.analyze.facts import RunFacts
    from traintriage.report.consistency import named_for_backend
    from traintriage.report.model import Collateral

    items = [Collateral(id="nccl-watchdog-timeout", ranks=[0, 1], explained_by="training-hang", count=2),
             Collateral(id="elastic-child-failed", ranks=[], explained_by="training-hang")]
    kept, notes = named_for_backend(items, RunFacts(backend="gloo"), 3)
    assert [c.id for c in kept] == ["elastic-child-failed"]
    assert notes == ["Ranks 0, 1 then failed in gloo collectives while waiting for rank 3 (2 lines): "
                     "collateral, not a cause."]
    assert named_for_backend(items, RunFacts(backend="nccl"), 3) == (items, [])


def test_your_code_comes_from_the_culprits_chained_traceback(tmp_path: Path) -> None:
    """The save fails inside torch; the script's frame is in the re-raised traceback below."""
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/opt/conda/lib/python3.11/site-packages/torch/serialization.py", line 967, in save\n'
            "[rank0]:     _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)\n"
            "[rank0]: RuntimeError: [enforce fail at inline_container.cc:626] . unexpected pos 3584 vs 3478\n"
            "[rank0]: \n"
            "[rank0]: During handling of the above exception, another exception occurred:\n"
            "[rank0]: \n"
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/workspace/proj/train.py", line 52, in <module>\n'
            "[rank0]:     main()\n"
            '[rank0]:   File "/workspace/proj/train.py", line 47, in main\n'
            "[rank0]:     torch.save(state, ckpt_path)\n"
            '[rank0]:   File "/opt/conda/lib/python3.11/site-packages/torch/serialization.py", line 966, in save\n'
            "[rank0]:     with _open_zipfile_writer(f) as opened_zipfile:\n"
            "[rank0]: OSError: [Errno 28] No space left on device\n")
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "disk-full"
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and (frame.file, frame.line, frame.function) == ("/workspace/proj/train.py", 47, "main")


def test_your_code_in_a_dataloader_worker_is_the_workers_frame(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/workspace/proj/train.py", line 42, in <module>\n'
            "    for step, (x, y) in enumerate(loader):\n"
            '  File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1567, in _process_data\n'
            "    data.reraise()\n"
            '  File "/opt/conda/lib/python3.11/site-packages/torch/_utils.py", line 794, in reraise\n'
            "    raise exception\n"
            "ValueError: Caught ValueError in DataLoader worker process 3.\n"
            "Original Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 374, in _worker_loop\n'
            "    data = fetcher.fetch(index)\n"
            '  File "/workspace/proj/data.py", line 26, in __getitem__\n'
            '    label = int(rec["label"])\n'
            "ValueError: invalid literal for int() with base 10: 'n/a'\n")
    diagnosis = diagnose([_log(tmp_path, "train.log", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "dataloader-worker-error"
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and (frame.file, frame.line) == ("/workspace/proj/data.py", 26)


def test_a_launcher_root_cause_naming_a_victim_is_overridden_out_loud(tmp_path: Path) -> None:
    """torchrun names the first process it saw exit (rank 0, aborted by its watchdog); the
    OOM on rank 1 came first, and the report says it overrides torchrun."""
    text = ("[rank1]:[2026-12-02 10:00:01,200] ERROR train: step 40 failed\n"
            + _traceback(1, 88, OOM)
            + WATCHDOG.format(r=0, ms=5)
            + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
              "============================================================\n"
              "train.py FAILED\n"
              "------------------------------------------------------------\n"
              "Root Cause (first observed failure):\n"
              "[0]:\n"
              "  time      : 2026-12-02_10:15:09\n"
              "  host      : gpu-a17\n"
              "  rank      : 0 (local_rank: 0)\n"
              "  exitcode  : -6 (pid: 5120)\n"
              "  error_file: <N/A>\n"
              "  traceback : Signal 6 (SIGABRT) received by PID 5120\n"
              "============================================================\n")
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.initiating_rank == 1
    assert any("Root Cause (first observed failure)" in note and "rank 0 is collateral" in note
               for note in diagnosis.notes), diagnosis.notes


def _watchdog_run(tmp_path: Path, steps: int) -> str:
    """Two ranks log steps 1..steps, then both time out in the next all_reduce."""
    lines = [f"[rank{r}]:[2026-12-02 10:05:{s:02d},000] INFO train: step {s} loss {2.5 - s / 100:.3f}\n"
             for s in range(1, steps + 1) for r in (0, 1)]
    return _log(tmp_path, "job.out", "".join(lines) + "".join(WATCHDOG.format(r=r, ms=r) for r in (0, 1)))


def test_a_hang_stopped_making_progress_after_the_last_step_it_did_not_fail_at_it(tmp_path: Path) -> None:
    diagnosis = diagnose([_watchdog_run(tmp_path, 17)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "nccl-watchdog-timeout"
    assert diagnosis.facts is not None and diagnosis.facts.stalled and diagnosis.facts.step == 17
    run = next(line for line in render_text(diagnosis).splitlines() if line.startswith("Run"))
    assert "stopped making progress after step 17" in run and "failed at step" not in run
    assert "stopped making progress after step 17" in render_markdown(diagnosis)


def test_a_crash_at_a_step_still_failed_at_it(tmp_path: Path) -> None:
    text = "".join(f"[rank1]:[2026-12-02 10:05:{s:02d},000] INFO train: step {s} loss 2.1\n" for s in (39, 40))
    diagnosis = diagnose([_log(tmp_path, "job.out", text + _traceback(1, 88, OOM))])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.facts is not None and not diagnosis.facts.stalled
    assert "failed at step 40" in render_text(diagnosis)


def test_phase_words_for_a_stall_and_a_failure() -> None:
    from traintriage.report.model import Facts
    from traintriage.report.render import facts_line

    assert facts_line(Facts(phase="step", step=9, stalled=True)) == "stopped making progress after step 9"
    assert facts_line(Facts(phase="step", step=9)) == "failed at step 9"
    assert facts_line(Facts(phase="setup", stalled=True)) == "stopped making progress during setup"
    assert facts_line(Facts(phase="model-load", stalled=True)) == "stopped making progress while loading the model"


def test_every_hang_and_collective_timeout_class_reads_as_a_stall() -> None:
    from traintriage.kb.loader import load_kb
    from traintriage.report.consistency import is_stall

    kb = load_kb()
    for entry_id in ("training-hang", "nccl-watchdog-timeout", "gloo-collective-timeout", "monitored-barrier-timeout",
                     "nccl-heartbeat-monitor-timeout"):
        assert is_stall(kb.entries[entry_id]), entry_id
    for entry_id in ("cuda-oom", "cuda-illegal-memory-access", "nccl-remote-error"):
        if entry_id in kb.entries:
            assert not is_stall(kb.entries[entry_id]), entry_id


def test_torchruns_local_rank_is_mapped_to_the_global_rank_or_not_used() -> None:
    from traintriage.analyze.facts import RunFacts
    from traintriage.analyze.ranks import SuspectRank
    from traintriage.report.consistency import LOCAL_RANK_REASON, local_rank_mapped

    agent = SuspectRank(1, "node-b", f"{LOCAL_RANK_REASON} 1 fail first (exitcode 1)")
    peer = SuspectRank(6, None, "named as the faulty rank by its peers (3 lines)")
    mapped = local_rank_mapped([agent, peer], RunFacts(single_node=False), {1: 5})
    assert [s.rank for s in mapped] == [5, 6] and "(global rank 5)" in mapped[0].reason
    assert [s.rank for s in local_rank_mapped([agent, peer], RunFacts(single_node=False), {})] == [6]
    assert [s.rank for s in local_rank_mapped([agent], RunFacts(single_node=True), {})] == [1]


def test_on_a_second_node_torchruns_local_rank_is_not_named_as_the_global_rank(tmp_path: Path) -> None:
    """Node 1 of two (4 workers each): its agent names local_rank 1, which is global rank 5."""
    text = ("[2026-12-02 10:00:00,000] launcher: torchrun --nnodes=2 --nproc-per-node=4 --node-rank=1 train.py\n"
            + _traceback(5, 88, OOM)
            + "E1202 10:15:09.100000 4242 torch/distributed/elastic/multiprocessing/api.py:882] failed "
              "(exitcode: 1) local_rank: 1 (pid: 5121) of binary: /opt/conda/bin/python3\n")
    diagnosis = diagnose([_log(tmp_path, "node1.out", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.initiating_rank == 5
    assert all(s.rank != 1 for s in diagnosis.suspects)


def test_every_rank_failing_alike_says_code_or_environment_in_every_view(tmp_path: Path) -> None:
    error = "AttributeError: 'Config' object has no attribute 'warmup_ratio'"
    diagnosis = diagnose([_log(tmp_path, "job.out", "".join(_traceback(rank, 64, error) for rank in range(4)))])
    assert "First failed" not in render_text(diagnosis)
    for view in (render_text(diagnosis), render_markdown(diagnosis)):
        assert "code or the environment, not of one node" in " ".join(view.split())


def test_your_code_is_never_the_launchers_frame(tmp_path: Path) -> None:
    """torchrun's own traceback (its console script, then torch/distributed/run.py in
    site-packages) holds no user frame: the report shows no "Your code"."""
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/conda/bin/torchrun", line 8, in <module>\n'
            "    sys.exit(main())\n"
            '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/run.py", line 1010, in main\n'
            "    run(args)\n"
            '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/'
            'static_tcp_rendezvous.py", line 67, in next_rendezvous\n'
            "    self._store = TCPStore(\n"
            "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.\n")
    diagnosis = diagnose([_log(tmp_path, "node0.out", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "rendezvous-timeout"
    assert diagnosis.root_cause.user_frame is None
    assert "Your code" not in render_text(diagnosis)


GLOO_TIMEOUT = ("[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                "Timed out waiting 8000ms for recv operation to complete\n")


def test_a_gloo_timeout_names_the_rank_that_did_not_arrive_not_the_one_that_waited(tmp_path: Path) -> None:
    steps = "".join(f"[rank{r}]: step {s} ok\n" for s in (1, 2, 3) for r in (0, 1))
    waited = ("[rank0]: Traceback (most recent call last):\n"
              '[rank0]:   File "/workspace/proj/train.py", line 12, in <module>\n'
              "[rank0]:     dist.all_reduce(x)\n"
              '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
              "line 3252, in all_reduce\n"
              "[rank0]:     work.wait()\n" + GLOO_TIMEOUT.format(r=0))
    alone = diagnose([_log(tmp_path, "rank0.out", waited)])
    assert alone.root_cause is not None and alone.root_cause.id == "gloo-collective-timeout"
    assert alone.initiating_rank is None and alone.ranks.failed == []
    assert any("not in this log" in note and "other ranks' logs" in note for note in alone.notes)
    report = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
              "============================================================\n"
              "train.py FAILED\n"
              "------------------------------------------------------------\n"
              "Failures:\n"
              "[1]:\n"
              "  time      : 2026-12-03_08:17:04\n"
              "  host      : localhost\n"
              "  rank      : 1 (local_rank: 1)\n"
              "  exitcode  : -15 (pid: 26380)\n"
              "  error_file: <N/A>\n"
              "  traceback : Signal 15 (SIGTERM) received by PID 26380\n"
              "------------------------------------------------------------\n"
              "Root Cause (first observed failure):\n"
              "[0]:\n"
              "  time      : 2026-12-03_08:17:04\n"
              "  host      : localhost\n"
              "  rank      : 0 (local_rank: 0)\n"
              "  exitcode  : 1 (pid: 26379)\n"
              "  error_file: <N/A>\n"
              "============================================================\n")
    both = diagnose([_log(tmp_path, "job.out", steps + waited + report)])
    assert both.root_cause is not None and both.root_cause.id == "gloo-collective-timeout"
    assert both.initiating_rank == 1 and both.ranks.failed == [1]


def test_ranks_that_only_report_a_peers_shutdown_name_no_one(tmp_path: Path) -> None:
    shutdown = ("[1,{r}]<stderr>:horovod.common.exceptions.HorovodInternalError: Horovod has been shut down. This was "
                "caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor "
                "after one of the ranks finished execution. If the shutdown was caused by an exception, you should see "
                "the exception in the log before the first shutdown message.\n")
    diagnosis = diagnose([_log(tmp_path, "hvd.out", shutdown.format(r=1) + shutdown.format(r=2))])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "horovod-shut-down"
    assert diagnosis.initiating_rank is None and diagnosis.ranks.failed == []
    assert any("is not the cause" in note and "collect its output" in note for note in diagnosis.notes)
    assert "First failed" not in render_text(diagnosis)


def test_torchrun_naming_the_first_exit_does_not_make_a_waiting_rank_the_initiator(tmp_path: Path) -> None:
    """Every rank reports that its peer went away; torchrun's agent saw local rank 0 exit first.
    That exit is one more victim: the report names no first failed rank and says why."""
    remote = ("[rank{r}]:[E1203 10:41:06.{us:06d} ProcessGroupNCCLUtils.cpp:341] [TC][rank={r}][name=0] nccl hit "
              "async error on rank {r}: remote process exited or there was a network error\n")
    text = ("[rank0]:2026-12-03 10:02:14,551 INFO train: backend nccl, world_size=4\n"
            + "".join(f"[rank{r}]:step 7600 loss 2.04\n" for r in range(4))
            + "".join(remote.format(r=r, us=100 + order) for order, r in enumerate((2, 3, 0, 1)))
            + "E1203 10:41:07.640000 51882 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
              "(exitcode: -6) local_rank: 0 (pid: 51901) of binary: /usr/bin/python3\n")
    diagnosis = diagnose([_log(tmp_path, "job.out", text)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "nccl-remote-error"
    assert diagnosis.initiating_rank is None
    assert any("waiting for a peer" in note for note in diagnosis.notes)
