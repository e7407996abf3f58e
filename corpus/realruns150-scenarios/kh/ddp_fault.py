"""Small DDP regression/classification trainer with selectable real faults.
Flags: --fault F --fail-rank R --fail-step S --steps N --data-dir D --logfmt --pbar"""
import argparse, os, sys, time, json, math, warnings, logging, ctypes, faulthandler
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--data-dir", default="data/shards")
p.add_argument("--out-dir", default="out")
p.add_argument("--logfmt", action="store_true")
p.add_argument("--pbar", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=25)
p.add_argument("--ckpt-name", default="ckpt_step{step}.pt")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--save-rank", type=int, default=-1)
p.add_argument("--eval-n", type=int, default=0)
p.add_argument("--shuffle", action="store_true")
args = p.parse_args()

VOCAB, DIM, NCLS, SEQ, BS = 100, 32, 5, 8, 16

class Net(nn.Module):
    def __init__(self, vocab=VOCAB, dim=DIM):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.fc1 = nn.Linear(dim, 64)
        self.fc2 = nn.Linear(64, NCLS)
    def forward(self, ids):
        h = self.emb(ids).mean(1)
        return self.fc2(F.gelu(self.fc1(h)))

class ShardDS(Dataset):
    """samples stored as jsonl: {"ids": [...], "label": k}"""
    def __init__(self, path):
        with open(path) as f:
            self.lines = f.readlines()
    def __len__(self): return len(self.lines)
    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        return torch.tensor(rec["ids"]), torch.tensor(rec["label"])

def main(rank_arg=None):
    if rank_arg is not None:
        os.environ["RANK"] = str(rank_arg); os.environ["LOCAL_RANK"] = str(rank_arg)
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    if args.logfmt:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    say = log.info if args.logfmt else (lambda m: print(m, flush=True))
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    me_fail = (rank == args.fail_rank)
    model = Net()
    if args.resume and rank == 0:
        say(f"resuming from {args.resume}")
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
    if args.resume:
        for prm in model.parameters():
            dist.broadcast(prm.data, 0)
    ddp = DDP(model, find_unused_parameters=(args.fault == "none-warn"))
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    shard = os.path.join(args.data_dir, f"train-{rank:05d}-of-{world:05d}.jsonl")
    ds = ShardDS(shard)
    dl = DataLoader(ds, batch_size=BS, shuffle=args.shuffle, num_workers=args.workers, timeout=(30 if args.workers else 0))
    say(f"rank {rank}/{world}: {len(ds)} samples from {shard}, {sum(p.numel() for p in model.parameters())} params")
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    it = iter(dl)
    rng = range(args.steps)
    if args.pbar and rank == 0:
        from tqdm import tqdm
        rng = tqdm(rng, desc="train", file=sys.stderr, mininterval=0, ncols=80)
    t0 = time.time()
    for step in rng:
        try:
            ids, y = next(it)
        except StopIteration:
            it = iter(dl); ids, y = next(it)
        ids = ids.float() if False else ids
        if args.fault == "hang" and step == args.fail_step:
            faulthandler.dump_traceback_later(args.pg_timeout - 5, exit=False)
            if me_fail:
                # stale lock left by a crashed eval job is never released
                lock = os.path.join(args.out_dir, "eval.lock")
                while os.path.exists(lock):
                    time.sleep(0.5)
        if args.fault == "segv" and me_fail and step == args.fail_step:
            # buggy fast-path: reads token histogram through a stale native pointer
            buf = ctypes.c_char_p(0xdeadbeef000)
            ctypes.string_at(0xdeadbeef000, 16)
        if args.fault == "reshape":
            # bug: assumes every batch is full
            ids = ids.view(BS, SEQ)
        logits = ddp(ids)
        loss = F.cross_entropy(logits, y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step}, stopping training")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        if args.fault == "none-warn" and step == 0:
            sched.step()  # scheduler stepped first on step 0 (harmless ordering slip)
        opt.step()
        if not (args.fault == "none-warn" and step == 0): sched.step()
        lt = loss.detach().clone(); dist.all_reduce(lt); lt /= world
        if rank == 0 and (step % 2 == 0 or step == args.steps - 1):
            msg = f"step {step:4d} | loss {lt.item():.4f} | grad_norm {gn.item():.3f} | lr {sched.get_last_lr()[0]:.2e} | {(time.time()-t0)/(step+1):.2f}s/it"
            if args.pbar: rng.write(msg)
            else: say(msg)
        if args.fault == "attr" and rank == 0 and step == args.fail_step:
            say(f"step {step} head weight norm {ddp.fc2.weight.norm().item():.3f}")
        if args.fault == "typeerr" and me_fail and step == args.fail_step:
            say("[node-local logger] rank " + str(rank) + " lr=" + sched.get_last_lr()[0])
        if args.eval_n and step == args.fail_step:
            # retrieval eval: pairwise distances between all eval embeddings
            with torch.no_grad():
                e = torch.randn(args.eval_n, DIM)
                d = torch.cdist(e, e)
                say(f"[rank{rank}] eval mean dist {d.mean().item():.3f}")
        if ((step + 1) % 4 == 0 or step == args.steps - 1) and args.save_rank in (-1, rank):
            ckdir = os.path.join(args.out_dir, f"rank{rank}")
            os.makedirs(ckdir, exist_ok=True)
            path = os.path.join(ckdir, args.ckpt_name.format(step=step, rank=rank))
            if args.fault in ("efbig", "enospc", "enametoolong", "eacces") :
                import io, pickle
                bio = io.BytesIO(); torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, bio)
                with open(path, "wb") as f:
                    f.write(bio.getvalue())
            else:
                torch.save({"model": model.state_dict(), "step": step}, path)
            say(f"[rank{rank}] saved checkpoint {path}")
        if (step + 1) % 4 == 0 or step == args.steps - 1:
            dist.barrier()
    dist.barrier()
    if rank == 0: say("training finished")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["WORLD_SIZE"] = str(args.spawn)
        mp.spawn(main, nprocs=args.spawn)
    else:
        main()
