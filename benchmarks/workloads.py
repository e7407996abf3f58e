"""Synthetic but format-true workloads for the speed benchmark (kept out of git).

- a 64-rank torchrun `--tee` console log: NCCL INFO chatter, warnings, tqdm bars with
  `\\r`, step lines, and near the end a CUDA OOM on one rank with NCCL watchdog
  timeouts on every other rank and torchrun's ChildFailedError report;
- the same console dense with errors the run survived (a skipped sample's traceback on every
  rank every other step);
- a directory of per-rank files (`rank<N>.log`), the failure in one of them;
- a small single-process crash log.
"""

from __future__ import annotations

import random
from pathlib import Path

RANKS = 64
FAILING_RANK = 37


def _init_block(ranks: int) -> list[str]:
    lines = []
    for rank in range(ranks):
        node, local = divmod(rank, 8)
        prefix = f"[default{rank}]:"
        lines += [
            f"{prefix}gpu-node{node:02d}:{4100 + rank}:{4100 + rank} [{local}] NCCL INFO Bootstrap : Using eth0:10.1.{node}.{local + 10}<0>",
            f"{prefix}gpu-node{node:02d}:{4100 + rank}:{4100 + rank} [{local}] NCCL INFO NCCL version 2.21.5+cuda12.4",
            f"{prefix}gpu-node{node:02d}:{4100 + rank}:{4200 + rank} [{local}] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
            f"{prefix}gpu-node{node:02d}:{4100 + rank}:{4200 + rank} [{local}] NCCL INFO comm 0x55d1c9a0 rank {rank} nRanks {ranks} nNodes {ranks // 8} localRanks 8 localRank {local} MNNVL 0",
            f"{prefix}/usr/lib/python3/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated.",
        ]
    return lines


def _step_block(step: int, ranks: int, rng: random.Random) -> str:
    lines = []
    for rank in range(ranks):
        loss = 2.5 - step * 1e-5 + rng.random() * 0.05
        lines.append(f"[default{rank}]:[rank{rank}]: 2024-05-01 09:{(step // 60) % 60:02d}:{step % 60:02d},{rank:03d} INFO "
                     f"step {step} loss {loss:.4f} lr 3.0e-04 grad_norm 0.{rank + 10} step_time 412.{rank} ms")
    bar = "".join(f"\r {p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<00:10, 9.8it/s]" for p in range(0, 101, 25))
    lines.append(f"[default0]:{bar}")
    return "\n".join(lines) + "\n"


def _failure(ranks: int, failing: int) -> str:
    node = failing // 8
    p = f"[default{failing}]:[rank{failing}]: "
    lines = [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/workspace/train.py", line 214, in <module>',
        f"{p}    main()",
        f'{p}  File "/workspace/train.py", line 187, in main',
        f"{p}    loss = model(batch).loss",
        f"{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 5 has a total capacity of "
        f"79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory in use. "
        f"Of the allocated memory 74.20 GiB is allocated by PyTorch, and 2.40 GiB is reserved by PyTorch but unallocated. "
        f"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
        f"avoid fragmentation.  See documentation for Memory Management  "
        f"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]
    for rank in range(ranks):
        if rank == failing:
            continue
        lines.append(
            f"[default{rank}]:[rank{rank}]:[E501 10:12:11.{rank:06d} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=26214400, "
            f"NumelOut=26214400, Timeout(ms)=600000) ran for 600074 milliseconds before timing out.")
    lines += [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-05-01_10:02:11",
        f"  host      : gpu-node{node:02d}",
        f"  rank      : {failing} (local_rank: {failing % 8})",
        "  exitcode  : 1 (pid: 41237)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    return "\n".join(lines) + "\n"


def write_console_log(path: Path, size: int, ranks: int = RANKS, failing: int = FAILING_RANK) -> Path:
    """A single console log of about `size` bytes, the failure in the last 0.1%."""
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as out:
        out.write("\n".join(_init_block(ranks)) + "\n")
        written = out.tell()
        step = 0
        template = [_step_block(s, ranks, rng) for s in range(64)]
        while written < size * 0.999:
            block = template[step % 64]
            out.write(block)
            written += len(block)
            step += 1
        out.write(_failure(ranks, failing))
    return path


def _skipped_sample_block(step: int, ranks: int) -> str:
    """Every rank logs a sample it could not decode, with the traceback `logger.exception` prints,
    and trains on: an error-dense console whose errors the run survived."""
    lines = []
    for rank in range(ranks):
        p = f"[default{rank}]:[rank{rank}]: "
        offset = (step * 7919 + rank * 104729) % 10_000_000
        lines += [
            f"{p}2024-05-01 09:{(step // 60) % 60:02d}:{step % 60:02d},{rank:03d} ERROR dataset.py:142 could not decode "
            f"sample {offset}, skipping",
            f"{p}Traceback (most recent call last):",
            f'{p}  File "/workspace/data/dataset.py", line 139, in __getitem__',
            f"{p}    return self._decode(self.index[i])",
            f'{p}  File "/workspace/data/dataset.py", line 121, in _decode',
            f'{p}    raise ValueError(f"bad record header at offset {{off}}")',
            f"{p}ValueError: bad record header at offset {offset}",
        ]
    return "\n".join(lines) + "\n"


def write_error_dense_log(path: Path, size: int, ranks: int = RANKS, failing: int = FAILING_RANK) -> Path:
    """A console log in which every rank logs a skipped sample's traceback every other step (about
    half of all lines are error lines), then the same OOM near the end."""
    rng = random.Random(11)
    with path.open("w", encoding="utf-8") as out:
        out.write("\n".join(_init_block(ranks)) + "\n")
        written = out.tell()
        step = 0
        while written < size * 0.999:
            block = _step_block(step, ranks, rng) + (_skipped_sample_block(step, ranks) if step % 2 else "")
            out.write(block)
            written += len(block)
            step += 1
        out.write(_failure(ranks, failing))
    return path


def write_rank_dir(root: Path, files: int, size: int, failing: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(3)
    for rank in range(files):
        with (root / f"rank{rank}.log").open("w", encoding="utf-8") as out:
            written = 0
            step = 0
            while written < size:
                loss = 2.5 + rng.random() * 0.05
                line = (f"2024-05-01 09:{(step // 60) % 60:02d}:{step % 60:02d},{rank % 1000:03d} INFO step {step} "
                        f"loss {loss:.4f} lr 3.0e-04 step_time 412.0 ms\n")
                out.write(line)
                written += len(line)
                step += 1
            if rank == failing:
                out.write("2024-05-01 10:02:11,123 ERROR Traceback (most recent call last):\n")
                out.write('  File "/workspace/train.py", line 187, in main\n')
                out.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 0 has a total "
                          "capacity of 79.15 GiB of which 1.02 GiB is free.\n")
            else:
                out.write(f"2024-05-01 10:12:11,{rank % 1000:03d} ERROR [Rank {rank}] Watchdog caught collective operation "
                          "timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
                          "Timeout(ms)=600000) ran for 600074 milliseconds before timing out.\n")
    return root


def write_small_crash(path: Path, size: int = 100_000) -> Path:
    write_console_log(path, size, ranks=4, failing=2)
    return path


def _metric_line(shape: int, step: int, rank: int, rng: random.Random) -> str:
    """One step's metrics in one of the shapes trainers print (issue 17)."""
    loss = 2.31 - step * 1e-5 + rng.random() * 0.05
    if shape == 0:  # plain `key value |` logger line
        return (f"[INFO] [trainer.py:412] step {step} | loss {loss:.2f} | grad_norm {1 + rng.random():.2f} "
                f"| lr 3.0e-04 | tokens/s {91000 + rng.randrange(2000)}")
    if shape == 1:  # Hugging Face Trainer log dict
        return (f"{{'loss': {loss:.4f}, 'grad_norm': {1 + rng.random():.4f}, 'learning_rate': 2e-05, "
                f"'epoch': {step / 10000:.2f}}}")
    if shape == 2:  # Lightning progress bar postfix (tqdm)
        return (f"Epoch 0:  {step % 100:2d}%|{'#' * (step % 10):<10}| {step % 1000}/1000 [00:{step % 60:02d}<01:40, "
                f"9.87it/s, loss={loss:.3f}, v_num=3]")
    # Megatron-LM training log line
    return (f" iteration {step:8d}/  500000 | consumed samples: {step * 512:12d} | elapsed time per iteration (ms): "
            f"{412 + rng.random():.1f} | learning rate: 3.000E-04 | global batch size:   512 | lm loss: {loss:.6E} "
            f"| loss scale: 1.0 | grad norm: {1 + rng.random():.3f} | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |")


def write_metric_console_log(path: Path, size: int, ranks: int = RANKS, failing: int = FAILING_RANK) -> Path:
    """A console log dense with training metrics: ~70% of lines are step metrics (four common
    shapes, a block of each in turn), the rest NCCL INFO and tqdm; one OOM near the end."""
    rng = random.Random(11)
    blocks = []
    for step in range(256):
        shape = (step // 64) % 4
        lines = [f"[default{rank}]:{_metric_line(shape, step, rank, rng)}" for rank in range(ranks)]
        for rank in range(0, ranks, 3):
            node, local = divmod(rank, 8)
            lines.append(f"[default{rank}]:gpu-node{node:02d}:{4100 + rank}:{4200 + rank} [{local}] NCCL INFO "
                         f"Channel {step % 32:02d}/0 : {rank} -> {(rank + 1) % ranks} via P2P/CUMEM/read")
        bar = "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<00:10, 9.8it/s]" for p in (0, 50, 100))
        lines.append(f"[default0]:{bar}")
        blocks.append("\n".join(lines) + "\n")
    with path.open("w", encoding="utf-8") as out:
        out.write("\n".join(_init_block(ranks)) + "\n")
        written = out.tell()
        step = 0
        while written < size * 0.999:
            block = blocks[step % len(blocks)]
            out.write(block)
            written += len(block)
            step += 1
        out.write(_failure(ranks, failing))
    return path


def write_fleet_dir(root: Path, files: int = 20_000, size: int = 20_000, failing: int = 4242) -> Path:
    """Many small job logs side by side (a fleet of short jobs): one of them died of an OOM."""
    rng = random.Random(5)
    root.mkdir(parents=True, exist_ok=True)
    for job in range(files):
        lines: list[str] = []
        written = step = 0
        while written < size:
            line = _metric_line(step % 4, step, 0, rng)
            lines.append(line)
            written += len(line) + 1
            step += 1
        if job == failing:
            lines += [line.split("]: ", 1)[1] for line in _failure(1, 0).splitlines()[:6]]
        (root / f"job-{job:05d}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
