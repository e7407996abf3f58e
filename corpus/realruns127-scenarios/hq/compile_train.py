"""Tiny torch.compile training loop (single process, torchrun DDP or mp.spawn), CPU / gloo.

Scenario flags select a realistic bug/misconfiguration:
  --fault none           healthy run
  --fault eval-branch    evaluation path (rank 0 only, every --eval-every steps) has a
                         data-dependent python branch; with --fullgraph Dynamo refuses it
  --fault nonzero        token-selection via torch.nonzero in forward (dynamic output shape)
  --fault varlen         every batch has a new sequence length and dynamic=False -> recompiles
  --fault shard-width    one rank's data shard has a different feature width (stale feature file)
  --fault attr           eval path reads a config field that was renamed
  --fault logloss        forward logs a python float of an activation statistic (graph break)
"""
import argparse, os, sys, time, logging, math, datetime, warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--fullgraph", action="store_true")
    p.add_argument("--dynamic", default="none", choices=["none", "true", "false"])
    p.add_argument("--mode", default=None)
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
    p.add_argument("--port", type=int, default=46130)
    p.add_argument("--use-tqdm", action="store_true")
    p.add_argument("--pylogging", action="store_true")
    p.add_argument("--strict-recompile", action="store_true")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--ckpt-out", default="")
    p.add_argument("--recompile-limit", type=int, default=0)
    p.add_argument("--resume", default="")
    p.add_argument("--eval-batch", type=int, default=8)
    p.add_argument("--pid-dir", default="", help="write rank<N>.pid here (for the job supervisor)")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--compile-inner", action="store_true", help="compile the module, then wrap it in DDP")
    return p.parse_args()


class Config:
    def __init__(self, d_in=16, hidden=64, n_cls=4, eval_dropout=0.0):
        self.d_in = d_in
        self.hidden = hidden
        self.n_cls = n_cls
        self.eval_dropout = eval_dropout


class TinyNet(nn.Module):
    def __init__(self, cfg, fault):
        super().__init__()
        self.cfg = cfg
        self.fault = fault
        self.inp = nn.Linear(cfg.d_in, cfg.hidden)
        self.block = nn.Sequential(nn.LayerNorm(cfg.hidden), nn.Linear(cfg.hidden, cfg.hidden), nn.GELU())
        self.head = nn.Linear(cfg.hidden, cfg.n_cls)
        self.score = nn.Linear(cfg.hidden, 1)

    def forward(self, x):
        # x: [B, T, d_in]
        h = F.gelu(self.inp(x))
        h = h + self.block(h)
        if self.fault == "nonzero":
            # keep only the "salient" tokens (score > 0) and pool them
            s = self.score(h).squeeze(-1)
            idx = torch.nonzero(s > 0)
            sel = h[idx[:, 0], idx[:, 1]]
            pooled = sel.mean(0, keepdim=True).expand(h.shape[0], -1)
        else:
            pooled = h.mean(1)
        if not self.training:
            if self.fault == "eval-branch":
                # calibrate: only rescale when activations blew up
                if pooled.abs().mean() > 1.0:
                    pooled = pooled / pooled.abs().mean()
            elif self.fault == "attr":
                pooled = F.dropout(pooled, p=self.cfg.eval_drop_p, training=True)
        if self.fault == "logloss":
            act = pooled.pow(2).mean().item()
            if act > 1e3:
                print(f"large activation {act}")
        return self.head(pooled)


def make_batch(step, rank, args, d_in):
    g = torch.Generator().manual_seed(1000 * rank + step)
    T = 8
    if args.fault == "varlen":
        T = 6 + step  # packed batches of growing length, no padding to a bucket
    B = 8 if step < 10_000 else args.eval_batch  # eval uses the whole held-out split as one batch
    x = torch.randn(B, T, d_in, generator=g)
    y = torch.randint(0, 4, (B,), generator=g)
    return x, y


def main_worker(local_rank, args, world_from_spawn=0):
    if world_from_spawn:
        os.environ["RANK"] = str(local_rank)
        os.environ["WORLD_SIZE"] = str(world_from_spawn)
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    log = None
    if args.pylogging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train")

    def say(msg):
        if log:
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    torch.manual_seed(0)
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    if args.recompile_limit:
        torch._dynamo.config.recompile_limit = args.recompile_limit
    if args.strict_recompile:
        torch._dynamo.config.fail_on_recompile_limit_hit = True
    distributed = args.ddp or world > 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
        say(f"initialized process group: backend={dist.get_backend()} world_size={dist.get_world_size()}")

    d_in = 16
    if args.fault == "shard-width" and rank == args.fault_rank:
        d_in = 20  # this rank picked up features_v2 (20 columns) instead of features_v1 (16)
    cfg = Config(d_in=16, hidden=args.hidden)
    model = TinyNet(cfg, args.fault)
    if args.resume:
        say(f"resuming weights from {args.resume}")
        model.load_state_dict(torch.load(args.resume, map_location="cpu"))
    nparams = sum(p.numel() for p in model.parameters())
    say(f"model TinyNet params={nparams} fault_mode={args.fault}")
    kw = {}
    if args.fullgraph:
        kw["fullgraph"] = True
    if args.dynamic != "none":
        kw["dynamic"] = args.dynamic == "true"
    if args.mode:
        kw["mode"] = args.mode
    say(f"torch.compile(model, {', '.join(f'{k}={v}' for k, v in kw.items())}) "
        f"cache={os.environ.get('TORCHINDUCTOR_CACHE_DIR')}")
    if distributed and args.compile_inner:
        cmodel = nn.parallel.DistributedDataParallel(torch.compile(model, **kw), find_unused_parameters=args.find_unused)
    elif distributed:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
        cmodel = torch.compile(model, **kw)
    else:
        cmodel = torch.compile(model, **kw)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

    it = range(args.steps)
    if args.use_tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    t0 = time.time()
    for step in it:
        x, y = make_batch(step, rank, args, d_in)
        cmodel.train()
        logits = cmodel(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.sleep:
            time.sleep(args.sleep)
        if not args.use_tqdm or rank != 0:
            say(f"step {step} loss {loss.item():.4f} elapsed {time.time() - t0:.1f}s")
        else:
            it.set_postfix(loss=f"{loss.item():.4f}")
        if args.eval_every and (step + 1) % args.eval_every == 0 and rank == 0:
            cmodel.eval()
            with torch.no_grad():
                xe, ye = make_batch(10_000 + step, rank, args, d_in)
                acc = (cmodel(xe).argmax(-1) == ye).float().mean().item()
            say(f"eval step {step} acc {acc:.3f}")
        if distributed and (step + 1) % 4 == 0:
            t = torch.tensor([loss.item()])
            dist.all_reduce(t)
            say(f"step {step} mean loss across ranks {t.item() / world:.4f}")
    if args.ckpt_out and rank == 0:
        torch.save(cmodel.state_dict(), args.ckpt_out)
        say(f"saved {args.ckpt_out}")
    say(f"training finished in {time.time() - t0:.1f}s")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    args = get_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args, args.spawn), nprocs=args.spawn, join=True)
    else:
        main_worker(int(os.environ.get("LOCAL_RANK", 0)), args)
