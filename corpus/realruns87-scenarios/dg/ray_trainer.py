"""Ray Train TorchTrainer (2 CPU workers, gloo) with selectable faults.

--fault selects the bug, --rank which world rank gets it, --step when.
"""
import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings

import ray
import ray.train
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import Checkpoint, CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=32, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc1 = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)
        self.aux = nn.Linear(d, 2) if extra_head else None

    def forward(self, x, use_aux=False):
        h = torch.tanh(self.fc1(self.emb(x)))
        if use_aux and self.aux is not None:
            return self.aux(h)
        return self.out(h)


def make_batches(rank, n, bs, seq, vocab, seed):
    g = torch.Generator().manual_seed(seed + rank)
    return [torch.randint(0, vocab, (bs, seq + 1), generator=g) for _ in range(n)]


def train_func(cfg):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    world = ctx.get_world_size()
    fault = cfg["fault"]
    frank = cfg["rank"]
    fstep = cfg["step"]
    me = rank == frank
    if cfg.get("log_ts"):
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(levelname)s [rank%(rank)s] %(message)s" if False else
                            "%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    log.setLevel(logging.INFO)

    if fault == "missing-module" and me:
        import wandb  # noqa: F401  (experiment logger only installed on the head image)

    vocab = cfg["vocab"]
    hidden = cfg["hidden"]
    if fault == "model-mismatch" and me:
        # per-worker config file was generated from an older sweep
        hidden = cfg["hidden"] * 2
    model = TinyLM(vocab=vocab, d=hidden, extra_head=(fault in ("unused-param", "resume-aux")))
    resume_sd = None
    if fault == "resume-aux":
        # resume the LM from a pre-aux-head run; the new aux head starts fresh
        resume_sd = torch.load(cfg["init_ckpt"], map_location="cpu")
        missing = model.load_state_dict(resume_sd["model"], strict=False)
        print(f"[rank {rank}] resumed model from {cfg['init_ckpt']} ({missing})", flush=True)
    if fault == "load-ckpt":
        path = cfg["init_ckpt"]
        sd = torch.load(path, map_location="cpu")
        model.load_state_dict(sd["model"] if "model" in sd else sd)
        print(f"[rank {rank}] loaded init checkpoint {path}", flush=True)
    model = ray.train.torch.prepare_model(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    if resume_sd is not None:
        opt.load_state_dict(resume_sd["optim"])
    if cfg.get("noisy"):
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3)
        sched.step()  # called before optimizer.step(): torch warns
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning)
    data_vocab = vocab
    if fault == "vocab-oob" and me:
        # this shard was tokenized with the bigger tokenizer (vocab + added special tokens)
        data_vocab = vocab + 8
    batches = make_batches(rank, cfg["steps"], cfg["bs"], cfg["seq"], data_vocab, 1234)
    seq = cfg["seq"]
    it = batches
    if cfg.get("tqdm") and rank == 0:
        from tqdm import tqdm
        it = tqdm(batches, desc=f"epoch 0 rank {rank}", file=sys.stdout, mininterval=0, ncols=80)
    for step, b in enumerate(it):
        x, y = b[:, :-1], b[:, 1:]
        if fault == "shape" and me and step == fstep:
            # last partial batch on this shard: reshaping with the configured batch size
            x = x[:-1]
            y = y.reshape(cfg["bs"], seq)[:-1]
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, vocab), y.view(cfg["bs"] * seq))
        elif fault == "unused-param" and step == fstep and me:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        elif fault == "unused-param":
            # aux head only used every other step on rank 0
            aux = model(x, use_aux=(step % 2 == 0 and rank == 0))
            if aux.shape[-1] == 2:
                loss = aux.mean()
            else:
                loss = F.cross_entropy(aux.reshape(-1, vocab), y.reshape(-1))
        else:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        if fault == "keyerror" and me and step == fstep:
            stats = {"loss": loss.item(), "ppl": math.exp(loss.item())}
            print(f"[rank {rank}] step {step} loss={stats['loss']:.4f} acc={stats['accuracy']:.3f}")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if fault == "segv" and me and step == fstep:
            import ctypes
            # buggy custom C helper dereferences a NULL pointer
            ctypes.string_at(0)
        if fault == "hang" and me and step == fstep:
            print(f"[rank {rank}] step {step}: refreshing dataset index from shared storage ...", flush=True)
            time.sleep(600)
        if fault == "oom" and me and step == fstep:
            print(f"[rank {rank}] step {step}: materialising full eval cache", flush=True)
            cache = []
            for i in range(400):
                cache.append(torch.ones(64 * 1024 * 1024 // 4 * 16))  # 64 MiB * 16 chunks
        metrics = {"step": step, "loss": float(loss.item()), "rank": rank}
        if cfg.get("log_ts"):
            log.info("step %d loss %.4f", step, loss.item())
        elif not cfg.get("tqdm"):
            print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
        ckpt = None
        if cfg.get("ckpt_every") and (step + 1) % cfg["ckpt_every"] == 0:
            d = tempfile.mkdtemp(dir=cfg.get("tmp_ckpt_dir"))
            if rank == 0:
                blob = {"model": model.module.state_dict() if hasattr(model, "module") else model.state_dict(),
                        "optim": opt.state_dict(), "step": step}
                if cfg.get("ckpt_pad_mb"):
                    blob["ema"] = torch.zeros(cfg["ckpt_pad_mb"] * 1024 * 1024 // 4)
                torch.save(blob, os.path.join(d, "model.pt"))
            ckpt = Checkpoint.from_directory(d)
        ray.train.report(metrics, checkpoint=ckpt if rank == 0 else None)
    print(f"[rank {rank}] training done", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--step", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--cpus-per-worker", type=float, default=1)
    p.add_argument("--storage", default="/work/rr87/dg/ray_results")
    p.add_argument("--name", default="tinylm")
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--ckpt-pad-mb", type=int, default=0)
    p.add_argument("--init-ckpt", default="")
    p.add_argument("--pg-timeout", type=float, default=0)
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--log-ts", action="store_true")
    p.add_argument("--noisy", action="store_true")
    p.add_argument("--timeout-s", type=int, default=60)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--address", default=None)
    a = p.parse_args()
    if a.log_ts:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=2, include_dashboard=False)
    cfg = dict(fault=a.fault, rank=a.rank, step=a.step, steps=a.steps, vocab=64, hidden=32, bs=8, seq=16,
               lr=a.lr, ckpt_every=a.ckpt_every, ckpt_pad_mb=a.ckpt_pad_mb, init_ckpt=a.init_ckpt,
               tqdm=a.tqdm, log_ts=a.log_ts, noisy=a.noisy)
    if a.fault == "unpicklable":
        import threading
        cfg["metrics_lock"] = threading.Lock()  # shared lock for the metrics writer
    trainer = TorchTrainer(
        train_func,
        train_loop_config=cfg,
        torch_config=TorchConfig(backend="gloo", timeout_s=a.timeout_s),
        scaling_config=ScalingConfig(num_workers=a.num_workers, use_gpu=False,
                                     resources_per_worker={"CPU": a.cpus_per_worker}),
        run_config=RunConfig(name=a.name, storage_path=a.storage,
                             failure_config=FailureConfig(max_failures=0),
                             checkpoint_config=CheckpointConfig(num_to_keep=2)),
    )
    result = trainer.fit()
    print("final metrics:", result.metrics)
    print("checkpoint:", result.checkpoint)


if __name__ == "__main__":
    main()
