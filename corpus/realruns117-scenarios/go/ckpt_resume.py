"""Resume / save checkpoints for a tiny GPT-2 (HF config, built locally) or a small MLP.

--mode save       : train a few steps and write ckpt (torch.save) to --ckpt
--mode resume     : load --ckpt and continue (model + optimizer)
--mode export     : export weights with safetensors for serving
--arch mlp|gpt2, --hidden, --extra-group (adds a second param group with no_decay),
--save-args (stores the argparse Namespace inside the checkpoint, as many repos do)
"""
import argparse
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jlog  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--mode", default="save")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--arch", default="mlp")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--logfmt", default="plain")
p.add_argument("--no-decay-group", action="store_true")
p.add_argument("--save-args", action="store_true")
p.add_argument("--ddp", action="store_true")
args = p.parse_args()

log = jlog.setup(args.logfmt, "ckpt")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

rank = 0
if args.ddp:
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank = dist.get_rank()


def build():
    if args.arch == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=2, n_embd=args.hidden, n_head=4, vocab_size=256, n_positions=64)
        return GPT2LMHeadModel(cfg)
    return nn.Sequential(nn.Linear(16, args.hidden), nn.LayerNorm(args.hidden), nn.ReLU(),
                         nn.Linear(args.hidden, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 4))


def make_opt(model):
    if args.no_decay_group:
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        nodecay = [p for n, p in model.named_parameters() if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": 0.01}, {"params": nodecay, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": 0.01}]
    return torch.optim.AdamW(groups, lr=1e-3)


def batch(g):
    if args.arch == "gpt2":
        ids = torch.randint(0, 256, (4, 32), generator=g)
        return {"input_ids": ids, "labels": ids}
    x = torch.randn(8, 16, generator=g)
    return x, torch.randint(0, 4, (8,), generator=g)


def step_fn(model, opt, b):
    if args.arch == "gpt2":
        loss = model(**b).loss
    else:
        x, y = b
        loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss)


model = build()
opt = make_opt(model)
log.info("built %s hidden=%d params=%d", args.arch, args.hidden, sum(p.numel() for p in model.parameters()))
g = torch.Generator().manual_seed(rank)
start = 0
if args.mode == "resume":
    log.info("resuming from %s", args.ckpt)
    ck = torch.load(args.ckpt, map_location="cpu")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    start = ck["step"] + 1
    log.info("resumed at step %d", start)

for s in range(start, start + args.steps):
    loss = step_fn(model, opt, batch(g))
    log.info("step %d loss %.4f", s, loss)

if args.mode in ("save", "resume") and rank == 0:
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    ck = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": start + args.steps - 1}
    if args.save_args:
        ck["args"] = args
    torch.save(ck, args.ckpt)
    log.info("saved checkpoint to %s (%d bytes)", args.ckpt, os.path.getsize(args.ckpt))
if args.mode == "export":
    from safetensors.torch import save_file
    out = os.path.splitext(args.ckpt)[0] + ".safetensors"
    log.info("exporting weights to %s", out)
    save_file(model.state_dict(), out)
    log.info("export done")
if args.ddp:
    dist.destroy_process_group()
