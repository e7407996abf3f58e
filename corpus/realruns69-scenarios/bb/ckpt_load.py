"""Resume/fine-tune from a checkpoint under DDP (gloo, CPU). Flags select the fault and the rank."""
import argparse, os, sys, time, logging, pickle, datetime
from dataclasses import dataclass
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--prepare", action="store_true", help="write the checkpoints into --ckpt-dir and exit")
p.add_argument("--ckpt-dir", default="/work/rr69/bb/ckpts")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1, help="-1: all ranks")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=31560)
p.add_argument("--log-ts", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--hidden", type=int, default=64)
args = p.parse_args()

@dataclass
class TrainConfig:
    vocab: int = 512
    hidden: int = 64
    lr: float = 3e-3

class TinyLM(nn.Module):
    def __init__(self, vocab=512, hidden=64, nlayers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)) for _ in range(nlayers)])
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(self.norm(h))

def prepare(d):
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    m = TinyLM()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    x = torch.randint(0, 512, (4, 16)); F.cross_entropy(m(x).flatten(0, 1), x.flatten()).backward(); opt.step()
    torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 1000}, f"{d}/step1000.pt")
    # checkpoint written by a DDP job that saved model.state_dict() of the wrapper
    torch.save({"model": {"module." + k: v for k, v in m.state_dict().items()}, "step": 1000}, f"{d}/ddp_step1000.pt")
    # checkpoint of a torch.compile'd model: OptimizedModule.state_dict() carries _orig_mod.
    cm = torch.compile(m)
    torch.save({"model": cm.state_dict(), "step": 1000}, f"{d}/compiled_step1000.pt")
    # older run with a wider vocab
    big = TinyLM(vocab=640)
    torch.save({"model": big.state_dict(), "step": 1000}, f"{d}/vocab640_step1000.pt")
    # checkpoint that also pickles the run config object
    torch.save({"model": m.state_dict(), "config": TrainConfig(), "args": argparse.Namespace(lr=3e-3, bs=8), "step": 1000}, f"{d}/full_step1000.pt")
    # legacy (non-zip) serialization
    torch.save({"model": m.state_dict(), "step": 1000}, f"{d}/legacy_step1000.pt", _use_new_zipfile_serialization=False)
    # optimizer state from a run with a separate no-decay group
    decay = [p_ for n, p_ in m.named_parameters() if p_.dim() >= 2]
    nodecay = [p_ for n, p_ in m.named_parameters() if p_.dim() < 2]
    opt2 = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}], lr=3e-3)
    F.cross_entropy(m(x).flatten(0, 1), x.flatten()).backward(); opt2.step()
    torch.save({"model": m.state_dict(), "optimizer": opt2.state_dict(), "step": 1000}, f"{d}/twogroups_step1000.pt")
    print("prepared", sorted(os.listdir(d)))

def setup_log(rank):
    if args.log_ts:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
    else:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    return logging.getLogger("train")

def faulty(rank):
    return args.fault_rank < 0 or args.fault_rank == rank

def main(rank, world):
    log = setup_log(rank)
    d = args.ckpt_dir
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(1234 + rank)
    fault = args.fault if faulty(rank) else "none"
    hidden = args.hidden
    path = f"{d}/step1000.pt"
    if fault == "ddp_prefix": path = f"{d}/ddp_step1000.pt"
    if fault == "compiled_prefix": path = f"{d}/compiled_step1000.pt"
    if fault in ("size_mismatch", "nonstrict_size"): path = f"{d}/vocab640_step1000.pt"
    if fault == "weights_only": path = f"{d}/full_step1000.pt"
    if fault == "pickled_class": path = f"{d}/oldrun_step1000.pt"
    if fault == "gpu_ckpt": path = f"{d}/gpu_step1000.pt"
    if fault == "mmap_legacy": path = f"{d}/legacy_step1000.pt"
    if fault == "truncated": path = f"{d}/partial/step1000.pt"
    if fault == "truncated_b": path = f"{d}/partial/step1000_b.pt"
    if fault == "lfs_pointer": path = f"{d}/lfs/step1000.pt"
    if fault == "optimizer_groups": path = f"{d}/twogroups_step1000.pt"
    if fault == "wider_model": hidden = 96
    log.info(f"rank {rank}/{world}: building TinyLM(vocab=512, hidden={hidden})")
    if fault == "meta_init":
        with torch.device("meta"):
            model = TinyLM(hidden=hidden)
        model = model.to("cpu")
    else:
        model = TinyLM(hidden=hidden)
    log.info(f"rank {rank}: resuming from {path}")
    if fault == "pickled_class":
        ck = torch.load(path, map_location="cpu", weights_only=False)
    elif fault == "gpu_ckpt":
        ck = torch.load(path)
    elif fault == "mmap_legacy":
        ck = torch.load(path, map_location="cpu", mmap=True)
    else:
        ck = torch.load(path, map_location="cpu")
    sd = ck["model"]
    if fault in ("nonstrict_missing",):
        sd = {k: v for k, v in sd.items() if not k.startswith("norm.")}
    if fault in ("nonstrict_missing", "nonstrict_size"):
        res = model.load_state_dict(sd, strict=False)
        log.warning(f"rank {rank}: load_state_dict(strict=False) -> {res}")
    elif fault != "wider_model":
        model.load_state_dict(sd)
    log.info(f"rank {rank}: loaded checkpoint step {ck.get('step')}")
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    if "optimizer" in ck:
        opt.load_state_dict(ck["optimizer"])
        log.info(f"rank {rank}: optimizer state restored")
    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stderr, mininterval=0, ncols=90)
    g = torch.Generator().manual_seed(rank)
    for step in it:
        x = torch.randint(0, 512, (8, 32), generator=g)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 and rank == 0:
            msg = f"step {1000 + step} loss {loss.item():.4f} lr 3.0e-03"
            (it.write(msg) if args.tqdm else log.info(msg))
        time.sleep(0.05)
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info(f"rank {rank}: done")

def spawn_entry(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
    main(rank, world)

if __name__ == "__main__":
    if args.prepare:
        prepare(args.ckpt_dir); sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main(0, 1)
