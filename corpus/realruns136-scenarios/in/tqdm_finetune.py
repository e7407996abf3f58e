"""Fine-tune a small classifier head with tqdm progress bars and timestamped logging.

Runs as plain python (single process) or under torchrun (gloo DDP).
"""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--freeze", default="embeddings", help="comma list of module prefixes to freeze, or 'backbone'")
p.add_argument("--head", default="linear", choices=["linear", "backbone_only"])
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--steps-per-epoch", type=int, default=40)
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--notes", default="")
p.add_argument("--ckpt-root", default="checkpoints")
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0))
logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s.%(msecs)03d %(levelname)-7s [%(name)s] [rank {rank}] %(message)s",
                    datefmt="%Y-%m-%d %H:%M:%S")
log = logging.getLogger("finetune")


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(500, 48)
        self.backbone = nn.Sequential(nn.Linear(48, 48), nn.GELU(), nn.Linear(48, 48))
        self.classifier = nn.Linear(48, 3)

    def forward(self, ids):
        h = self.backbone(self.embeddings(ids)).mean(1)
        return self.classifier(h) if args.head == "linear" else h[:, :3]


def main():
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = Classifier()
    prefixes = ["embeddings", "backbone"] if args.freeze == "backbone" else args.freeze.split(",")
    for n, prm in model.named_parameters():
        if any(n.startswith(pf) for pf in prefixes if pf):
            prm.requires_grad_(False)
    trainable = [prm for prm in model.parameters() if prm.requires_grad]
    log.info("trainable params: %d / %d", sum(t.numel() for t in trainable), sum(t.numel() for t in model.parameters()))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(trainable, lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        bar = tqdm(range(args.steps_per_epoch), desc=f"epoch {epoch}", disable=rank != 0, mininterval=0.5)
        for step in bar:
            ids = torch.randint(0, 500, (16, 12))
            y = torch.randint(0, 3, (16,))
            loss = lossf(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
            time.sleep(args.step_sleep)
        log.info("epoch %d finished, last loss %.4f", epoch, loss.item())
        if rank == 0:
            run_name = "__".join(f"{k}={v}".replace(" ", "-").replace("/", "-") for k, v in sorted(vars(args).items()))
            os.makedirs(args.ckpt_root, exist_ok=True)
            path = os.path.join(args.ckpt_root, f"{run_name}__epoch{epoch}.pt")
            with open(path, "wb") as f:
                torch.save({"model": model.state_dict(), "epoch": epoch}, f)
            log.info("saved checkpoint %s", path)
    log.info("training complete")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
