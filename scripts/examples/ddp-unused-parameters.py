"""Regenerate real examples for ddp-unused-parameters (CPU, gloo).

positive-1.log: 2 ranks under `torchrun --tee 3`: the model has an auxiliary head that the
  loss does not use; DDP(find_unused_parameters=False) fails at the second iteration.
positive-2.log: the same model, 2 ranks, plain torchrun console (no --tee) with
  TORCH_DISTRIBUTED_DEBUG=INFO, which names the parameters that got no grad (DETAIL
  segfaults DDP on gloo/CPU in torch 2.13 before the first step, so INFO is used).
negative-1.log: find_unused_parameters=True on a model that uses every parameter: DDP
  warns about the wasted traversal and the run finishes.

Run: .venv/bin/python scripts/examples/ddp-unused-parameters.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "ddp-unused-parameters"

TRAIN = r'''
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

MODE = sys.argv[1]

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Linear(32, 64)
        self.head = torch.nn.Linear(64, 10)
        self.aux_head = torch.nn.Linear(64, 4)   # only used when aux loss is enabled

    def forward(self, x, use_aux=False):
        h = torch.relu(self.backbone(x))
        out = self.head(h)
        if use_aux:
            return out, self.aux_head(h)
        return out

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = Net()
if MODE == "all-used":
    model.aux_head = torch.nn.Identity()
ddp = DDP(model, find_unused_parameters=(MODE == "all-used"))
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
for step in range(1, 6):
    x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step(); opt.zero_grad()
    print(f"rank {rank} | step {step} | loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29671", "--tee", "3",
                                      "train.py", "unused"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29672", "train.py", "unused"],
               files=files, env={"TORCH_DISTRIBUTED_DEBUG": "INFO"})
    run_logged(ID, "negative-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29673", "--tee", "3",
                                      "train.py", "all-used"], files=files)
