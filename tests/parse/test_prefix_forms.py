"""Prefix forms as the launchers print them (each checked against the launcher's source)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from traintriage.parse.prefix import failed_process_rank, parse_prefix, span_rank


@pytest.mark.parametrize(
    ("line", "rank", "host", "message_start"),
    [
        # Open MPI 5 (PMIx pmix_iof.c): `--output tag` -> `[jobid,rank]<stream>: `
        ("[1,3]<stderr>: RuntimeError: CUDA error: an illegal memory access was encountered", 3, None, "RuntimeError"),
        # `--output tag-fullname`: the whole namespace before the rank
        ("[prterun-gpu7-81234@1,12]<stdout>: Traceback (most recent call last):", 12, None, "Traceback"),
        # `--output tag-detailed`: `[jobid,rank][hostname:pid]<stream>: `
        ("[1,5][gpu-node-3:44121]<stderr>: torch.OutOfMemoryError: CUDA out of memory.", 5, "gpu-node-3",
         "torch.OutOfMemoryError"),
        # `--output rank`: `[rank]<stream>: `; Open MPI 4 (ORTE) puts no blank after the colon
        ("[7]<stderr>: ValueError: x", 7, None, "ValueError"),
        ("[1,2]<stddiag>:RuntimeError: x", 2, None, "RuntimeError"),
        # --timestamp-output with a tag: ctime in brackets first
        ("[Thu Dec  3 07:12:40 2026][1,4]<stderr>: RuntimeError: x", 4, None, "RuntimeError"),
        # Slurm srun --label: `%*d: ` padded to the width of the task count; het jobs `P%u %*d: `
        (" 7: RuntimeError: x", 7, None, "RuntimeError"),
        ("P1  3: RuntimeError: x", 3, None, "RuntimeError"),
        # pdsh (DeepSpeed's multi-node runner) puts the host first, `localhost` included
        ("localhost: [rank2]: RuntimeError: x", 2, "localhost", "RuntimeError"),
        # kubectl logs --prefix: `[pod/%s/%s] `, then kubectl --timestamps
        ("[pod/trainer-worker-1/pytorch] 2026-12-03T07:12:40.123456789Z [rank9]: RuntimeError: x", 9,
         "trainer-worker-1", "RuntimeError"),
        # a multi-node runner's `<job>.<node> [stream] ` before torchrun's tag (milabench's layout)
        ("bench-a.cn-n001.cluster.example [stderr] [rank11]: FileNotFoundError: x", 11,
         "bench-a.cn-n001.cluster.example", "FileNotFoundError"),
        ("[stdout] [rank3]: RuntimeError: x", 3, None, "RuntimeError"),
        # a tqdm bar that lost its carriage return, the next line (torchrun-tagged) glued to it
        ("Training:  94%|#### | 837/888 [9:42:50<34:08, 40.17s/it][rank7]:[E ProcessGroupNCCL.cpp:1182] x", 7, None,
         "[E ProcessGroupNCCL.cpp:1182] x"),
        # Lightning's rank_prefixed_message: `[rank: N] `
        ("[rank: 1] RuntimeError: x", 1, None, "RuntimeError"),
        # docker compose logs: `%-*s | ` with the container name, then the process's own tags
        ("vllm-openai-1  | (VllmWorker rank=1 pid=3487) ERROR 06-05 16:30:08 [worker_base.py:148] RuntimeError: x", 1,
         "vllm-openai-1", "RuntimeError"),
        # TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:" (the global rank)
        ("[11]:RuntimeError: x", 11, None, "RuntimeError"),
        # an operator merging each node's agent output with a bracketed node tag, before torchrun's own prefixes
        ("[node1] [rank1]: RuntimeError: x", 1, "node1", "RuntimeError"),
        ("[gpu-node-07] [default0]:[rank8]: RuntimeError: x", 8, "gpu-node-07", "RuntimeError"),
        # logging formats: `%(levelname)s [%(name)s]` with a per-rank logger, `[%(processName)s rank=N]`
        ("2026-03-01 10:15:05,202 INFO [trainer.rank3] step 40 | loss 3.21", 3, None, "step 40"),
        ("2026-03-01 10:22:44,703 WARNING [SpawnProcess-3 rank=2] trainer: non-finite grad norm", 2, None, "trainer:"),
        ("[rank=4] RuntimeError: x", 4, None, "RuntimeError"),
    ],
)
def test_launcher_prefixes(line: str, rank: int, host: str | None, message_start: str) -> None:
    prefix = parse_prefix(line, 2026)
    assert prefix.rank == rank
    assert prefix.host == host
    assert prefix.message.startswith(message_start)


@pytest.mark.parametrize(
    ("line", "rank", "message_start"),
    [
        ("(VllmWorker rank=2 pid=55723) ERROR 05-06 16:54:45 [multiproc_executor.py:123] SystemExit:", 2, "SystemExit"),
        ("(VllmWorker PP0_TP3 pid=4412) INFO 12-03 07:12:40 [gpu_model_runner.py:1234] Loading model", 3, "Loading"),
        ("(Worker_TP1 pid=3534) ERROR 10-11 22:28:17 [multiproc_executor.py:694] RuntimeError: Could not find nvcc", 1,
         "RuntimeError"),
        ("(Worker_DP0_TP2_EP2 pid=88242) ERROR 08-14 11:24:36 [multiproc_executor.py:1232] RuntimeError: x", 2,
         "RuntimeError"),
    ],
)
def test_vllm_worker_tags_name_the_worker_rank(line: str, rank: int, message_start: str) -> None:
    prefix = parse_prefix(line, 2026)
    assert prefix.rank == rank
    assert prefix.message.startswith(message_start)


@pytest.mark.parametrize(
    "line",
    [
        # a later pipeline stage: its TP rank is not its rank in the executor's world
        "(Worker_PP1_TP0 pid=88241) ERROR 08-14 11:24:36 [multiproc_executor.py:1232] RuntimeError: x",
        # one worker, no parallel dimension: the tag names no rank
        "(Worker pid=1162) INFO 10-10 11:32:51 [multiproc_executor.py:558] Parent process exited, terminating worker",
        "(EngineCore_DP0 pid=265) ERROR 02-27 10:31:15 [core.py:936] RuntimeError: x",
    ],
)
def test_vllm_tags_without_a_rank_are_peeled_without_one(line: str) -> None:
    prefix = parse_prefix(line, 2026)
    assert prefix.rank is None
    assert prefix.message.startswith(("RuntimeError", "Parent process"))


@pytest.mark.parametrize(
    "line",
    ["(Worker_TP1 pid=530) INFO 10-06 18:54:29 [v1/worker/gpu_model_runner.py:2641] Loading",
     "(RayWorkerWrapper pid=263) INFO 10-06 18:54:29 model_runner.py:1115] Loading"],
)
def test_vllm_logger_header_gives_the_time(line: str) -> None:
    prefix = parse_prefix(line, 2026)
    assert prefix.time == datetime(2026, 10, 6, 18, 54, 29, tzinfo=timezone.utc)
    assert prefix.message == "Loading"


@pytest.mark.parametrize(
    ("line", "local_rank", "rank"),
    [
        ("[default3]:RuntimeError: x", 3, None),
        ("[trainer1]:RuntimeError: x", 1, None),
        # the inner PyTorch tag is the global rank
        ("[default3]:[rank11]: RuntimeError: x", 3, 11),
        # srun's task outside a per-node torchrun counts nodes: no rank from it
        ("2: [default0]:RuntimeError: x", 0, None),
        ("gpu-node-2: [default5]:RuntimeError: x", 5, None),
    ],
)
def test_torchrun_tag_is_kept_apart_as_the_local_rank(line: str, local_rank: int, rank: int | None) -> None:
    prefix = parse_prefix(line)
    assert prefix.local_rank == local_rank
    assert prefix.rank == rank
    assert prefix.message.startswith("RuntimeError")


@pytest.mark.parametrize(
    "line",
    [
        # a timestamp is not an srun label, nor a rank
        "2026-12-03 07:12:40,101 RuntimeError: x",
        "07:12:40 RuntimeError: x",
        # Open MPI's tag inside a message is not a prefix
        "RuntimeError: rank [1,3]<stderr>: x",
        "Error: [1,3] ranks failed",
        # torchrun's failure report numbers its entries `[0]:` on a line of their own
        "[0]:",
        # a bracketed list, a tuple, a Python repr
        "[1, 3] were the ranks",
        "(3, 4) shape mismatch",
        "(pid=1234) not a worker tag",
        # exception names and words before a colon are not hosts
        "Segmentation: fault",
        "warning: something",
        # a table row is not a docker compose container
        "0 | model | GPT | 124 M",
        "train_loss    | 2.31",
        # a counter's or a logger's bracketed tag is no node
        "[epoch3] loss 2.31",
        "[step_120] loss 2.31",
        "[Train] epoch 3",
    ],
)
def test_lookalikes_name_no_rank(line: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank is None
    assert prefix.local_rank is None
    assert prefix.host is None


def test_a_ray_worker_tag_names_its_node() -> None:
    prefix = parse_prefix("(RayWorkerWrapper pid=4412, ip=10.0.3.17) ERROR 12-03 07:12:40 [worker_base.py:620] RuntimeError: x")
    assert prefix.host == "10.0.3.17"
    assert prefix.rank is None
    assert prefix.message.startswith("RuntimeError")


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("(RayTrainWorker pid=2364, ip=10.0.0.3) [rank3]: RuntimeError: x", 3),
        ("[2m[36m(RayTrainWorker pid=2364, ip=10.0.0.3)[0m [rank1]: RuntimeError: x", 1),  # colour codes, ESC lost
        ("\x1b[36m(WorkerDict pid=1234)\x1b[0m [rank2]: RuntimeError: x", 2),
        ("(pid=77) [rank0]: RuntimeError: x", 0),
    ],
)
def test_any_ray_actor_prefix_is_peeled(line: str, rank: int) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank == rank
    assert prefix.message == "RuntimeError: x"


def test_a_timestamp_with_a_spaced_utc_offset_is_one_prefix() -> None:
    prefix = parse_prefix("2025-11-09 15:39:31.043 +08:00 [rank2]: RuntimeError: x")
    assert prefix.rank == 2 and prefix.time is not None and prefix.time.hour == 7


@pytest.mark.parametrize("line", ["(autoscaler +1m2s) Adding 1 node", "(see above) failed"])
def test_parentheses_without_a_pid_are_text(line: str) -> None:
    assert parse_prefix(line).message == line


@pytest.mark.parametrize("line", ["[1,3]<std", "[pod/trainer-", "(Worker_TP", "P1  ", "[Thu Dec  3 07:12", "(VllmWorker rank=3 pi"])
def test_a_line_cut_inside_a_prefix_is_kept_as_text(line: str) -> None:
    prefix = parse_prefix(line)
    assert prefix.rank is None
    assert prefix.message == line.strip()


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("(EngineCore pid=162129) ERROR 08-14 16:07:03 [multiproc_executor.py:295] Worker proc VllmWorker-2 died "
         "unexpectedly (exit code: None), shutting down executor.", 2),
        ("ERROR 05-06 16:54:45 [ray_executor_v2.py:464] RayWorkerProc rank=[3] died unexpectedly, shutting down executor.", 3),
        ("2023-12-16T09:36:24.632149Z ERROR text_generation_launcher: Shard 0 failed to start", 0),
        ("2024-01-02T10:00:00.000000Z ERROR text_generation_launcher: Shard 3 crashed", 3),
    ],
)
def test_serving_launchers_name_the_worker_that_died(line: str, rank: int) -> None:
    assert failed_process_rank(parse_prefix(line).message) == rank


@pytest.mark.parametrize(
    ("line", "rank"),
    [(" rank=0", 0), ("ValueError: bad shape rank=1", 1), ("  warn(\"x\") rank=12", 12), ("rank=3 rest of text", None),
     ("world_rank=3", None), ("the rank=3.5 fraction", None)],
)
def test_tgi_span_field_at_the_end_of_a_line(line: str, rank: int | None) -> None:
    assert span_rank(line) == rank
