"""Trainer with a checkpoint callback (rank 0 writes model/optimizer/scheduler, every rank its RNG
state, HF-Trainer style), EMA weights and --resume-from. Launch with torchrun or --spawn N."""
import os, sys, time, math, argparse, random, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(__file__))
from common import get_logger, MLP, synth

p = argparse.ArgumentParser()
p.add_argument("--out-dir", default="/work/rr120/gw/out/run")
p.add_argument("--resume-from", default="")
p.add_argument("--save-every", type=int, default=50)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--ema-decay", type=float, default=0.999)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=45470)
p.add_argument("--no-decay-group", action="store_true", help="separate param group for biases")
p.add_argument("--save-args", action="store_true", help="store the argparse namespace in the checkpoint")
p.add_argument("--ema-from-ddp", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--chatty", action="store_true", help="healthy-run noise")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--file-obj", action="store_true", help="write checkpoints through an open() file object")
args = p.parse_args()

class EMA:
    def __init__(self, model, decay):
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}
    @torch.no_grad()
    def update(self, model):
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)
    def state_dict(self): return dict(self.shadow)

def save(obj, path):
    if args.file_obj:
        with open(path, "wb") as f:
            torch.save(obj, f)
    else:
        torch.save(obj, path)

def worker(local_rank, world_from_spawn):
    if world_from_spawn:
        os.environ.update(RANK=str(local_rank), WORLD_SIZE=str(world_from_spawn), LOCAL_RANK=str(local_rank),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    log = get_logger("ckpt")
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    X, Y = synth(4096, seed=0)
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds, world, rank, seed=0) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, drop_last=True)
    model = MLP(d_in=32, hidden=128, n_cls=10)
    ddp = DDP(model) if world > 1 else model
    if args.no_decay_group:
        decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
        groups = [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": 0.05}]
    opt = torch.optim.AdamW(groups, lr=1e-3)
    total = args.epochs * len(dl)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    ema = EMA(ddp if args.ema_from_ddp else model, args.ema_decay)
    start_step = 0
    if args.resume_from:
        log.info("resuming from %s", args.resume_from)
        ck = torch.load(os.path.join(args.resume_from, "checkpoint.pt"), map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        ema_sd = torch.load(os.path.join(args.resume_from, "ema.pt"), map_location="cpu")
        model_ema = MLP(d_in=32, hidden=128, n_cls=10)
        model_ema.load_state_dict(ema_sd)
        rng = torch.load(os.path.join(args.resume_from, f"rng_state_{rank}.pth"), weights_only=False)
        random.setstate(rng["python"]); np.random.set_state(rng["numpy"]); torch.set_rng_state(rng["cpu"])
        start_step = ck["step"]
        log.info("resumed at step %d (lr %.3e)", start_step, sched.get_last_lr()[0])
    if args.chatty and rank == 0:
        warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible.", UserWarning)
    log.info("training %d steps/epoch, %d total, world %d", len(dl), total, world)
    step = 0
    for epoch in range(args.epochs):
        if sampler: sampler.set_epoch(epoch)
        it = dl
        if args.use_tqdm:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"train e{epoch}", disable=rank != 0, ncols=100, mininterval=0.3)
        for x, y in it:
            if step < start_step:
                step += 1; continue
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); sched.step(); step += 1
            ema.update(ddp if args.ema_from_ddp else model)
            if args.chatty and step % 30 == 0 and rank == 0:
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
                if gn > 0.8:
                    log.warning("grad norm %.2f is large; consider lowering the learning rate", gn)
            if step % 25 == 0:
                log.info("epoch %d step %d loss %.4f lr %.3e", epoch, step, loss.item(), sched.get_last_lr()[0])
            if step % args.save_every == 0:
                d = os.path.join(args.out_dir, f"checkpoint-{step}")
                if rank == 0:
                    os.makedirs(d, exist_ok=True)
                    ck = {"model": model.state_dict(), "optimizer": opt.state_dict(),
                          "scheduler": sched.state_dict(), "step": step}
                    if args.save_args:
                        ck["args"] = args
                    save(ck, os.path.join(d, "checkpoint.pt"))
                    save(ema.state_dict(), os.path.join(d, "ema.pt"))
                if world > 1: dist.barrier()
                save({"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.get_rng_state()},
                     os.path.join(d, f"rng_state_{rank}.pth"))
                log.info("saved checkpoint to %s", d)
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info("finished %d steps", step)

if __name__ == "__main__":
    if args.spawn:
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ.get("LOCAL_RANK", 0)), 0)
