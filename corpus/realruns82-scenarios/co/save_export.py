"""Train a small MLP/conv classifier (single process, or DDP via torch.multiprocessing.spawn), then checkpoint / reload / export.
--fault selects the bug in the post-training phase."""
import argparse, os, sys, time, math, warnings, argparse as _ap
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--spawn", type=int, default=0, help="number of DDP processes via mp.spawn (0 = single process)")
p.add_argument("--port", default="36820")
p.add_argument("--ckpt-dir", default="/work/rr82/co/tmp_out/ckpt")
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()

class Classifier(nn.Module):
    def __init__(self, width=64, ncls=10):
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 5, padding=2)
        self.fc1 = nn.Linear(8 * 32, width); self.fc2 = nn.Linear(width, ncls)
        self.register_buffer("temp", torch.ones(()))
        self._pos_cache = None
    def pos(self, n):
        if self._pos_cache is None or self._pos_cache.shape[0] != n:
            self._pos_cache = torch.sin(torch.arange(n, dtype=torch.float32) / 10.0)
            if args.fault == "inference_cache":
                self._pos_cache = 1.0 + self._pos_cache
        return self._pos_cache
    def forward(self, x):
        x = x + self.pos(x.shape[-1])
        h = F.relu(self.conv(x.unsqueeze(1)))
        if args.fault == "inference_cache":
            h = h * self.pos(x.shape[-1])   # positional gating, cached
        h = h.flatten(1)
        h = F.relu(self.fc1(h))
        if args.fault in ("export_datadep", "jit_trace_warn", "module_prefix", "jit_trace_nocheck") and h.mean() > 0:   # "skip" calibration when activations positive
            h = h * 1.0
        return self.fc2(h) / self.temp

def worker(rank, world):
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(1234)
    X = torch.randn(1024, 32); Y = (X[:, :10] * torch.arange(1, 11)).argmax(1)
    model = Classifier()
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    t0 = time.time(); best = 1e9
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, len(X), (32,))
        net.train()
        loss = F.cross_entropy(net(X[idx]), Y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            if rank == 0:
                print(f"[{time.strftime('%H:%M:%S')}] rank {rank} step {step}/{args.steps} train_loss={loss.item():.4f} lr={opt.param_groups[0]['lr']}", flush=True)
            # periodic validation
            ctx = torch.inference_mode() if args.fault == "inference_cache" else torch.no_grad()
            net.eval()
            with ctx:
                vx = torch.randn(128, 32); vy = (vx[:, :10] * torch.arange(1, 11)).argmax(1)
                if args.fault == "inference_cache" and step % 30 == 0:
                    model._pos_cache = None   # invalidate cached positions before the periodic full validation
                vl = F.cross_entropy(model(vx), vy).item()
            if rank == 0:
                print(f"[{time.strftime('%H:%M:%S')}] rank {rank} step {step} val_loss={vl:.4f}", flush=True)
            best = min(best, vl)
    if rank == 0:
        print(f"rank {rank}: training complete, best val_loss={best:.4f}", flush=True)
    f = args.fault
    ck = args.ckpt_dir
    if rank == args.fault_rank or world == 1:
        if f not in ("missing_dir",):
            os.makedirs(ck, exist_ok=True)
        path = os.path.join(ck, "best.pt")
        if f == "dev_full":
            path = "/dev/full"
        state = {"model": net.state_dict() if f == "module_prefix" else model.state_dict(), "optimizer": opt.state_dict(), "step": args.steps,
                 "args": args if f == "weights_only" else vars(args)}
        torch.save(state, path)
        print(f"rank {rank}: saved checkpoint to {path} ({os.path.getsize(path) if os.path.isfile(path) else 0} bytes)", flush=True)
        # reload best checkpoint into a fresh model for export
        ckpt = torch.load(path)
        export_model = Classifier()
        export_model.load_state_dict(ckpt["model"])
        export_model.eval()
        ex = torch.randn(4, 32)
        if f == "export_datadep":
            ep = torch.export.export(export_model, (ex,))
            print(ep)
        elif f == "jit_script":
            sm = torch.jit.script(export_model)
            sm.save(os.path.join(ck, "model.ts"))
        elif f == "onnx":
            torch.onnx.export(export_model, (ex,), os.path.join(ck, "model.onnx"), dynamo=True)
        elif f in ("jit_trace_warn", "jit_trace_nocheck"):
            tm = torch.jit.trace(export_model, ex, check_trace=(f == "jit_trace_warn"))
            tm.save(os.path.join(ck, "model.ts"))
            print(f"rank {rank}: exported TorchScript to {ck}/model.ts", flush=True)
        print(f"rank {rank}: export finished", flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(0, 1)
