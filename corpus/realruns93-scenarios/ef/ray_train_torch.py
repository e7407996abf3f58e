"""Ray Train TorchTrainer on CPU (gloo): tiny GPT-2-ish / MLP regression, fault selected by flags."""
import argparse
import logging
import os
import signal
import sys
import tempfile
import time
import warnings

import ray
import torch
import torch.nn as nn
import torch.distributed as dist
from ray import train
from ray.train import ScalingConfig, RunConfig, FailureConfig, Checkpoint
from ray.train.torch import TorchTrainer

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--cpus", type=int, default=2)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--storage", default="/work/rr93/ef/ray_results")
p.add_argument("--resume", default="")
p.add_argument("--log", action="store_true")
p.add_argument("--max-failures", type=int, default=0)
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


class TinyLM(nn.Module):
    def __init__(self, vocab=128, d=32, hidden=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ff = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.emb(x)
        h = h + self.ff(h)
        return self.head(h)


def train_loop(cfg):
    fault, frank, fstep = cfg["fault"], cfg["rank"], cfg["step"]
    ctx = train.get_context()
    rank = ctx.get_world_rank()
    ws = ctx.get_world_size()
    torch.manual_seed(0)
    vocab = cfg.get("vocab", 128)
    hidden = 64
    if fault == "model-mismatch" and rank == frank:
        hidden = 96  # this worker read a stale config
    model = TinyLM(vocab=vocab, hidden=hidden)
    if fault == "state-dict" and rank == frank:
        # resume from a checkpoint written by a model with a different width
        old = TinyLM(vocab=vocab, hidden=48)
        path = os.path.join(tempfile.gettempdir(), f"rr93ef_ckpt_r{rank}.pt")
        torch.save(old.state_dict(), path)
        model.load_state_dict(torch.load(path))
    if fault == "missing-resume" and frank in (-1, rank):
        sd = torch.load(cfg["resume"], map_location="cpu")
        model.load_state_dict(sd["model"])
    model = train.torch.prepare_model(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.get("lr", 1e-3))
    lossf = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(cfg["steps"]):
        x = torch.randint(0, vocab, (8, 16), generator=g)
        y = torch.roll(x, -1, dims=1)
        if fault == "vocab-oob" and rank == frank and step == fstep:
            # tokenizer of this shard produced ids from the 50257-token GPT-2 vocab
            x[0, 3] = 50256
        if fault == "kill" and rank == frank and step == fstep:
            os.kill(os.getpid(), signal.SIGKILL)
        logits = model(x)
        if fault == "shape" and rank == frank and step == fstep:
            # bug: flattening logits but not the targets (only hit on the last, short batch of this shard)
            loss = lossf(logits.view(-1, vocab), y[:, :-1].reshape(-1))
        else:
            loss = lossf(logits.view(-1, vocab), y.view(-1))
        if fault == "nan" and rank == frank and step >= fstep:
            loss = loss * float("inf") if step == fstep else loss
        if not torch.isfinite(loss):
            raise FloatingPointError(f"Non-finite loss {loss.item()} at step {step} on rank {rank}")
        opt.zero_grad()
        loss.backward()
        opt.step()
        metrics = {"loss": loss.item(), "step": step}
        if fault == "keyerror" and rank == frank and step == fstep:
            metrics["ppl"] = metrics["perplexity"]
        if fault == "collective" and rank == frank and step == fstep:
            t = torch.zeros(5)
            dist.all_reduce(t)
        if fault == "hang" and rank == frank and step == fstep:
            print(f"[rank {rank}] waiting for eval shard lock /tmp/rr93ef_eval.lock ...", flush=True)
            while os.path.exists("/tmp/rr93ef_eval.lock") or True:
                time.sleep(5)
        if rank == 0:
            log.info("step %d loss %.4f", step, loss.item()) if args.log else print(f"step {step} loss {loss.item():.4f}", flush=True)
        train.report(metrics)
    if fault == "ckpt-dir" and rank == frank:
        out = cfg["resume"]
        torch.save(model.state_dict(), os.path.join(out, "model_final.pt"))


def main():
    ray.init(num_cpus=args.cpus, include_dashboard=False)
    cfg = {"fault": args.fault, "rank": args.rank, "step": args.step, "steps": args.steps, "resume": args.resume}
    if args.fault == "warnings":
        warnings.warn("torch.distributed: gloo backend selected, performance will be poor on CPU", UserWarning)
    trainer = TorchTrainer(
        train_loop,
        train_loop_config=cfg,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=train.torch.TorchConfig(backend="gloo", timeout_s=30),
        run_config=RunConfig(name=f"rr93ef_{args.fault}", storage_path=args.storage,
                             failure_config=FailureConfig(max_failures=args.max_failures)),
    )
    result = trainer.fit()
    print("Training finished. Final metrics:", result.metrics)
    ray.shutdown()


if __name__ == "__main__":
    main()
