"""Tiny DDP trainer with checkpointing; --fault selects a storage/checkpoint misconfiguration."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--width", type=int, default=64)
p.add_argument("--ckdir", default="/work/rr55/l/out")
p.add_argument("--resume", default="")
p.add_argument("--pylogging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=30071)
args = p.parse_args()

def main(rank=None, world=None):
    if rank is not None:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    if args.pylogging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    say = log.info if args.pylogging else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    torch.manual_seed(0)
    w = args.width
    model = nn.Sequential(nn.Linear(32, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, 10))
    if args.fault == "tied":
        model = nn.Sequential(nn.Embedding(100, w), nn.Linear(w, 100, bias=False))
        model[1].weight = model[0].weight
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if args.fault == "opt_groups":
        opt = torch.optim.AdamW([{"params": list(model[0].parameters())}, {"params": list(model[2].parameters()) + list(model[4].parameters()), "lr": 5e-4}], lr=1e-3)
    start = 0
    if args.fault == "noise":
        scaler = torch.cuda.amp.GradScaler()
        sched = torch.optim.lr_scheduler.StepLR(opt, 2)
        sched.step()
        warnings.warn("checkpoint directory is on a filesystem with less than 10% free space", ResourceWarning)
    if args.resume:
        say(f"resuming from {args.resume}")
        if args.resume.endswith(".safetensors"):
            from safetensors.torch import load_file
            sd = load_file(args.resume)
            model.load_state_dict(sd)
        else:
            ck = torch.load(args.resume, map_location="cpu") if args.fault != "weights_only_false" else torch.load(args.resume, map_location="cpu", weights_only=False)
            sd = ck.get("model", ck)
            if args.fault != "ddp_prefix":
                sd = {k.replace("module.", "", 1): v for k, v in sd.items()}
            model.load_state_dict(sd)
            if "optimizer" in ck:
                opt.load_state_dict(ck["optimizer"])
            start = ck.get("step", 0)
        say(f"resumed at step {start}")
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
    os.makedirs(args.ckdir, exist_ok=True) if args.fault not in ("missing_dir",) else None
    it = range(start, args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stdout)
    for step in it:
        x = torch.randn(64, 32); y = torch.randint(0, 10, (64,))
        if args.fault == "tied":
            x = torch.randint(0, 100, (64, 8)); y = torch.randint(0, 100, (64 * 8,))
            loss = nn.functional.cross_entropy(ddp(x).reshape(-1, 100), y)
        else:
            loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if not args.tqdm:
            say(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}")
        time.sleep(0.2)
        if step == args.step:
            save(rank, world, step, ddp, model, opt, say)
    if distributed:
        dist.barrier()
    say("training finished")
    if distributed:
        dist.destroy_process_group()

def save(rank, world, step, ddp, model, opt, say):
    f = args.fault
    ck = {"model": ddp.state_dict(), "optimizer": opt.state_dict(), "step": step + 1}
    if f == "race":
        path = os.path.join(args.ckdir, "latest.pt")
        if rank == 0:
            big = {"model": ddp.state_dict(), "optimizer": opt.state_dict(), "step": step + 1,
                   "ema": [torch.randn(1024, 1024) for _ in range(24)]}
            say(f"saving checkpoint to {path}")
            torch.save(big, path); say("checkpoint saved")
        else:
            while not os.path.exists(path):
                time.sleep(0.005)
            say(f"found {path}, loading to sync ema")
            torch.load(path, map_location="cpu")
        return
    if f in ("tied", "st"):
        from safetensors.torch import save_file
        path = os.path.join(args.ckdir, f"model-step{step}.safetensors")
        if rank == args.rank:
            say(f"saving {path}")
            save_file(model.state_dict(), path)
        return
    if f == "per_rank":
        path = os.path.join(args.ckdir, f"shard-rank{rank}-of{world}.pt")
        torch.save(ck, path); say(f"saved {path}"); return
    if rank != args.rank and f != "all":
        return
    name = f"checkpoint-step{step}.pt"
    if f == "longname":
        name = f"run-{'-'.join(['lr1e-3_bs64_wd0.01_warmup500_cosine_seed0_gpt2tiny'] * 6)}-step{step}.pt"
    path = os.path.join(args.ckdir, name)
    if f == "isdir":
        os.makedirs(path, exist_ok=True)
    say(f"saving checkpoint to {path}")
    if f == "extra":
        ck["args"] = args
    torch.save(ck, path)
    say(f"checkpoint saved ({os.path.getsize(path)/1e6:.1f} MB)")

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
