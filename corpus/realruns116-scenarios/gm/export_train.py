"""Train a tiny regressor (eager, optional gloo DDP), then export it for serving on rank 0.

--export-kind selects the export path used at the end of training:
  jit-script, jit-trace, export, export-dynamic, onnx, none
"""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--export-kind", default="none")
    p.add_argument("--export-dir", default="exports")
    p.add_argument("--model-variant", default="plain",
                   choices=["plain", "dict-input", "clip-branch", "fixed-batch"])
    p.add_argument("--out-style", default="print", choices=["print", "logging", "tqdm"])
    return p.parse_args()


class Regressor(nn.Module):
    def __init__(self, variant="plain", d_in=24, d=64, batch_size=32):
        super().__init__()
        self.variant = variant
        self.batch_size = batch_size
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.SiLU()) for _ in range(2)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        if self.variant == "dict-input":
            # batches come from the collate_fn as dicts
            x = x["features"]
        h = self.inp(x)
        for blk in self.blocks:
            h = h + blk(h)
        if self.variant == "clip-branch":
            # guard against exploding activations at inference time
            if h.norm() > 1e3:
                h = h * (1e3 / h.norm())
        if self.variant == "fixed-batch":
            h = h.reshape(self.batch_size, -1)
        return self.out(h).squeeze(-1)


def main():
    args = get_args()
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=45))
    if args.out_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s - %(message)s")
        log = logging.getLogger("trainer").info
    else:
        def log(m):
            print(f"[rank{rank}] {m}" if world > 1 else m, flush=True)

    torch.manual_seed(0)
    model = Regressor(args.model_variant, batch_size=args.batch_size)
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    w_true = torch.randn(24)
    g = torch.Generator().manual_seed(rank)
    it = range(1, args.steps + 1)
    if args.out_style == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc="train", ncols=90)
    for step in it:
        x = torch.randn(args.batch_size, 24, generator=g)
        y = x @ w_true + 0.1 * torch.randn(args.batch_size, generator=g)
        inp = {"features": x} if args.model_variant == "dict-input" else x
        pred = net(inp)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            msg = f"step {step} mse {loss.item():.4f} lr {opt.param_groups[0]['lr']:.1e}"
            if args.out_style == "tqdm":
                it.write(msg)
            else:
                log(msg)
    log("training finished")

    if rank == 0 and args.export_kind != "none":
        model.eval()
        example = torch.randn(args.batch_size, 24)
        example_in = {"features": example} if args.model_variant == "dict-input" else example
        t0 = time.time()
        log(f"exporting model ({args.export_kind}) to {args.export_dir}")
        if args.export_kind == "jit-script":
            scripted = torch.jit.script(model)
            scripted.save(os.path.join(args.export_dir, "model.ts"))
        elif args.export_kind == "jit-trace":
            traced = torch.jit.trace(model, (example_in,))
            traced.save(os.path.join(args.export_dir, "model_traced.pt"))
        elif args.export_kind == "export":
            ep = torch.export.export(model, (example_in,))
            torch.export.save(ep, os.path.join(args.export_dir, "model.pt2"))
        elif args.export_kind == "export-dynamic":
            batch = torch.export.Dim("batch", min=1, max=1024)
            ep = torch.export.export(model, (example_in,), dynamic_shapes={"x": {0: batch}})
            torch.export.save(ep, os.path.join(args.export_dir, "model_dyn.pt2"))
        elif args.export_kind == "onnx":
            torch.onnx.export(model, (example_in,), os.path.join(args.export_dir, "model.onnx"),
                              input_names=["features"], output_names=["pred"],
                              dynamic_axes={"features": {0: "batch"}})
        log(f"export done in {time.time() - t0:.1f}s")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
