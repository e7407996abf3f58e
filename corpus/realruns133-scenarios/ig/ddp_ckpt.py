"""DDP training with per-rank / rank-0 checkpoint save and resume (torch.save or safetensors)."""
import argparse, os, sys, time, logging, warnings, datetime
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=8)
p.add_argument("--save-every", type=int, default=4)
p.add_argument("--ckdir", default="ck")
p.add_argument("--resume-from", default=None)
p.add_argument("--layout", choices=["rank0", "perrank"], default="rank0")
p.add_argument("--fmt", choices=["pt", "st"], default="pt")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--nlayers", type=int, default=2)
p.add_argument("--vocab", type=int, default=50)
p.add_argument("--tie", action="store_true")
p.add_argument("--param-groups", choices=["one", "decay"], default="one")
p.add_argument("--save-wrapped", action="store_true", help="save ddp.state_dict() (module. prefix)")
p.add_argument("--save-args", action="store_true", help="store argparse Namespace in checkpoint")
p.add_argument("--save-whole", action="store_true", help="torch.save the whole nn.Module")
p.add_argument("--ckname", default="step{step:06d}.pt")
p.add_argument("--map-loc", default=None)
p.add_argument("--strict", type=int, default=1)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=46380)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()


class LM(nn.Module):
    def __init__(self, vocab, hidden, nlayers, tie):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()) for _ in range(nlayers)])
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        if tie:
            self.head.weight = self.embed.weight
        self.score_fn = lambda logits: logits.softmax(-1)

    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(self.norm(h))


def main(rank=None, world=None):
    if rank is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        log = lambda m: print(f"[rank{rank}] {m}", flush=True)
    torch.manual_seed(0)
    model = LM(args.vocab, args.hidden, args.nlayers, args.tie)
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    if args.param_groups == "decay":
        decay = [p_ for n, p_ in model.named_parameters() if p_.dim() >= 2]
        nodecay = [p_ for n, p_ in model.named_parameters() if p_.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}], lr=3e-3)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    log(f"world_size={world} params={sum(p_.numel() for p_ in model.parameters())} groups={len(opt.param_groups)}")
    start = 0
    if args.resume_from:
        path = args.resume_from.format(rank=rank)
        log(f"resuming from {path}")
        if args.fmt == "st":
            from safetensors.torch import load_file
            sd = load_file(path)
            res = model.load_state_dict(sd, strict=bool(args.strict))
            log(f"load_state_dict: {res}")
        else:
            ck = torch.load(path, map_location=args.map_loc)
            res = model.load_state_dict(ck["model"], strict=bool(args.strict))
            if not args.strict:
                log(f"load_state_dict: {res}")
            opt.load_state_dict(ck["optimizer"])
            start = ck["step"]
        log(f"resumed at step {start}")
    g = torch.Generator().manual_seed(1000 + rank)
    it = range(start, args.steps)
    if args.use_tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", total=args.steps, initial=start)
    for step in it:
        x = torch.randint(0, args.vocab, (8, 16), generator=g)
        logits = ddp(x)
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, args.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        t = loss.detach().clone(); dist.all_reduce(t); t /= world
        if rank == 0 and not args.use_tqdm:
            log(f"step {step+1}/{args.steps} loss={t.item():.4f} lr={opt.param_groups[0]['lr']:.1e}")
        time.sleep(0.2)
        if (step + 1) % args.save_every == 0:
            save(step + 1, rank, model, ddp, opt, log, t.item())
            dist.barrier()
    log("training finished")
    dist.destroy_process_group()


def save(step, rank, model, ddp, opt, log, loss):
    if args.layout == "rank0" and rank != 0:
        return
    d = os.path.join(args.ckdir, f"shard-{rank}") if args.layout == "perrank" else args.ckdir
    os.makedirs(d, exist_ok=True)
    name = args.ckname.format(step=step, rank=rank, loss=loss, args=vars(args))
    path = os.path.join(d, name)
    if args.fmt == "st":
        from safetensors.torch import save_file
        save_file(model.state_dict(), path, metadata={"step": str(step)})
    else:
        state = {"model": (ddp if args.save_wrapped else model).state_dict(), "optimizer": opt.state_dict(), "step": step}
        if args.save_args:
            state["args"] = args
        if args.save_whole:
            state["module"] = model
        with open(path, "wb") as f:
            torch.save(state, f)
    log(f"saved checkpoint {path} ({os.path.getsize(path)} bytes)")


def _spawn_entry(r, w):
    main(r, w)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
