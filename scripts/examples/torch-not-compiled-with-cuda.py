"""Regenerate real examples for torch-not-compiled-with-cuda (this machine has the CPU-only
PyTorch wheel, so every CUDA call fails exactly as it does on a GPU node with the wrong wheel).

positive-1.log: torchrun, 2 ranks, `--tee 3` ([default0]: prefixes); each rank moves the model
  to cuda:<local_rank> -> AssertionError: Torch not compiled with CUDA enabled, then the
  ChildFailedError report.
positive-2.log: plain `python train.py` with logging timestamps; torch.cuda.set_device() on the
  CPU wheel -> AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'.
positive-3.log: torchrun, 2 ranks, init_process_group("nccl") on the CPU wheel ->
  RuntimeError: Distributed package doesn't have NCCL built in.
negative-1.log: the same training script checks torch.cuda.is_available(), falls back to CPU,
  GradScaler warns that CUDA is not available, and the run completes (exit 0).

Run: .venv/bin/python scripts/examples/torch-not-compiled-with-cuda.py
"""

from __future__ import annotations

from _runner import PY, TORCHRUN, run_logged

ID = "torch-not-compiled-with-cuda"

TRAIN = r'''
import logging, os, sys, time
import torch
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
MODE = sys.argv[1]
local_rank = int(os.environ.get("LOCAL_RANK", 0))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))
log.info("model parameters: %d", sum(p.numel() for p in model.parameters()))
if MODE == "to-cuda":
    dist.init_process_group("gloo")
    log.info("rank %d/%d initialised (backend=gloo)", dist.get_rank(), dist.get_world_size())
    model = model.to(f"cuda:{local_rank}")
elif MODE == "set-device":
    log.info("selecting GPU %d", local_rank)
    torch.cuda.set_device(local_rank)
elif MODE == "nccl":
    log.info("initialising process group, backend=nccl")
    dist.init_process_group("nccl")
elif MODE == "fallback":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    log.info("CUDA available: %s -> training on %s", torch.cuda.is_available(), device)
    scaler = torch.cuda.amp.GradScaler(enabled=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(1, 6):
        x, y = torch.randn(32, 128), torch.randint(0, 10, (32,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("step %d/5 loss %.4f", step, loss.item())
    log.info("training finished")
'''


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29711", "--tee", "3",
                                      "train.py", "to-cuda"], files=files)
    run_logged(ID, "positive-2.log", [PY, "train.py", "set-device"], files=files)
    run_logged(ID, "positive-3.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29712", "train.py", "nccl"],
               files=files)
    run_logged(ID, "negative-1.log", [PY, "train.py", "fallback"], files=files)
