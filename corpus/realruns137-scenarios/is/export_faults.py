"""Train a tiny classifier for a few steps, then export it for serving; flags select the export path/fault.

--fault:
  none          train, then torch.export with a static shape (healthy)
  export-dd     torch.export of a forward with a data-dependent branch
  export-dyn    torch.export with Dim('batch', min=1) but model specialises batch (reshape with constant)
  onnx          torch.onnx.export (needs the onnx/onnxscript packages)
  jit-script    torch.jit.script of a module using **kwargs / Optional without annotation
  jit-trace-ok  torch.jit.trace (healthy; tracer warnings)
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--out-dir", default="export_out")
args = p.parse_args()

if "RANK" in os.environ:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1


def log(msg):
    print(f"[rank{rank}] {msg}", flush=True)


class Classifier(nn.Module):
    def __init__(self, d_in=20, d_h=32, n_cls=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_h)
        self.fc2 = nn.Linear(d_h, n_cls)
        self.temperature = 1.0

    def forward(self, x, mask=None):
        h = F.relu(self.fc1(x))
        if args.fault == "export-dd":
            # drop near-silent batches to save compute at serving time
            if h.sum() > 0:
                h = h * 2.0
        if args.fault in ("export-dyn", "export-dyn2"):
            h = h.reshape(8, -1)  # batch size baked in from training config
        if args.fault == "jit-trace-ok" and h.abs().max() > 1e4:
            h = h.clamp(-1e4, 1e4)  # guard against exploding activations at serving time
        if mask is not None:
            h = h * mask
        return self.fc2(h) / self.temperature


class ScriptHead(nn.Module):
    """Wrapper used for TorchScript serving; accepts optional extra features."""
    def __init__(self, base):
        super().__init__()
        self.base = base

    def forward(self, x, **extra):
        out = self.base(x)
        if "bias" in extra:
            out = out + extra["bias"]
        return out


torch.manual_seed(rank)
model = Classifier()
ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
for step in range(args.steps):
    x = torch.randn(8, 20)
    y = torch.randint(0, 5, (8,))
    loss = F.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    log(f"epoch 0 step {step} train_loss={loss.item():.4f}")

if rank == 0:
    model.eval()
    os.makedirs(args.out_dir, exist_ok=True)
    example = (torch.randn(8, 20),)
    log(f"exporting model ({args.fault}) to {args.out_dir}")
    if args.fault in ("none", "export-dd"):
        ep = torch.export.export(model, example)
        torch.export.save(ep, os.path.join(args.out_dir, "model.pt2"))
    elif args.fault == "export-dyn":
        batch = torch.export.Dim("batch", min=1, max=1024)
        ep = torch.export.export(model, example, dynamic_shapes={"x": {0: batch}, "mask": None})
        torch.export.save(ep, os.path.join(args.out_dir, "model.pt2"))
    elif args.fault == "export-dyn2":
        batch = torch.export.Dim("batch", min=1, max=1024)
        ep = torch.export.export(model, example, dynamic_shapes={"x": {0: batch}})
        torch.export.save(ep, os.path.join(args.out_dir, "model.pt2"))
    elif args.fault == "onnx":
        torch.onnx.export(model, example, os.path.join(args.out_dir, "model.onnx"),
                          input_names=["x"], output_names=["logits"], dynamo=True)
    elif args.fault == "jit-script":
        scripted = torch.jit.script(ScriptHead(model))
        scripted.save(os.path.join(args.out_dir, "model.ts"))
    elif args.fault == "jit-trace-ok":
        traced = torch.jit.trace(model, example, check_trace=True)
        traced.save(os.path.join(args.out_dir, "model.ts"))
    elif args.fault == "save-module":
        # ship the whole module object so serving does not need the class definition... (it does)
        torch.save(model, os.path.join(args.out_dir, "model_full.pt"))
        log("saved full module; verifying it loads for serving")
        served = torch.load(os.path.join(args.out_dir, "model_full.pt"))
        served.eval()
    log("export written")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
log("finished")
