"""torchrun's local rank stands for the global rank only when the log shows one node."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered"


def _failure(tag: str) -> list[str]:
    return [f"{tag}Traceback (most recent call last):", f'{tag}  File "/workspace/train.py", line 40, in <module>',
            f"{tag}    loss.backward()", f"{tag}{_ERROR}"]


def test_one_node_local_rank_is_the_rank(tmp_path: Path) -> None:
    lines = [f"[default{r}]:step 10 loss 2.31" for r in range(4)] + _failure("[default2]:")
    path = tmp_path / "one-node.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == 2


def test_two_hosts_local_rank_is_not_named_global(tmp_path: Path) -> None:
    """pdsh hosts show two nodes: `[default2]:` on the second is not global rank 2."""
    lines = [f"node{n}: [default{r}]:step 10 loss 2.31" for n in (1, 2) for r in range(4)]
    lines += [f"node2: {line}" for line in _failure("[default2]:")]
    path = tmp_path / "two-nodes.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank != 2


def test_a_global_tag_that_differs_shows_several_nodes(tmp_path: Path) -> None:
    """One line pairing local 3 with global 11 shows the local tags are per node."""
    lines = ["[default3]:[rank11]: step 10 loss 2.31", *_failure("[default1]:")]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n")
    assert diagnose([str(path)]).initiating_rank != 1


def test_torchrun_report_with_a_different_global_rank_shows_several_nodes(tmp_path: Path) -> None:
    lines = [*_failure("[default1]:"),
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "Root Cause (first observed failure):", "[0]:", "  time      : 2026-12-03_07:12:40",
             "  host      : node2", "  rank      : 9 (local_rank: 1)", "  exitcode  : 1 (pid: 4412)",
             "  error_file: <N/A>", "============================================================"]
    path = tmp_path / "report.log"
    path.write_text("\n".join(lines) + "\n")
    assert diagnose([str(path)]).initiating_rank == 9


def test_tgi_rank_after_the_shard_output(tmp_path: Path) -> None:
    """TGI's shard manager closes a shard's stderr dump with its span field ` rank=N`."""
    lines = ["2026-12-03T07:12:40.000000Z ERROR shard-manager: text_generation_launcher: Shard complete standard "
             "error output:", "", "Traceback (most recent call last):",
             '  File "/opt/conda/lib/python3.11/site-packages/text_generation_server/cli.py", line 90, in serve',
             "    server.serve(",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
             "79.25 GiB of which 1.10 GiB is free.", " rank=1",
             "2026-12-03T07:12:41.000000Z ERROR text_generation_launcher: Shard 1 failed to start",
             "2026-12-03T07:12:41.100000Z  INFO shard-manager: text_generation_launcher: Shard terminated rank=0"]
    path = tmp_path / "tgi.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.initiating_rank == 1


def test_vllm_worker_death_names_the_rank(tmp_path: Path) -> None:
    lines = ["(EngineCore_DP0 pid=4400) ERROR 12-03 07:12:40 [core.py:710] EngineCore encountered a fatal error.",
             "(EngineCore_DP0 pid=4400) ERROR 12-03 07:12:40 [core.py:710] RuntimeError: Worker failed with error "
             "'CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.25 GiB of which "
             "1.10 GiB is free.', please check the stack trace above for the root cause",
             "(EngineCore_DP0 pid=4400) ERROR 12-03 07:12:48 [multiproc_executor.py:231] Worker proc VllmWorker-3 "
             "died unexpectedly, shutting down executor."]
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.initiating_rank == 3
