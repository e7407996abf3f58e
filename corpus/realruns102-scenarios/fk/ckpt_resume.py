"""Small LM-ish trainer with periodic checkpoints and resume; checkpoint faults.

--phase train : trains --steps steps, saves checkpoint every --save-every to --ckpt-dir
--phase resume: loads --resume-from and continues
knobs: --hidden, --param-groups (1 or 2), --save-format (torch|safetensors), --tie
"""
import argparse
import logging
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--phase", default="train")
p.add_argument("--ckpt-dir", default="scratch/ckpt")
p.add_argument("--resume-from", default=None)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--hidden", type=int, default=96)
p.add_argument("--param-groups", type=int, default=1)
p.add_argument("--save-format", default="torch")
p.add_argument("--tie", action="store_true")
p.add_argument("--legacy-load", action="store_true", help="load with weights_only=False")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")
log = logging.getLogger("ckpt_trainer")
V = 300


class RunConfig:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class TinyLM(nn.Module):
    def __init__(self, hidden, tie):
        super().__init__()
        self.embed = nn.Embedding(V, hidden)
        self.block = nn.TransformerEncoderLayer(hidden, 4, hidden * 2, batch_first=True, dropout=0.0)
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, V, bias=False)
        if tie:
            self.lm_head.weight = self.embed.weight

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.lm_head(self.norm(self.block(self.embed(x), src_mask=mask, is_causal=True)))


def make_opt(model):
    if args.param_groups == 2:
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": 0.1}]
    return torch.optim.AdamW(groups, lr=1e-3)


def save(model, opt, step, cfg):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    if args.save_format == "safetensors":
        from safetensors.torch import save_file
        path = os.path.join(args.ckpt_dir, f"model-step{step}.safetensors")
        save_file(model.state_dict(), path, metadata={"step": str(step)})
    else:
        path = os.path.join(args.ckpt_dir, f"ckpt-step{step}.pt")
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                    "config": cfg, "rng": torch.get_rng_state()}, path)
    log.info("saved checkpoint %s (%.1f MB)", path, os.path.getsize(path) / 1e6)


def main():
    torch.manual_seed(0)
    cfg = RunConfig(hidden=args.hidden, vocab=V, tie=args.tie, lr=1e-3)
    model = TinyLM(args.hidden, args.tie)
    opt = make_opt(model)
    log.info("model: %d params, hidden=%d, param_groups=%d", sum(p.numel() for p in model.parameters()),
             args.hidden, args.param_groups)
    start = 0
    if args.phase == "resume":
        log.info("resuming from %s", args.resume_from)
        if args.resume_from.endswith(".safetensors"):
            from safetensors.torch import load_file
            model.load_state_dict(load_file(args.resume_from))
        else:
            ck = torch.load(args.resume_from, map_location="cpu",
                            **({"weights_only": False} if args.legacy_load else {}))
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            start = ck["step"]
        log.info("resumed at step %d", start)
    g = torch.Generator().manual_seed(1)
    t0 = time.time()
    for step in range(start + 1, start + args.steps + 1):
        x = torch.randint(0, V, (8, 24), generator=g)
        x[:, 1::2] = (x[:, ::2] * 7 + 3) % V  # learnable pattern
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            log.info("step %d loss %.4f lr %.1e %.0f ms/step", step, loss.item(), opt.param_groups[0]["lr"],
                     (time.time() - t0) * 1000 / (step - start))
        if step % args.save_every == 0:
            save(model, opt, step, cfg)
    log.info("training done at step %d", step)


if __name__ == "__main__":
    main()
