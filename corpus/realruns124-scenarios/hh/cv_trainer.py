#!/usr/bin/env python
"""Image-classification trainer (research-repo style): YAML config + argparse overrides.

  python cv_trainer.py --config configs/cifar_tiny.yaml --opt train.epochs=3
  torchrun --nproc-per-node 2 cv_trainer.py --config ... --opt ...
"""
import argparse
import copy
import csv
import datetime
import logging
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
import yaml
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import build_model  # noqa: E402

log = logging.getLogger("cv_trainer")


def parse_args():
    p = argparse.ArgumentParser(description="tiny CV trainer")
    p.add_argument("--config", required=True)
    p.add_argument("--opt", nargs="*", default=[], help="key.sub=value overrides")
    p.add_argument("--node-opt", nargs="*", default=[],
                   help="RANK:key=value overrides read from a node-local config copy")
    p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
    p.add_argument("--port", type=int, default=46000)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--style", choices=["print", "logging"], default="print")
    p.add_argument("--progress", action="store_true", help="tqdm progress bar on rank 0")
    p.add_argument("--save-pretrained", default=None)
    p.add_argument("--pid-dir", default=None)
    return p.parse_args()


def set_by_path(cfg, key, value):
    node = cfg
    parts = key.split(".")
    for k in parts[:-1]:
        node = node[k]
    node[parts[-1]] = yaml.safe_load(value)


def load_config(args, rank):
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    for o in args.opt:
        k, v = o.split("=", 1)
        set_by_path(cfg, k, v)
    for o in args.node_opt:
        r, kv = o.split(":", 1)
        if int(r) == rank:
            k, v = kv.split("=", 1)
            set_by_path(cfg, k, v)
    return cfg


class SyntheticImages(Dataset):
    def __init__(self, n, img_size, num_classes, layout="NCHW", dtype="float32", seed=0):
        rng = np.random.RandomState(seed)
        self.x = rng.randn(n, 3, img_size, img_size).astype(dtype)
        self.y = rng.randint(0, num_classes, size=n)
        if layout == "NHWC":
            self.x = np.ascontiguousarray(self.x.transpose(0, 2, 3, 1))
        # make labels learnable: shift the mean of channel 0 with the class
        for i, c in enumerate(self.y):
            if layout == "NHWC":
                self.x[i, :, :, 0] += 0.3 * c
            else:
                self.x[i, 0] += 0.3 * c

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


class CSVLogger:
    def __init__(self, path, columns):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if os.path.exists(path):
            # resuming: keep the header that is already in the file
            with open(path) as f:
                columns = next(csv.reader(f))
            self.f = open(path, "a", newline="")
            self.w = csv.DictWriter(self.f, fieldnames=columns)
        else:
            self.f = open(path, "w", newline="")
            self.w = csv.DictWriter(self.f, fieldnames=columns)
            self.w.writeheader()

    def log(self, row):
        self.w.writerow(row)
        self.f.flush()


class Trainer:
    def __init__(self, cfg, rank, world, args):
        self.cfg, self.rank, self.world, self.args = cfg, rank, world, args
        self.distributed = world > 1
        t = cfg["train"]
        torch.manual_seed(cfg["seed"])
        self.model = build_model(cfg)
        if cfg["model"].get("pretrained"):
            sd = torch.load(cfg["model"]["pretrained"], map_location="cpu")
            self.model.load_state_dict(sd)
            self.info(f"loaded pretrained weights from {cfg['model']['pretrained']}")
        if t.get("channels_last"):
            self.model = self.model.to(memory_format=torch.channels_last)
        if t.get("freeze_backbone"):
            for n, p in self.model.named_parameters():
                if not n.startswith("head"):
                    p.requires_grad_(False)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.SGD(params, lr=t["lr"], momentum=0.9, weight_decay=5e-4)
        if self.distributed:
            self.model = torch.nn.parallel.DistributedDataParallel(
                self.model, find_unused_parameters=t.get("ddp_find_unused", False))
        d = cfg["data"]
        self.train_ds = SyntheticImages(d["num_samples"], d["img_size"], d["num_classes"], d["layout"], d["dtype"],
                                        seed=cfg["seed"])
        self.val_ds = SyntheticImages(d["val_samples"], d["img_size"], d["num_classes"], d["layout"], d["dtype"],
                                      seed=cfg["seed"] + 1)
        self.train_sampler = DistributedSampler(self.train_ds, shuffle=True) if self.distributed else None
        self.val_sampler = DistributedSampler(self.val_ds, shuffle=False) if self.distributed else None
        self.train_loader = DataLoader(self.train_ds, batch_size=t["batch_size"], sampler=self.train_sampler,
                                       shuffle=self.train_sampler is None, num_workers=d["num_workers"],
                                       drop_last=True)
        self.val_loader = DataLoader(self.val_ds, batch_size=t["batch_size"], sampler=self.val_sampler,
                                     num_workers=0)
        s = cfg["sched"]
        self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=t["lr"], total_steps=s["total_steps"])
        self.step = 0
        self.start_epoch = 0
        if t.get("resume"):
            ck = torch.load(t["resume"], map_location="cpu")
            self.unwrap().load_state_dict(ck["model"])
            self.opt.load_state_dict(ck["optimizer"])
            self.step, self.start_epoch = ck["step"], ck["epoch"] + 1
            self.info(f"resumed from {t['resume']} at step {self.step}")
        self.tb = None
        self.csv = None
        if rank == 0:
            from tensorboardX import SummaryWriter
            self.tb = SummaryWriter(cfg["logging"]["tb_dir"])
            self.csv = CSVLogger(cfg["logging"]["csv"], cfg["logging"]["csv_columns"])

    def unwrap(self):
        return self.model.module if self.distributed else self.model

    def info(self, msg):
        if self.args.style == "logging":
            log.info(msg)
        elif self.rank == 0:
            print(msg, flush=True)

    def compute_loss(self, out, y):
        c = self.cfg["loss"]
        if c["type"] == "bce":
            loss = F.binary_cross_entropy_with_logits(out["logits"], y.float())
        else:
            loss = F.cross_entropy(out["logits"], y)
        if "aux_logits" in out and c["aux_weight"] > 0:
            loss = loss + c["aux_weight"] * F.cross_entropy(out["aux_logits"], y)
        if "memory" in out:
            loss = loss + c["memory_weight"] * F.mse_loss(out["feat"], out["memory"])
        return loss

    def prep(self, x):
        if self.cfg["train"].get("channels_last"):
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        ys, ps = [], []
        for x, y in self.val_loader:
            logits = self.model(self.prep(x))["logits"]
            ps.append(torch.softmax(logits, dim=1))
            ys.append(y)
        y = torch.cat(ys).numpy()
        p = torch.cat(ps).numpy()
        res = {}
        for m in self.cfg["eval"]["metrics"]:
            if m == "acc":
                res["val_acc"] = accuracy_score(y, p.argmax(1))
            elif m == "f1":
                res["val_f1"] = f1_score(y, p.argmax(1), average="macro")
            elif m == "auc":
                res["val_auc"] = roc_auc_score(y, p, multi_class="ovr")
        if self.distributed:
            t = torch.tensor([res[k] for k in sorted(res)], dtype=torch.float64)
            dist.all_reduce(t)
            res = {k: v / self.world for k, v in zip(sorted(res), t.tolist())}
        self.model.train()
        return res

    @torch.no_grad()
    def full_eval(self):
        """full held-out evaluation on rank 0 only (confusion matrix for TensorBoard)"""
        d = self.cfg["data"]
        ds = SyntheticImages(d["full_val_samples"], d["img_size"], d["num_classes"], d["layout"], d["dtype"],
                             seed=123)
        self.model.eval()
        correct = 0
        t0 = time.time()
        for x, y in DataLoader(ds, batch_size=256):
            correct += (self.unwrap()(self.prep(x))["logits"].argmax(1) == y).sum().item()
        self.model.train()
        self.info(f"full eval: acc={correct / len(ds):.4f} ({len(ds)} samples, {time.time() - t0:.1f}s)")

    def fit(self):
        t = self.cfg["train"]
        self.info(f"start training: {len(self.train_ds)} samples, world_size={self.world}, "
                  f"epochs={t['epochs']}, steps/epoch={len(self.train_loader)}")
        for epoch in range(self.start_epoch, t["epochs"]):
            if self.train_sampler is not None:
                self.train_sampler.set_epoch(epoch)
            it = self.train_loader
            if self.args.progress and self.rank == 0:
                from tqdm import tqdm
                it = tqdm(it, desc=f"epoch {epoch}", dynamic_ncols=False, ncols=100)
            for x, y in it:
                out = self.model(self.prep(x))
                loss = self.compute_loss(out, y)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                self.sched.step()
                self.step += 1
                if self.tb is not None:
                    self.tb.add_scalar("train/loss", loss.item(), self.step)
                    self.tb.add_scalar("train/lr", self.sched.get_last_lr()[0], self.step)
                if self.step % 4 == 0:
                    self.info(f"epoch {epoch} step {self.step} loss {loss.item():.4f} "
                              f"lr {self.sched.get_last_lr()[0]:.5f}")
                if self.step % t["eval_every"] == 0:
                    res = self.evaluate()
                    self.info("eval step %d: %s" % (self.step, " ".join(f"{k}={v:.4f}" for k, v in res.items())))
                    if self.csv is not None:
                        self.csv.log({"step": self.step, "epoch": epoch, "train_loss": round(loss.item(), 5), **res})
                        for k, v in res.items():
                            self.tb.add_scalar(k, v, self.step)
                    if self.cfg["eval"].get("full_val_rank0") and self.rank == 0:
                        self.full_eval()
            self.save(epoch)
        self.info("training finished")

    def save(self, epoch):
        if self.rank != 0:
            return
        os.makedirs(self.cfg["train"]["save_dir"], exist_ok=True)
        path = os.path.join(self.cfg["train"]["save_dir"], "last.pt")
        torch.save({"model": self.unwrap().state_dict(), "optimizer": self.opt.state_dict(),
                    "step": self.step, "epoch": epoch}, path)
        self.info(f"saved checkpoint {path}")


def setup_logging(style, rank):
    if style == "logging":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")


def run(rank, world, args):
    setup_logging(args.style, rank)
    if world > 1 and not dist.is_initialized():
        if args.spawn:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    cfg = load_config(args, rank)
    torch.set_num_threads(1)
    trainer = Trainer(cfg, rank, world, args)
    trainer.fit()
    if args.save_pretrained and rank == 0:
        torch.save(trainer.unwrap().state_dict(), args.save_pretrained)
        print(f"exported weights to {args.save_pretrained}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def spawn_entry(rank, world, args):
    run(rank, world, args)


def main():
    args = parse_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn, args), nprocs=args.spawn, join=True)
    else:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
        run(rank, world, args)


if __name__ == "__main__":
    main()
