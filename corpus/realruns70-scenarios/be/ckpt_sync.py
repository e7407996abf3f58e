"""Small transformer-ish LM trained with DDP; rank 0 writes checkpoints, other ranks read them back
(weight re-sync / EMA eval / resume). Checkpoint handling is deliberately rank-dependent."""
import argparse, os, sys, time, logging, json
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--mode", default="save_only",
               help="save_only | reload_latest | poll_reload | resume")
p.add_argument("--out", default="/work/rr70/be/data/ckpt")
p.add_argument("--run-name", default="lm-small")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--save-every", type=int, default=4)
p.add_argument("--dmodel", type=int, default=128)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--tag-from-config", action="store_true")
p.add_argument("--atomic", action="store_true", help="write to a temp file then rename")
p.add_argument("--dump-logits", action="store_true", help="rank 0 dumps eval logits as text")
args = p.parse_args()

logging.basicConfig(level=logging.INFO,
                    format="%(asctime)s | %(levelname)-7s | rank%(rank)s | %(message)s")
dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
log = logging.LoggerAdapter(logging.getLogger("lm"), {"rank": rank})

V = 256
class LM(nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, batch_first=True, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.out = nn.Linear(d, V)
    def forward(self, x):
        return self.out(self.enc(self.emb(x)))

torch.manual_seed(0)
model = DDP(LM(args.dmodel, args.layers))
opt = torch.optim.Adam(model.parameters(), lr=3e-4)
nparams = sum(p.numel() for p in model.parameters())
log.info(f"model params={nparams/1e6:.2f}M world={world}")

cfg = dict(d=args.dmodel, layers=args.layers, lr=3e-4, vocab=V, steps=args.steps, world=world,
           data="corpus/en+de+fr/tokenized_v3", sched="cosine", warmup=100)
tag = args.run_name
if args.tag_from_config:
    tag = args.run_name + "-" + "-".join(f"{k}={v}" for k, v in cfg.items()).replace("/", "_") * 3
ckdir = os.path.join(args.out, tag)
if rank == 0:
    os.makedirs(args.out, exist_ok=True)

g = torch.Generator().manual_seed(rank)
lossf = nn.CrossEntropyLoss()

def save(step):
    path = os.path.join(ckdir, f"step_{step:06d}.pt") if args.tag_from_config else os.path.join(args.out, f"{tag}_step{step}.pt")
    if args.tag_from_config:
        os.makedirs(ckdir, exist_ok=True)
    state = {"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step, "cfg": cfg}
    if args.atomic:
        import tempfile
        fd, tmp = tempfile.mkstemp(suffix=".pt.tmp")
        os.close(fd)
        torch.save(state, tmp)
        os.rename(tmp, path)
    else:
        torch.save(state, path)
    log.info(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.1f} MB)")
    return path

start = 0
if args.mode == "resume":
    path = os.path.join(args.out, f"{tag}_step{args.save_every}.pt")
    log.info(f"resuming from {path}")
    sd = torch.load(path, map_location="cpu")
    model.module.load_state_dict(sd["model"])
    start = sd["step"]

for step in range(start, args.steps):
    x = torch.randint(0, V, (8, 32), generator=g)
    logits = model(x[:, :-1])
    loss = lossf(logits.reshape(-1, V), x[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 2 == 0:
        log.info(f"step {step} loss {loss.item():.4f}")
    if (step + 1) % args.save_every == 0:
        if rank == 0:
            # eval perplexity on a held-out batch before writing the checkpoint
            with torch.no_grad():
                xe = torch.randint(0, V, (64, 32), generator=torch.Generator().manual_seed(99))
                ppl = torch.exp(lossf(model.module(xe[:, :-1]).reshape(-1, V), xe[:, 1:].reshape(-1)))
            log.info(f"eval ppl {ppl.item():.2f}")
            if args.dump_logits:
                lg = model.module(xe[:, :-1]).detach()
                dpath = os.path.join(args.out, f"eval_logits_step{step + 1}.tsv")
                with open(dpath, "w") as fh:
                    for row in lg.reshape(-1, V):
                        fh.write("\t".join(f"{v:.6f}" for v in row.tolist()) + "\n")
                log.info(f"wrote {dpath}")
            save(step + 1)
        if args.mode == "reload_latest" and rank != 0:
            # non-zero ranks reload rank 0's weights to stay bit-identical (EMA eval copy)
            path = os.path.join(args.out, f"{tag}_step{step + 1}.pt")
            sd = torch.load(path, map_location="cpu")
            log.info(f"reloaded {path}")
        if args.mode == "poll_reload" and rank != 0:
            path = os.path.join(args.out, f"{tag}_step{step + 1}.pt")
            while not os.path.exists(path):
                time.sleep(0.001)
            sd = torch.load(path, map_location="cpu")
            log.info(f"reloaded {path}")
        dist.barrier()

log.info("done")
dist.destroy_process_group()
