"""Tiny char-level LM trainer with periodic checkpointing. Runs single-process (python) or under torchrun.

Checkpoint options: --ckpt-dir, --name-template (formatted with the hparams), --staging-dir (write
there first, then os.replace into ckpt-dir), --rank-fsize-limit-mb (site RLIMIT_FSIZE for one rank),
--resume PATH.
"""
import argparse, logging, math, os, resource, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--ckpt-dir", default="runs/ckpt_lm")
p.add_argument("--save-every", type=int, default=20)
p.add_argument("--name-template", default="step{step}.pt")
p.add_argument("--staging-dir", default="")
p.add_argument("--resume", default="")
p.add_argument("--d-model", type=int, default=64)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--tags", default="baseline")
p.add_argument("--rank-fsize-limit-mb", type=int, default=0)
p.add_argument("--limited-rank", type=int, default=1)
p.add_argument("--spike-at", type=int, default=-1, help="inject a bad (all-one-token) batch at this step")
p.add_argument("--pg-timeout", type=int, default=20)
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format="%(asctime)s | %(levelname)s | " + (f"rank {rank} | " if distributed else "") + "%(message)s")
log = logging.getLogger("lm")

TEXT = ("the quick brown fox jumps over the lazy dog. " * 200 +
        "pack my box with five dozen liquor jugs. " * 200)
VOCAB = sorted(set(TEXT)); stoi = {c: i for i, c in enumerate(VOCAB)}
DATA = torch.tensor([stoi[c] for c in TEXT])


class LM(nn.Module):
    def __init__(self, v, d, L):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True) for _ in range(L)])
        self.out = nn.Linear(d, v)

    def forward(self, x):
        h = self.emb(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        return self.out(h)


def batch(g, bs=16, T=32):
    ix = torch.randint(0, len(DATA) - T - 1, (bs,), generator=g)
    return torch.stack([DATA[i:i + T] for i in ix]), torch.stack([DATA[i + 1:i + T + 1] for i in ix])


def save(model, opt, step):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    hp = dict(d_model=args.d_model, n_layer=args.n_layer, lr=args.lr, tags=args.tags, world=world, rank=rank)
    name = args.name_template.format(step=step, **hp)
    if distributed:
        name = f"rank{rank}-" + name
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step, "hparams": hp}
    if args.staging_dir:
        os.makedirs(args.staging_dir, exist_ok=True)
        tmp = os.path.join(args.staging_dir, name + ".tmp")
        torch.save(state, tmp)
        os.replace(tmp, os.path.join(args.ckpt_dir, name))
    else:
        with open(os.path.join(args.ckpt_dir, name), "wb") as f:
            torch.save(state, f)
    log.info("checkpoint saved: %s", os.path.join(args.ckpt_dir, name))


def main():
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        if args.rank_fsize_limit_mb and rank == args.limited_rank:
            lim = args.rank_fsize_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim))
    torch.manual_seed(0)
    model = LM(len(VOCAB), args.d_model, args.n_layer)
    log.info("model parameters: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    start = 0
    if args.resume:
        log.info("resuming from %s", args.resume)
        ck = torch.load(args.resume, map_location="cpu")
        (model.module if distributed else model).load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
    g = torch.Generator().manual_seed(1234 + rank)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        x, y = batch(g)
        if step == args.spike_at:
            x = torch.full_like(x, stoi["q"]); y = torch.full_like(y, stoi["z"])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if gn > 5.0:
            log.warning("grad norm %.1f exceeds 5.0 at step %d (clipped to 1.0)", gn, step)
        opt.step()
        if step % 5 == 0 or step == args.spike_at:
            log.info("step %4d | loss %.4f | ppl %.2f | gnorm %.2f | %.1f steps/s", step, loss.item(),
                     math.exp(min(loss.item(), 20)), gn, (step - start) / (time.time() - t0))
        if args.save_every and step % args.save_every == 0:
            save(model.module if distributed else model, opt, step)
            if distributed:
                dist.barrier()
    log.info("done: %d steps in %.1fs", args.steps, time.time() - t0)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
