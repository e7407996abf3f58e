"""Masking throughput next to a Hyperscan scan-only pass over the same synthetic log.

    .venv/bin/python benchmarks/bench_mask.py [--mb 200] [--keep]

Writes a ~200 MB log of one training run (an elastic restart every 20 MB: env dump with
secrets, NCCL INFO chatter from 64 ranks with IPs, step lines, a crash with tracebacks from
every rank) to a temporary directory, then times:

- masking: ``mask_stream`` from the file to a null sink (everything the CLI does but I/O);
- hyperscan scan-only: the masker's own prefilter database over the same bytes, 8 MB at a
  time, with a callback that only counts matches (the floor a multi-pattern scan costs);
- python re per line: every detector's precise regex on every line, over a sample
  (what masking would cost without the prefilter).

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import hyperscan

from traintriage.ingest.mask import ALL_DETECTORS, mask_stream
from traintriage.ingest.mask.prefilter import detector_database

CHUNK = 8 << 20


class _Null:
    def write(self, data: bytes) -> int:
        return len(data)


def _fake(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


class _Run:
    """The fixed facts of one training run: its secrets, user and hosts."""

    def __init__(self, rng: random.Random, fresh_secrets: bool = False) -> None:
        self.rng = rng
        self.fresh_secrets = fresh_secrets
        self.user = "jdoe"
        self.secrets = self._secrets()

    def _secrets(self) -> list[str]:
        rng = self.rng
        return [
            "HF_TOKEN=hf_" + _fake(rng, _ALNUM, 34),
            "WANDB_API_KEY=" + _fake(rng, "0123456789abcdef", 40),
            "PGPASSWORD=" + _fake(rng, _ALNUM + "!#%", 18),
            "MLFLOW_TRACKING_URI=https://mlflow:" + _fake(rng, _ALNUM, 16) + "@mlflow.example.internal",
        ]

    def attempt(self, attempt: int, steps: int) -> list[str]:
        """One attempt (the first, or an elastic restart): env dump, NCCL init, training, a crash."""
        rng = self.rng
        if self.fresh_secrets and attempt:
            self.secrets = self._secrets()
        ips = [f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(8)]
        out = [
            f"+ export MASTER_ADDR={ips[0]}",
            "+ export MASTER_PORT=29500",
            *self.secrets,
            f"HOME=/home/{self.user}",
            f"#SBATCH --mail-user={self.user}@example.org",
            "NCCL_DEBUG=INFO",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ]
        for rank in range(64):
            host = f"gpu-node-{rank // 8:03d}"
            pid = 100000 + 97 * rank + attempt
            pre = f"{host}:{pid}:{pid + 211} [{rank % 8}] NCCL INFO"
            out.append(f"{pre} Bootstrap : Using ens5:{ips[rank // 8]}<0>")
            out.append(f"{pre} NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ens5:{ips[rank // 8]}<0>")
            out.append(f"{pre} cudaDriverVersion 12040")
            out.append(f"{pre} NCCL version 2.19.3+cuda12.4")
            for channel in range(24):
                out.append(
                    f"{pre} Channel {channel:02d}/0 : {rank}[{rank % 8}] -> {(rank + 1) % 64}[{(rank + 1) % 8}] "
                    "via P2P/IPC/read"
                )
            out.append(
                f"{pre} comm 0x5406abeb8db5 rank {rank} nranks 64 cudaDev {rank % 8} nvmlDev {rank % 8} "
                "busId 3b000 commId 0xd5de259ea610d224 - Init COMPLETE"
            )
        for step in range(steps):
            stamp = f"[2024-05-02 {step // 3600 % 24:02d}:{step // 60 % 60:02d}:{step % 60:02d},{rng.randint(0, 999):03d}]"
            out.append(
                f"{stamp} [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, "
                f"lr=[{1e-4 * step / steps:.6e}], mom=[(0.9, 0.95)]"
            )
            out.append(
                f"{{'loss': {3 - step / steps + rng.random() / 10:.4f}, 'grad_norm': {rng.random() * 2:.4f}, "
                f"'learning_rate': {1e-4 * step / steps:.4e}, 'epoch': {step / steps:.2f}}}"
            )
            out.append(f" {100 * step // steps:3d}%|▊         | {step}/{steps} [04:15<52:25, 0.54it/s]")
            if step % 1000 == 0:
                out.append(
                    f"[rank{rng.randint(0, 63)}]:[W socket.cpp:697] [c10d] client socket failed to connect "
                    f"to [{ips[0]}]:29500"
                )
        for rank in range(64):
            out += [
                f"[rank{rank}]: Traceback (most recent call last):",
                f'[rank{rank}]:   File "/home/{self.user}/src/llm/train.py", line 211, in <module>',
                f'[rank{rank}]:   File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", '
                "line 1532, in _wrapped_call_impl",
                f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.25 GiB. "
                f"GPU {rank % 8} has a total capacity of 79.15 GiB",
                f"[rank{rank}]: frame #3: c10::cuda::CUDACachingAllocator::raw_alloc + 0x7f12345 "
                "(0x7f8a2c1d3e4f in libc10_cuda.so)",
            ]
        return out


def generate(
    path: Path, megabytes: int, seed: int = 7, attempt_mb: float = 20, fresh_secrets: bool = False
) -> int:
    """Write ``megabytes`` of one run's log (an elastic restart every ``attempt_mb``) to ``path``."""
    rng = random.Random(seed)
    run = _Run(rng, fresh_secrets)
    target = megabytes << 20
    steps = max(100, int(attempt_mb * 3900))  # about 270 bytes of step output per step
    attempt = 0
    with path.open("wb") as out:
        written = 0
        while written < target:
            data = ("\n".join(run.attempt(attempt, steps)) + "\n").encode()
            out.write(data)
            written += len(data)
            attempt += 1
    return path.stat().st_size


def time_masking(path: Path) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    with path.open("rb", buffering=0) as src:
        mask_stream(src, _Null())  # type: ignore[arg-type]
    return time.process_time() - cpu, time.perf_counter() - wall


def time_scan_only(path: Path) -> tuple[float, float, int]:
    database = detector_database(ALL_DETECTORS)
    scratch = hyperscan.Scratch(database)
    count = [0]

    def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
        count[0] += 1

    wall, cpu = time.perf_counter(), time.process_time()
    with path.open("rb", buffering=0) as src:
        while True:
            block = src.read(CHUNK)
            if not block:
                break
            database.scan(block, match_event_handler=on_match, scratch=scratch)
    return time.process_time() - cpu, time.perf_counter() - wall, count[0]


def time_python_per_line(path: Path, sample_mb: int = 10) -> tuple[float, float, int]:
    with path.open("rb") as src:
        sample = src.read(sample_mb << 20)
    lines = sample.decode("utf-8", "replace").split("\n")
    patterns = [d.pattern for d in ALL_DETECTORS]
    wall, cpu = time.perf_counter(), time.process_time()
    for line in lines:
        for pattern in patterns:
            pattern.search(line)
    return time.process_time() - cpu, time.perf_counter() - wall, len(sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the synthetic log (default 200)")
    parser.add_argument("--attempt-mb", type=float, default=20, help="MB between restarts (default 20)")
    parser.add_argument(
        "--fresh-secrets", action="store_true", help="new secrets at every restart (stresses learned values)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated log and print its path")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="bench-mask-")
    path = Path(directory) / "synthetic-train.log"
    size = generate(path, args.mb, attempt_mb=args.attempt_mb, fresh_secrets=args.fresh_secrets)
    mb = size / (1 << 20)
    scan_cpu, scan_wall, matches = time_scan_only(path)
    mask_cpu, mask_wall = time_masking(path)
    py_cpu, py_wall, py_bytes = time_python_per_line(path)
    py_mb = py_bytes / (1 << 20)
    print(f"input: {mb:.0f} MB synthetic log ({path if args.keep else 'temporary'}), MB/s by CPU time (wall)")
    print(
        f"hyperscan scan-only  : {mb / scan_cpu:8.1f} MB/s ({mb / scan_wall:.1f})  {matches} prefilter matches"
    )
    print(f"masking (mask_stream): {mb / mask_cpu:8.1f} MB/s ({mb / mask_wall:.1f})")
    print(
        f"python re per line   : {py_mb / py_cpu:8.1f} MB/s ({py_mb / py_wall:.1f})  all detectors, {py_mb:.0f} MB sample"
    )
    if not args.keep:
        os.unlink(path)
        os.rmdir(directory)


if __name__ == "__main__":
    main()
