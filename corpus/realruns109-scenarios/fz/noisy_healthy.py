"""Healthy training runs that print a lot of alarming-looking output.

--mode:
  scaler      own dynamic loss scaler (fp16-style): prints overflow / skipped-step messages, recovers
  deprecation warnings storm (deprecated torch APIs, scheduler order, tensor copy construct), tqdm bars
              that restart every epoch, cache file read with retries until rank 0 has written it
  compile     torch.compile(backend="aot_eager") on a model with graph breaks (run with TORCH_LOGS=graph_breaks)
  spawn       torch.multiprocessing.spawn, 2 ranks, gloo, (run with TORCH_CPP_LOG_LEVEL=INFO for gloo noise)
"""
import argparse, os, sys, time, math, warnings, json
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="scaler")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--port", type=int, default=43850)
args = p.parse_args()
torch.set_num_threads(1)


def make_model():
    return nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))


def data(rank, n=1024):
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(n, 16, generator=g)
    return X, (X[:, :3].prod(1, keepdim=True) + X[:, 3:4])


# ---------------------------------------------------------------- scaler
def run_scaler():
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(make_model())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    X, Y = data(rank)
    scale, growth_interval, good = 2.0 ** 24, 20, 0
    skipped = 0
    for step in range(args.steps):
        idx = torch.randint(0, len(X), (64,))
        out = model(X[idx])
        loss = nn.functional.mse_loss(out, Y[idx])
        opt.zero_grad()
        (loss * scale).backward()
        # emulate fp16 gradient range: anything above 65504 overflows to inf
        found_inf = torch.zeros(1)
        for p_ in model.parameters():
            g16 = p_.grad.to(torch.float16)
            if not torch.isfinite(g16).all():
                found_inf += 1
            p_.grad.div_(scale)
        dist.all_reduce(found_inf)
        if found_inf.item() > 0:
            skipped += 1
            print(f"[rank{rank}] step {step}: Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to {scale / 2:.1f}", flush=True)
            if rank == 0:
                print(f"[rank{rank}] WARNING: found inf/nan in gradients (found_inf={int(found_inf.item())}), optimizer.step() skipped", flush=True)
            scale /= 2
            good = 0
            continue
        opt.step()
        good += 1
        if good % growth_interval == 0:
            scale *= 2
            print(f"[rank{rank}] step {step}: no overflow for {growth_interval} steps, increasing loss scale to {scale:.1f}", flush=True)
        if step % 10 == 0 and rank == 0:
            print(f"[rank0] step {step:3d} loss {loss.item():.4f} loss_scale {scale:.0f}", flush=True)
    if rank == 0:
        print(f"[rank0] done: {args.steps} steps, {skipped} skipped (overflow), final loss scale {scale:.0f}", flush=True)
    dist.destroy_process_group()


# ---------------------------------------------------------------- deprecation storm
def run_deprecation():
    from tqdm import tqdm
    warnings.simplefilter("always")
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
    cache = "/tmp/fz_feature_cache.json"
    if rank == 0 and os.path.exists(cache):
        os.remove(cache)
    dist.barrier()
    if rank == 0:
        time.sleep(3)  # building the cache takes a while
        X, Y = data(0, 512)
        json.dump({"X": X.tolist(), "Y": Y.tolist()}, open(cache + ".tmp", "w"))
        os.replace(cache + ".tmp", cache)
    for attempt in range(1, 8):
        try:
            with open(cache) as f:
                d = json.load(f)
            break
        except FileNotFoundError as e:
            print(f"[rank{rank}] WARNING: feature cache not ready ({e}); retrying in 1.0s (attempt {attempt}/7)", flush=True)
            time.sleep(1.0)
    X = torch.tensor(torch.tensor(d["X"]))  # copy-construct warning
    Y = torch.tensor(torch.tensor(d["Y"]))
    model = DDP(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    for epoch in range(3):
        sched.step()  # called before optimizer.step()
        bar = tqdm(range(0, len(X), 32), desc=f"[rank{rank}] epoch {epoch}", ncols=90, mininterval=0)
        for i in bar:
            with torch.autocast("cpu", enabled=False):
                out = model(X[i:i + 32])
            loss = nn.functional.mse_loss(out, Y[i:i + 32])
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            bar.set_postfix(loss=f"{loss.item():.3f}")
            time.sleep(0.02)
        bar.close()
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "epoch": epoch}, "/tmp/fz_ckpt_dep.pt")
            sd = torch.load("/tmp/fz_ckpt_dep.pt", weights_only=False)
    print(f"[rank{rank}] training complete, lr={sched.get_last_lr()[0]:.4f}", flush=True)
    dist.destroy_process_group()


# ---------------------------------------------------------------- compile with graph breaks
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = make_model()

    def forward(self, x):
        h = self.a(x)
        if h.mean().item() > 0:  # data-dependent python branch -> graph break
            h = h * 1.01
        print("batch mean", round(float(h.mean()), 4)) if os.environ.get("DEBUG_FWD") else None
        return h


def run_compile():
    model = Net()
    cmodel = torch.compile(model, backend="aot_eager")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X, Y = data(0)
    for step in range(args.steps):
        idx = torch.randint(0, len(X), (32 + (step % 3),))  # varying batch -> recompiles / dynamic shapes
        loss = nn.functional.mse_loss(cmodel(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("finished OK", flush=True)


# ---------------------------------------------------------------- spawn
def spawn_worker(rank, world):
    from torch.nn.parallel import DistributedDataParallel as DDP
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    model = DDP(make_model())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X, Y = data(rank)
    for step in range(args.steps):
        idx = torch.randint(0, len(X), (64,))
        loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    print(f"[rank{rank}] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.mode == "scaler":
        run_scaler()
    elif args.mode == "deprecation":
        run_deprecation()
    elif args.mode == "compile":
        run_compile()
    elif args.mode == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(spawn_worker, args=(2,), nprocs=2)
