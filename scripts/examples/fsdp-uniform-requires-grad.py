"""Regenerate real examples for fsdp-uniform-requires-grad (CPU, torchrun + gloo, FSDP1).

A LoRA-style fine-tune: the base Linear weights are frozen (requires_grad=False),
small adapter matrices are trainable, and the model is wrapped with FSDP1 with the
default use_orig_params=False. FSDP1 flattens each wrapped unit into one
FlatParameter, which has a single requires_grad flag, so it refuses the unit.

positive-1.log: 2 ranks, plain torchrun console, whole model in one FSDP unit.
positive-2.log: 4 ranks under `torchrun --tee 3`, per-block auto-wrap policy.
negative-1.log: same model with use_orig_params=True: trains (the fix).
negative-2.log: the neighbouring FSDP flatten error (mixed dtype, not requires_grad).

Run: .venv/bin/python scripts/examples/fsdp-uniform-requires-grad.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "fsdp-uniform-requires-grad"

TRAIN = r'''
import functools, sys, time
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

MODE = sys.argv[1]           # "frozen" (bug), "orig" (fix), "dtype" (neighbour)
WRAP = sys.argv[2] == "wrap"

class LoRALinear(nn.Module):
    def __init__(self, d, r=4):
        super().__init__()
        self.base = nn.Linear(d, d)
        self.lora_A = nn.Parameter(torch.randn(r, d) * 0.01)
        self.lora_B = nn.Parameter(torch.zeros(d, r))
    def forward(self, x):
        return self.base(x) + x @ self.lora_A.t() @ self.lora_B.t()

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = LoRALinear(d)
        self.v = LoRALinear(d)
        self.norm = nn.LayerNorm(d)
    def forward(self, x):
        return x + self.v(torch.relu(self.q(self.norm(x))))

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(*[Block(32) for _ in range(3)])
for name, p in model.named_parameters():
    p.requires_grad_("lora_" in name)
if MODE == "dtype":
    for n, p in model.named_parameters():
        p.requires_grad_(True)
    for b in model:
        b.q.base.to(torch.bfloat16)
if rank == 0:
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"trainable params: {trainable:,} || all params: {total:,} || trainable%: {100 * trainable / total:.4f}", flush=True)
policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block}) if WRAP else None
model = FSDP(model, device_id=torch.device("cpu"), auto_wrap_policy=policy,
             use_orig_params=(MODE == "orig"))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for step in range(1, 6):
    x = torch.randn(8, 32)
    loss = model(x).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()
    if rank == 0:
        print(f"{{'loss': {loss.item():.4f}, 'learning_rate': 0.001, 'epoch': {step / 5:.2f}}}", flush=True)
    time.sleep(0.1)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    files = {"finetune_lora.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29671",
                                      "{tmp}/finetune_lora.py", "frozen", "nowrap"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "4", "--master-port", "29672", "--tee", "3",
                                      "{tmp}/finetune_lora.py", "frozen", "wrap"], files=files)
    run_logged(ID, "negative-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29673",
                                      "{tmp}/finetune_lora.py", "orig", "wrap"], files=files)
    run_logged(ID, "negative-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29674",
                                      "{tmp}/finetune_lora.py", "dtype", "wrap"], files=files)
