"""DDP wrapper misuse that depends on one rank's data (gloo, CPU)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--bad-rank", type=int, default=1)
    p.add_argument("--bad-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--shard-dir", default="/work/rr139/ja/data/shards")
    return p.parse_args()

class Net(nn.Module):
    def __init__(self, vocab=64, ckpt_long=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 32)
        self.cls = nn.Linear(32, 4)
        self.aux = nn.Linear(32, 1)        # auxiliary length-regression head
        self.ckpt_long = ckpt_long
    def body(self, x):
        return self.l2(F.gelu(self.l1(x)))
    def forward(self, ids, use_aux=True):
        x = self.emb(ids)
        if self.ckpt_long and ids.size(1) > 16:
            h = checkpoint(self.body, x, use_reentrant=True)   # save memory on long batches
        else:
            h = self.body(x)
        h = h.mean(1)
        return self.cls(h), (self.aux(h).squeeze(-1) if use_aux else None)

def main():
    a = get_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
    torch.manual_seed(0)
    vocab = 64
    if a.fault == "model_mismatch":
        # vocab size taken from this node's local copy of the tokenizer files
        vocab = int(open(os.path.join(a.shard_dir, f"vocab_size.node{rank}")).read())
        print(f"[rank {rank}] tokenizer vocab_size={vocab}", flush=True)
    model = Net(vocab, ckpt_long=(a.fault == "mark_twice"))
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=a.find_unused)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    if a.fault == "none":
        sched.step()        # (bug-ish but harmless) scheduler stepped before the first optimizer step
    n_steps = a.steps
    if a.fault == "uneven":
        # each rank trains on its own pre-split shard; the shards were not balanced
        n_steps = int(open(os.path.join(a.shard_dir, f"shard{rank}.count")).read()) // 8
        print(f"[rank {rank}] shard{rank}: {n_steps*8} samples -> {n_steps} steps", flush=True)
    g = torch.Generator().manual_seed(rank)
    for step in range(n_steps):
        L = 12
        if a.fault == "mark_twice" and rank == a.bad_rank and step >= a.bad_step:
            L = 24          # this rank drew a bucket of long sequences
        ids = torch.randint(0, 64, (8, L), generator=g)
        y = ids[:, 0] % 4
        has_len = not (a.fault == "unused" and rank == a.bad_rank and step == a.bad_step)
        logits, aux = ddp(ids, use_aux=has_len)
        loss = F.cross_entropy(logits, y)
        if has_len:
            loss = loss + 0.1 * F.mse_loss(aux, ids.float().mean(1) / 64)
        else:
            print(f"[rank {rank}] step {step}: no length targets in batch, skipping aux loss", flush=True)
        opt.zero_grad()
        loss.backward()
        opt.step(); sched.step()
        print(f"[rank {rank}] step {step} loss={loss.item():.4f} lr={sched.get_last_lr()[0]:.4f}", flush=True)
    print(f"[rank {rank}] finished {n_steps} steps", flush=True)
    if a.fault != "uneven":
        dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
