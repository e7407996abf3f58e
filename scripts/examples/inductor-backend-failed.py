#!/usr/bin/env python
"""Real example log for `inductor-backend-failed`.

positive-1: torch.compile (inductor) with a post-grad graph pass that fails on the
captured graph: Inductor wraps the pass's exception into torch._inductor.exc.InductorError
(a BackendCompilerFailed subclass), the current form of "backend='inductor' raised".
positive-2 is written from the 2.1-2.5 source format (BackendCompilerFailed: backend='inductor' raised:).
Run: .venv/bin/python scripts/examples/inductor-backend-failed.py
"""
ID = "inductor-backend-failed"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch._inductor.config as inductor_config
    import torch.nn as nn

    def fuse_bias_gelu(graph):
        # a hand-written fusion pass (as in a vendor/plugin backend) that assumes every
        # linear has a bias: fails on this model
        for node in graph.nodes:
            if node.op == "call_function" and "addmm" not in str(node.target) and "mm" in str(node.target):
                raise AssertionError(f"fuse_bias_gelu: expected addmm with bias, got {node.target}")

    inductor_config.post_grad_custom_post_pass = fuse_bias_gelu
    model = nn.Sequential(nn.Linear(16, 32, bias=False), nn.GELU(), nn.Linear(32, 4))
    compiled = torch.compile(model)
    print("step 0: compiling (first call) ...", flush=True)
    compiled(torch.randn(8, 16)).sum()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
