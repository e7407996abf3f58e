"""Entry point of a small LM trainer; lm_utils imports TrainConfig back from here (circular import)."""
import argparse
import datetime
from dataclasses import dataclass

import torch
import torch.distributed as dist

from lm_utils import build_model, make_batches


@dataclass
class TrainConfig:
    vocab: int = 128
    dim: int = 32
    seq: int = 16
    steps: int = 20


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    cfg = TrainConfig(steps=a.steps)
    model = torch.nn.parallel.DistributedDataParallel(build_model(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step, (x, y) in enumerate(make_batches(cfg), 1):
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(); loss.backward(); opt.step()
        if dist.get_rank() == 0 and step % 5 == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
