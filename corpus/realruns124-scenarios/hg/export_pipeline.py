"""Train a small classifier with DDP (gloo), then run the post-training export stage.

--fault selects a bug/misconfiguration in the export stage, --fault-rank which rank runs it.
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--outdir", default="/work/rr124/hg/out/export")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("export_pipeline")


def say(msg):
    if args.use_logging:
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


class Classifier(nn.Module):
    def __init__(self, d_in=32, d_hidden=64, n_cls=5):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Dropout(0.1),
                                     nn.Linear(d_hidden, d_hidden), nn.GELU())
        self.head = nn.Linear(d_hidden, n_cls)

    def forward(self, x):
        h = self.encoder(x)
        if h.mean() > 0:          # data-dependent branch (legacy "calibration" trick)
            h = h * 1.0
        return self.head(h)

    def export_head(self):
        return {"head.weight": self.head.weight.detach().clone()}


class ScriptUnfriendly(Classifier):
    def forward(self, x, **kwargs):
        h = self.encoder(x)
        feats = {k: v for k, v in kwargs.items()}
        return self.head(h) + sum(feats.values()) if feats else self.head(h)


dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
torch.manual_seed(0)
model = Classifier() if args.fault != "script" else ScriptUnfriendly()
ddp = DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
g = torch.Generator().manual_seed(100 + rank)
W = torch.randn(32, 5, generator=torch.Generator().manual_seed(7))
t0 = time.time()
for step in range(1, args.steps + 1):
    x = torch.randn(64, 32, generator=g)
    y = (x @ W).argmax(1)
    loss = F.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        l = loss.detach().clone()
        dist.all_reduce(l)
        acc = (ddp(x).argmax(1) == y).float().mean().item()
        say(f"step {step}/{args.steps} loss={l.item()/world:.4f} acc={acc:.3f} lr=3.0e-03 "
            f"elapsed={time.time()-t0:.1f}s")

dist.barrier()
say("training finished; starting export stage")
os.makedirs(args.outdir, exist_ok=True) if args.fault not in ("readonly",) else None
ddp.eval()
example = torch.randn(8, 32)

if rank == args.fault_rank or args.fault in ("none-trace", "none-export"):
    f = args.fault
    if f == "ddp-attr":
        # bug: export helper is called on the DDP wrapper, not the wrapped model
        heads = ddp.export_head()
        torch.save(heads, os.path.join(args.outdir, "head.pt"))
    elif f == "readonly":
        out = args.outdir
        say(f"writing TorchScript artefact to {out}/model_ts.pt")
        ts = torch.jit.trace(ddp.module, example, check_trace=False)
        ts.save(os.path.join(out, "model_ts.pt"))
    elif f == "script":
        say("scripting model with torch.jit.script")
        ts = torch.jit.script(ddp.module)
        ts.save(os.path.join(args.outdir, "model_script.pt"))
    elif f == "trace-check":
        # forgot ddp.module.eval(): dropout active while tracing with check_trace
        m = ddp.module
        m.train()
        say("tracing model with torch.jit.trace(check_trace=True)")
        ts = torch.jit.trace(m, example)
        ts.save(os.path.join(args.outdir, "model_trace.pt"))
    elif f == "onnx":
        say("exporting to ONNX (opset 18)")
        torch.onnx.export(ddp.module, (example,), os.path.join(args.outdir, "model.onnx"),
                          input_names=["features"], output_names=["logits"],
                          dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    elif f == "export-dyn":
        say("torch.export.export with dynamic batch")
        ep = torch.export.export(ddp.module, (example,),
                                 dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
        torch.export.save(ep, os.path.join(args.outdir, "model.pt2"))
    elif f == "numpy-grad":
        # predictions dumped for the eval team without no_grad/detach
        logits = ddp.module(example)
        import numpy as np
        np.save(os.path.join(args.outdir, "preds.npy"), logits.softmax(-1).numpy())
    elif f == "disk-full":
        path = os.path.join(args.outdir, "model_fp32.bin")
        say(f"writing raw weights to {path}")
        with open(path, "wb") as fh:
            for name, t in ddp.module.state_dict().items():
                big = t.repeat(2000, 1) if t.dim() == 2 else t.repeat(2000)
                fh.write(big.numpy().tobytes())
                say(f"  wrote {name} ({big.numel()*4/1e6:.1f} MB)")
    elif f == "none-trace":
        m = ddp.module
        ts = torch.jit.trace(m, example)
        ts.save(os.path.join(args.outdir, f"model_trace_r{rank}.pt"))
        say(f"saved traced model to {args.outdir}/model_trace_r{rank}.pt")
    elif f == "none-export":
        if rank == 0:
            ep = torch.export.export(ddp.module.encoder, (example,))
            say(f"exported graph with {len(ep.graph.nodes)} nodes")
            torch.export.save(ep, os.path.join(args.outdir, "encoder.pt2"))
            sd = {k.replace("module.", ""): v for k, v in ddp.state_dict().items()}
            torch.save(sd, os.path.join(args.outdir, "model_sd.pt"))
            say("saved encoder.pt2 and model_sd.pt")
    say("export stage done")

dist.barrier()
say("all ranks done")
dist.destroy_process_group()
