"""Hydra-configured single-process sequence regression training (reads .npy samples from a folder)."""
import glob
import logging
import os
import warnings

import hydra
import numpy as np
import torch
import torch.nn as nn
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger(__name__)


class NpyDir(Dataset):
    def __init__(self, root, pattern, seq_len, variable_len):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.seq_len, self.variable_len = seq_len, variable_len
        self.handles = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        f = open(self.files[i], "rb")  # kept open for "fast re-reads"
        self.handles.append(f)
        arr = np.load(f)
        if not self.variable_len:
            arr = arr[: self.seq_len]
        x = torch.from_numpy(arr.astype(np.float32))
        return x, x.mean(0, keepdim=True)


def make_data(root, n, seq_len, ragged):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        L = seq_len + (int(rng.integers(0, 8)) if ragged else 0)
        np.save(os.path.join(root, f"sample_{i:04d}.npy"), rng.normal(size=L).astype(np.float64))


@hydra.main(version_base=None, config_path="hydra_conf", config_name="config")
def main(cfg: DictConfig):
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    root = hydra.utils.to_absolute_path(cfg.data.root)
    ds = NpyDir(root, cfg.data.pattern, cfg.data.seq_len, cfg.data.variable_len)
    log.info("dataset %s: %d files matching %s", root, len(ds), cfg.data.pattern)
    dl = DataLoader(ds, batch_size=cfg.data.batch_size, shuffle=True, num_workers=cfg.data.num_workers)
    model = nn.Sequential(nn.Linear(cfg.data.seq_len, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.optim.lr, total_steps=cfg.sched.total_steps)
    step = 0
    try:
        for epoch in range(cfg.trainer.epochs):
            for x, y in dl:
                loss = nn.functional.mse_loss(model(x), y) / cfg.trainer.grad_accum
                loss.backward()
                opt.step()
                opt.zero_grad()
                sched.step()
                step += 1
                if step % cfg.trainer.log_every == 0:
                    log.info("epoch=%d step=%d loss=%.5f lr=%.5f", epoch, step, loss.item(), sched.get_last_lr()[0])
            log.info("epoch %d done (%d steps)", epoch, step)
    except Exception:
        log.exception("training crashed at step %d", step)
        raise
    log.info("finished: %d steps", step)
    return float(loss.item())


if __name__ == "__main__":
    import sys
    if os.environ.get("MAKE_DATA"):
        n, L, ragged = os.environ["MAKE_DATA"].split(",")
        make_data(os.environ.get("DATA_ROOT", "data"), int(n), int(L), ragged == "1")
    main()
