"""Regenerate real examples for fsdp-mixed-dtype-flatten (CPU, torchrun + gloo, FSDP1).

A small transformer-like model is cast to bf16 except its LayerNorms, which are
"kept in fp32 for stability" (a common hand-rolled mixed-precision recipe), then
wrapped with FullyShardedDataParallel. FSDP1 flattens every parameter of a wrapped
unit into one FlatParameter and refuses units that mix dtypes.

positive-1.log: 2 ranks, plain torchrun console ([rankN]: traceback prefixes).
positive-2.log: 4 ranks under `torchrun --tee 3` ([defaultN]: prefixes), with a
                transformer auto-wrap policy so the failing unit is one block.
negative-1.log: same model, but the whole model is left in fp32 and bf16 is asked
                for through FSDP's MixedPrecision(param_dtype=bf16): trains fine.

Run: .venv/bin/python scripts/examples/fsdp-mixed-dtype-flatten.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "fsdp-mixed-dtype-flatten"

TRAIN = r'''
import functools, sys, time
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

MODE = sys.argv[1]          # "cast" (bug), "mp" (fix) or "freeze" (neighbouring class)
WRAP = sys.argv[2] == "wrap"

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
    def forward(self, x):
        return x + self.ff(self.norm(x))

class Model(nn.Module):
    def __init__(self, d=32, n=4):
        super().__init__()
        self.embed = nn.Embedding(100, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, 100)
    def forward(self, ids):
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(x)

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = Model()
if rank == 0:
    print(f"[train] world_size={dist.get_world_size()} params={sum(p.numel() for p in model.parameters())}", flush=True)
if MODE == "cast":
    model.to(torch.bfloat16)
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            m.float()          # keep norms in fp32
    mp = None
elif MODE == "freeze":
    model.embed.weight.requires_grad_(False)   # neighbouring class: frozen params
    mp = None
else:
    mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)
policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block}) if WRAP else None
print(f"[train] rank {rank}: wrapping model with FSDP (auto_wrap={WRAP})", flush=True)
model = FSDP(model, device_id=torch.device("cpu"), auto_wrap_policy=policy, mixed_precision=mp)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(1, 6):
    ids = torch.randint(0, 100, (4, 16))
    loss = nn.functional.cross_entropy(model(ids).flatten(0, 1).float(), ids.flatten())
    loss.backward(); opt.step(); opt.zero_grad()
    if rank == 0:
        print(f"[train] step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.1)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    files = {"train_fsdp.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29661",
                                      "{tmp}/train_fsdp.py", "cast", "nowrap"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "4", "--master-port", "29662", "--tee", "3",
                                      "{tmp}/train_fsdp.py", "cast", "wrap"], files=files)
    run_logged(ID, "negative-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29663",
                                      "{tmp}/train_fsdp.py", "mp", "wrap"], files=files)
    run_logged(ID, "negative-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29664",
                                      "{tmp}/train_fsdp.py", "freeze", "nowrap"], files=files)
