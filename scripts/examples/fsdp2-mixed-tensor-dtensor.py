"""Regenerate real examples for fsdp2-mixed-tensor-dtensor (CPU, torchrun + gloo, FSDP2).

A small LM ties its output projection to the input embedding
(`logits = h @ self.embed.weight.t()` in the root forward). The embedding is given
its own `fully_shard` unit, so once its own forward has run its parameter is
resharded back to a DTensor shard; the root forward then multiplies a plain
torch.Tensor by that DTensor and the DTensor dispatcher refuses the mixed op.

positive-1.log: 2 ranks, plain torchrun console.
positive-2.log: 4 ranks under `torchrun --tee 3`.
negative-1.log: the fix (the tied embedding is not its own fully_shard unit; it stays
                in the root's unit, which is unsharded for the whole root forward).

Run: .venv/bin/python scripts/examples/fsdp2-mixed-tensor-dtensor.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "fsdp2-mixed-tensor-dtensor"

TRAIN = r'''
import sys, time
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

SHARD_EMBED = sys.argv[1] == "bug"

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
    def forward(self, x):
        return x + self.mlp(self.norm(x))

class TinyLM(nn.Module):
    def __init__(self, vocab=128, d=32, n=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block(d) for _ in range(n))
        self.norm = nn.LayerNorm(d)
    def forward(self, ids):
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h) @ self.embed.weight.t()     # tied output projection

dist.init_process_group("gloo")
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("dp",))
torch.manual_seed(0)
model = TinyLM()
for layer in model.layers:
    fully_shard(layer, mesh=mesh)
if SHARD_EMBED:
    fully_shard(model.embed, mesh=mesh)
fully_shard(model, mesh=mesh)
if rank == 0:
    print(f"[titan] model sharded with FSDP2 over mesh {mesh}", flush=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(1, 6):
    ids = torch.randint(0, 128, (4, 16))
    logits = model(ids)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten())
    loss.backward(); opt.step(); opt.zero_grad()
    if rank == 0:
        print(f"[titan] step: {step}  loss: {loss.item():7.4f}  memory: 0.00GiB(0.00%)", flush=True)
    time.sleep(0.1)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    files = {"train_fsdp2.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29691",
                                      "{tmp}/train_fsdp2.py", "bug"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "4", "--master-port", "29692", "--tee", "3",
                                      "{tmp}/train_fsdp2.py", "bug"], files=files)
    run_logged(ID, "negative-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29693",
                                      "{tmp}/train_fsdp2.py", "fix"], files=files)
