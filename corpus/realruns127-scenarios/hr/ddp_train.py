"""Small DDP regression/LM trainer used to reproduce rank-local faults (gloo, CPU).

Flags select the fault, the rank that hits it and the step.
"""
import argparse, os, sys, time, math, logging, warnings, stat
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "alloc", "shape", "nan", "missing", "stuck", "embed", "unused",
                        "ckpt", "sparse", "onecycle", "kill"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--data-dir", default="data")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--pylogging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=46140)
p.add_argument("--prepare", action="store_true", help="write data shards and exit")
p.add_argument("--world", type=int, default=2)
p.add_argument("--bad-shard", type=int, default=-1)
p.add_argument("--bad-kind", default="")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--out-dir", default="")
p.add_argument("--resume", default="")
p.add_argument("--sleep", type=float, default=0.3)
args = p.parse_args()

NFEAT, HID, VOCAB = 16, 64, 100


def prepare():
    os.makedirs(args.data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for r in range(args.world):
        nfeat = NFEAT
        if r == args.bad_shard and args.bad_kind == "oldfeat":
            nfeat = 12  # shard exported by the previous feature pipeline
        x = torch.randn(4096, nfeat, generator=g)
        y = x[:, :4].sum(1, keepdim=True) * 0.5 + 0.1 * torch.randn(4096, 1, generator=g)
        if r == args.bad_shard and args.bad_kind == "inf":
            x[32 * args.fault_step + 3, 5] = float("inf")  # sensor overflow in the raw export
        tok = torch.randint(0, VOCAB, (4096, 12), generator=g)
        if r == args.bad_shard and args.bad_kind == "bigvocab":
            tok = torch.randint(0, 32000, (4096, 12), generator=g)  # tokenized with the wrong tokenizer
        task = torch.randint(0, 2, (4096,), generator=g)
        if (r == args.bad_shard and args.bad_kind == "onetask") or args.bad_kind == "onetask-all":
            task.zero_()
        torch.save({"x": x, "y": y, "tok": tok, "task": task}, os.path.join(args.data_dir, f"shard_{r:02d}.pt"))
        print(f"wrote {args.data_dir}/shard_{r:02d}.pt rows={x.shape[0]} nfeat={nfeat}")


class Net(nn.Module):
    def __init__(self, sparse=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 8, sparse=sparse)
        self.body = nn.Sequential(nn.Linear(NFEAT + 8, HID), nn.GELU(), nn.Linear(HID, HID), nn.GELU())
        self.head_reg = nn.Linear(HID, 1)
        self.head_aux = nn.Linear(HID, 1)

    def forward(self, x, tok, task):
        e = self.emb(tok).mean(1)
        h = self.body(torch.cat([x, e], dim=1))
        out = self.head_reg(h)
        if bool((task == 1).any()):
            out = out + 0.1 * self.head_aux(h)
        return out


def log_factory(rank):
    if args.pylogging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        lg = logging.getLogger("train")
        return lg.info
    return lambda m: print(f"[rank{rank}] {m}", flush=True)


def worker(rank, world):
    if args.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        os.environ["RANK"] = str(rank)
        os.environ["WORLD_SIZE"] = str(world)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    log = log_factory(rank)
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    log(f"initialized process group backend=gloo world_size={world} pid={os.getpid()}")
    os.makedirs("run", exist_ok=True)
    with open(f"run/pid_rank{rank}", "w") as f:
        f.write(str(os.getpid()))

    if args.out_dir:
        os.makedirs(args.out_dir)  # fresh run directory for metrics/config
        with open(os.path.join(args.out_dir, f"config_rank{rank}.txt"), "w") as f:
            f.write(repr(vars(args)))
    shard = os.path.join(args.data_dir, f"shard_{rank:02d}.pt")
    if args.fault == "stuck" and rank == args.fault_rank:
        shard_src = os.path.join(args.data_dir, f"shard_{rank:02d}.stream")
    else:
        shard_src = None
    log(f"loading {shard}")
    data = torch.load(shard)
    x, y, tok, task = data["x"], data["y"], data["tok"], data["task"]
    log(f"shard rows={x.shape[0]} features={x.shape[1]}")

    model = Net(sparse=(args.fault == "sparse"))
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    if args.fault == "sparse":
        opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    else:
        opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3, weight_decay=0.01)
    if args.resume:
        log(f"resuming from {args.resume}")
        sd = torch.load(os.path.join(args.resume, "model.pt"), map_location="cpu")
        model.load_state_dict(sd["model"])
        osd = torch.load(os.path.join(args.resume, f"optim_rank{rank}.pt"), map_location="cpu")
        opt.load_state_dict(osd)
        log(f"restored model and optimizer state (step {sd['step']})")
    if args.fault == "onecycle":
        # total_steps computed from the per-rank epoch length, but the loop runs the global step count
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.fault_step)
    else:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    bs = 32
    it = range(args.steps)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    t0 = time.time()
    for step in it:
        sl = slice(step * bs, (step + 1) * bs)
        xb, yb, tb, kb = x[sl], y[sl], tok[sl], task[sl]
        if shard_src and step == args.fault_step:
            log(f"refreshing shard from {shard_src}")
            with open(shard_src, "rb") as f:  # a FIFO nobody writes to: blocks
                f.read()
        if args.fault == "alloc" and step == args.fault_step:
            # pairwise-distance diversity metric over the whole shard
            log("computing pairwise feature diversity for the shard")
            allx = x.repeat(6, 1)
            d = torch.cdist(allx, allx)
            log(f"diversity={d.mean().item():.4f}")
        out = ddp(xb, tb, kb)
        loss = F.mse_loss(out, yb)
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step}, stopping training")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if args.fault == "kill" and step == args.fault_step:
            time.sleep(0)
        time.sleep(args.sleep)
        lt = loss.detach().clone()
        dist.all_reduce(lt)
        lt /= world
        if args.progress and rank == 0:
            it.set_postfix(loss=f"{lt.item():.4f}")
        elif step % 2 == 0:
            log(f"step {step} loss {lt.item():.4f} lr {sched.get_last_lr()[0]:.2e} "
                f"({(time.time()-t0)/(step+1):.2f}s/it)")
        if args.save_every and (step + 1) % args.save_every == 0 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step_{step+1:05d}.pt")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, path)
        if args.save_every and (step + 1) % args.save_every == 0:
            d = os.path.join(args.ckpt_dir, f"sharded_{step+1:05d}")
            os.makedirs(d, exist_ok=True)
            if rank == 0:
                torch.save({"model": model.state_dict(), "step": step + 1}, os.path.join(d, "model.pt"))
            torch.save(opt.state_dict(), os.path.join(d, f"optim_rank{rank}.pt"))
            log(f"saved sharded checkpoint {d}")
    dist.barrier()
    log(f"training finished: {args.steps} steps, final loss {lt.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.prepare:
        prepare()
        sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
