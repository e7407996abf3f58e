#!/usr/bin/env python
"""Real example logs for `kernel-not-implemented-for-dtype` (new entry).

positive-1: an SVD-based adapter initialisation (PiSSA-style) runs torch.linalg.svd on
bfloat16 weights on the CPU, where that kernel has no bf16 implementation
("linalg_svd_cpu" not implemented for 'BFloat16').
positive-2 (torchrun): knowledge distillation with teacher logits stored as int16 and
loaded as int64: log_softmax has no integer kernel
("log_softmax_lastdim_kernel_impl" not implemented for 'Long').
Run: .venv/bin/python scripts/examples/kernel-not-implemented-for-dtype.py
"""
ID = "kernel-not-implemented-for-dtype"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    if mode == "single":
        base = nn.Linear(64, 64).to(torch.bfloat16)          # model loaded with torch_dtype=torch.bfloat16
        print(f"base weight dtype {base.weight.dtype}, initialising rank-8 adapter from its SVD", flush=True)
        U, S, Vh = torch.linalg.svd(base.weight, full_matrices=False)   # BUG: no bf16 CPU kernel
        print(U.shape, flush=True)
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        student = nn.parallel.DistributedDataParallel(nn.Linear(32, 100))
        teacher_logits = torch.randint(-300, 300, (16, 100))  # BUG: int16 logits from disk, never scaled/cast
        x = torch.randn(16, 32)
        print(f"[rank{dist.get_rank()}] distillation batch: teacher logits {teacher_logits.dtype}", flush=True)
        t = F.log_softmax(teacher_logits, dim=-1)                 # integer tensor: no kernel
        loss = F.kl_div(F.log_softmax(student(x), -1), t, log_target=True, reduction="batchmean")
        loss.backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
