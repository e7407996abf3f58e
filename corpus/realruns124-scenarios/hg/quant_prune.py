"""Fine-tune with DDP (torch.multiprocessing.spawn, gloo), then post-training compression on rank 0:
dynamic/static quantization with torch.ao, magnitude pruning, and a short head re-fine-tune.
--mode selects the post-training path (some of them contain the bug under test)."""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn.utils import prune

sys.path.insert(0, os.path.dirname(__file__))
from common_model import Classifier  # noqa: E402


def evaluate(model, X, Y):
    with torch.no_grad():
        return (model(X).argmax(1) == Y).float().mean().item()


def worker(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = Classifier()
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    W = torch.randn(32, 5, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 32, generator=g)
        y = (x @ W).argmax(1)
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"[finetune] step {step:3d} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    Xv = torch.randn(1000, 32, generator=torch.Generator().manual_seed(99))
    Yv = (Xv @ W).argmax(1)
    if rank == 0:
        m = ddp.module.eval()
        print(f"[compress] fp32 accuracy {evaluate(m, Xv, Yv):.4f}", flush=True)
        if args.mode == "dynamic":
            from torch.ao.quantization import quantize_dynamic
            qm = quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
            print(f"[compress] int8 dynamic accuracy {evaluate(qm, Xv, Yv):.4f}", flush=True)
            for mod in [m.encoder[0], m.encoder[3]]:
                prune.l1_unstructured(mod, "weight", amount=0.6)
            print(f"[compress] pruned(60%) accuracy {evaluate(m, Xv, Yv):.4f}", flush=True)
            for mod in [m.encoder[0], m.encoder[3]]:
                prune.remove(mod, "weight")
            sparsity = (m.encoder[0].weight == 0).float().mean().item()
            torch.save(qm.state_dict(), os.path.join(args.outdir, "model_int8.pt"))
            print(f"[compress] sparsity {sparsity:.2f}; saved model_int8.pt", flush=True)
        elif args.mode == "static-nostub":
            import torch.ao.quantization as tq
            m.qconfig = tq.get_default_qconfig("x86")
            prepared = tq.prepare(m)
            with torch.no_grad():
                for i in range(0, 1000, 100):
                    prepared(Xv[i:i + 100])
            print("[compress] calibration done (10 batches)", flush=True)
            qm = tq.convert(prepared)
            print(f"[compress] int8 static accuracy {evaluate(qm, Xv, Yv):.4f}", flush=True)
        elif args.mode == "head-refinetune":
            # re-fine-tune only the head after pruning, resuming optimizer state from the training ckpt
            for mod in [m.encoder[0], m.encoder[3]]:
                prune.l1_unstructured(mod, "weight", amount=0.5)
                prune.remove(mod, "weight")
            for p_ in m.encoder.parameters():
                p_.requires_grad_(False)
            head_opt = torch.optim.AdamW([p_ for p_ in m.parameters() if p_.requires_grad], lr=1e-3)
            ck = torch.load(args.resume, map_location="cpu")
            print(f"[compress] resuming optimizer state from {args.resume} (step {ck['step']})", flush=True)
            head_opt.load_state_dict(ck["optimizer"])
            m.train()
            for _ in range(20):
                x = torch.randn(64, 32)
                loss = F.cross_entropy(m(x), (x @ W).argmax(1))
                head_opt.zero_grad(); loss.backward(); head_opt.step()
            print(f"[compress] pruned+refit accuracy {evaluate(m.eval(), Xv, Yv):.4f}", flush=True)
        elif args.mode == "prune-global":
            params = [(m.encoder[0], "weight"), (m.encoder[3], "weight"), (m.head, "weight")]
            prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.4)
            print(f"[compress] global-pruned accuracy {evaluate(m, Xv, Yv):.4f}", flush=True)
            ts = torch.jit.trace(m, Xv[:4])
            print(f"[compress] traced pruned model: {type(ts).__name__}", flush=True)
    dist.barrier()
    if rank == 0:
        print("[compress] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="dynamic")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=45970)
    p.add_argument("--outdir", default="/work/rr124/hg/out/quant")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--resume", default="/work/rr124/hg/out/ckpt/last.ckpt")
    args = p.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.time()
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
    print(f"total time {time.time()-t0:.1f}s")
