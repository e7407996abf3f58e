"""Fine-tune a tiny classifier briefly, save a checkpoint, then run the evaluation job that reloads it.

--fault selects the bug in the eval job:
  none | ddp_prefix | head_size | missing_ckpt | truncated | lfs_pointer | pickled_args | eval_columns | optim_resume
"""
import argparse, os, shutil, sys, time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.distributed as dist
from tqdm import tqdm


class Classifier(nn.Module):
    def __init__(self, vocab=200, dim=32, num_labels=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
        self.head = nn.Linear(dim, num_labels)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x).mean(1)))


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 200, (n, 12), generator=g)
    y = (x[:, 0] % 3)
    return x, y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--out", default="runs/eval")
    p.add_argument("--eval-num-labels", type=int, default=3)
    p.add_argument("--log-every", type=int, default=10)
    args = p.parse_args()

    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)

    # ---------------- short fine-tune -----------------
    model = Classifier()
    train_model = nn.parallel.DistributedDataParallel(model) if distributed else model
    opt = torch.optim.AdamW(train_model.parameters(), lr=3e-3, weight_decay=0.01)
    x, y = make_split(512, 1 + rank)
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, 512, (32,))
        loss = nn.functional.cross_entropy(train_model(x[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % args.log_every == 0 and rank == 0:
            print(f"[train] step {step}/{args.steps} loss={loss.item():.4f} lr={opt.param_groups[0]['lr']:.1e}", flush=True)

    ckpt_path = os.path.join(args.out, "checkpoint-epoch2.pt")
    if rank == 0:
        if args.fault == "ddp_prefix":
            sd = train_model.state_dict()  # bug: saves the DDP wrapper's keys (module.*)
        else:
            sd = model.state_dict()
        payload = {"model": sd, "optimizer": opt.state_dict(), "epoch": 2}
        if args.fault == "pickled_args":
            payload["args"] = args  # argparse.Namespace pickled into the checkpoint
        torch.save(payload, ckpt_path)
        print(f"[train] saved checkpoint to {ckpt_path} ({os.path.getsize(ckpt_path)} bytes)", flush=True)
        if args.fault == "truncated":
            # checkpoint copied to the eval area by an rsync that got interrupted
            dst = os.path.join(args.out, "eval_copy.pt")
            with open(ckpt_path, "rb") as f, open(dst, "wb") as g:
                g.write(f.read()[: os.path.getsize(ckpt_path) // 3])
            ckpt_path = dst
        if args.fault == "lfs_pointer":
            dst = os.path.join(args.out, "released_model.pt")
            import hashlib
            data = open(ckpt_path, "rb").read()
            with open(dst, "w") as g:  # what a clone without git-lfs leaves on disk
                g.write("version https://git-lfs.github.com/spec/v1\n")
                g.write(f"oid sha256:{hashlib.sha256(data).hexdigest()}\n")
                g.write(f"size {len(data)}\n")
            ckpt_path = dst
    if distributed:
        dist.barrier()
        if args.fault == "truncated":
            ckpt_path = os.path.join(args.out, "eval_copy.pt")
        if args.fault == "lfs_pointer":
            ckpt_path = os.path.join(args.out, "released_model.pt")

    # ---------------- evaluation job -----------------
    print(f"[eval] rank {rank}: loading {ckpt_path}", flush=True)
    if args.fault == "missing_ckpt" and (args.fail_rank < 0 or rank == args.fail_rank):
        # eval config computes the epoch index 1-based while training saved 0-based names
        ckpt_path = os.path.join(args.out, "checkpoint-epoch3.pt")
    state = torch.load(ckpt_path, map_location="cpu")
    eval_model = Classifier(num_labels=args.eval_num_labels)
    eval_model.load_state_dict(state["model"])
    eval_model.eval()

    if args.fault == "optim_resume":
        # resumed with a frozen embedding -> only the trainable params go to the optimizer
        for p_ in eval_model.embed.parameters():
            p_.requires_grad_(False)
        opt2 = torch.optim.AdamW([p_ for p_ in eval_model.parameters() if p_.requires_grad], lr=3e-3)
        opt2.load_state_dict(state["optimizer"])

    ex, ey = make_split(256, 99)
    eval_rows = [{"input_ids": ex[i], "label": ey[i]} for i in range(len(ex))]
    label_key = "labels" if args.fault == "eval_columns" else "label"
    correct = total = 0
    with torch.no_grad():
        for i in tqdm(range(0, len(eval_rows), 32), desc=f"eval rank{rank}", disable=rank != 0, file=sys.stdout):
            batch = eval_rows[i:i + 32]
            inp = torch.stack([r["input_ids"] for r in batch])
            lab = torch.stack([r[label_key] for r in batch])
            pred = eval_model(inp).argmax(-1)
            correct += (pred == lab).sum().item(); total += len(batch)
    print(f"[eval] rank {rank}: accuracy={correct / total:.4f} on {total} examples", flush=True)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
