"""Tiny causal LM fine-tune: initialise from a checkpoint file, train, export.

Runs single-process (python) or under torchrun (then DDP over gloo).
The checkpoint files it is pointed at come from scenarios/prep_files.py.
"""
import argparse
import dataclasses
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.nn as nn
from tqdm import tqdm

logging.basicConfig(
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    stream=sys.stdout,
)
log = logging.getLogger("finetune")


@dataclasses.dataclass
class RunConfig:
    vocab: int = 128
    dim: int = 64
    layers: int = 2
    lr: float = 3e-4


class TinyLM(nn.Module):
    def __init__(self, cfg: RunConfig, tie=True):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList(
            [nn.TransformerEncoderLayer(cfg.dim, 4, cfg.dim * 2, batch_first=True, dropout=0.0) for _ in range(cfg.layers)]
        )
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        if tie:
            self.lm_head.weight = self.embed.weight

    def forward(self, idx):
        h = self.embed(idx)
        mask = nn.Transformer.generate_square_subsequent_mask(idx.size(1))
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        return self.lm_head(self.ln_f(h))


def load_init(path, weights_only):
    log.info("loading initial weights from %s", path)
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file

        return load_file(path)
    kw = {} if weights_only is None else {"weights_only": weights_only}
    obj = torch.load(path, map_location=None, **kw)
    if isinstance(obj, dict) and "model" in obj:
        if "config" in obj:
            log.info("checkpoint config: %s", obj["config"])
        obj = obj["model"]
    return obj


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--init-from", default="")
    p.add_argument("--weights-only", default="default", choices=["default", "true", "false"])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--export", default="", help="write final weights (.safetensors or .pt)")
    p.add_argument("--no-tie", action="store_true")
    p.add_argument("--save-config-object", action="store_true")
    a = p.parse_args()

    distributed = "RANK" in os.environ
    rank = 0
    if distributed:
        import torch.distributed as dist

        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank = dist.get_rank()
    torch.manual_seed(0)
    cfg = RunConfig()
    model = TinyLM(cfg, tie=not a.no_tie)
    log.info("model params: %.2fM (tied embeddings: %s)", sum(p.numel() for p in model.parameters()) / 1e6, not a.no_tie)
    if a.init_from:
        wo = {"default": None, "true": True, "false": False}[a.weights_only]
        sd = load_init(a.init_from, wo)
        missing, unexpected = model.load_state_dict(sd, strict=False)
        log.info("initialised: %d missing, %d unexpected keys", len(missing), len(unexpected))
    if distributed:
        from torch.nn.parallel import DistributedDataParallel as DDP

        net = DDP(model)
    else:
        net = model
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    g = torch.Generator().manual_seed(rank)
    bar = tqdm(range(1, a.steps + 1), desc=f"train r{rank}", disable=rank != 0, mininterval=0.5)
    for step in bar:
        idx = torch.randint(0, cfg.vocab, (8, 32), generator=g)
        logits = net(idx[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}", gnorm=f"{gn.item():.2f}")
        if step % 20 == 0 and rank == 0:
            log.info("step %d loss %.4f grad_norm %.3f", step, loss.item(), gn.item())
    if a.export and rank == 0:
        sd = model.state_dict()
        log.info("exporting %d tensors to %s", len(sd), a.export)
        if a.export.endswith(".safetensors"):
            from safetensors.torch import save_file

            save_file(sd, a.export, metadata={"format": "pt"})
        else:
            obj = {"model": sd}
            if a.save_config_object:
                obj["config"] = cfg
            torch.save(obj, a.export)
        log.info("export done (%.1f kB)", os.path.getsize(a.export) / 1e3)
    if distributed:
        dist.destroy_process_group()
    log.info("finished")


if __name__ == "__main__":
    main()
