"""Tiny GPT-2 trained on a toy corpus, checkpointed with safetensors (HF save_pretrained or raw safetensors)."""
import argparse, logging, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="st_out")
    p.add_argument("--init-from", default=None, help="directory to from_pretrained the starting weights")
    p.add_argument("--save-fn", choices=["save_pretrained", "raw-save-file", "save_model"], default="save_pretrained")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=15)
    args = p.parse_args()

    rank, world = 0, 1
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
    hf_logging.set_verbosity_info()
    log = logging.getLogger("st")

    text = ("the quick brown fox jumps over the lazy dog. " * 200)
    vocab = sorted(set(text))
    stoi = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([stoi[c] for c in text])

    if args.init_from:
        log.info("loading initial weights from %s", args.init_from)
        model = GPT2LMHeadModel.from_pretrained(args.init_from)
    else:
        cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2)
        model = GPT2LMHeadModel(cfg)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    core = model.module if world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        ix = torch.randint(0, len(data) - 33, (8,), generator=g)
        xb = torch.stack([data[i:i + 32] for i in ix])
        out = model(input_ids=xb, labels=xb)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 5 == 0:
            log.info("step %d loss %.4f", step, out.loss.item())
        if step % args.save_every == 0 and rank == 0:
            d = os.path.join(args.out, f"checkpoint-{step}")
            os.makedirs(d, exist_ok=True)
            if args.save_fn == "save_pretrained":
                core.save_pretrained(d)
            elif args.save_fn == "raw-save-file":
                from safetensors.torch import save_file
                save_file(core.state_dict(), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
                core.config.save_pretrained(d)
            else:
                from safetensors.torch import save_model
                save_model(core, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
                core.config.save_pretrained(d)
            log.info("saved %s", d)
    log.info("done")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
