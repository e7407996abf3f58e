"""Behaviour cloning from recorded CartPole episodes (offline RL), DDP over gloo, tqdm progress.

prepare: python offline_bc.py --prepare --data DIR [--truncate-shard K]
train:   torchrun ... offline_bc.py --data DIR [--window N] [--no-pad]
"""
import argparse
import glob
import os
import sys
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from tqdm import tqdm


def prepare(args):
    import gymnasium as gym
    os.makedirs(args.data, exist_ok=True)
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    for ep in range(args.episodes):
        obs, _ = env.reset(seed=ep)
        O, A = [], []
        done = False
        while not done:
            # scripted expert: push toward the pole's lean
            a = int(obs[2] + 0.3 * obs[3] > 0) if rng.random() > 0.1 else int(rng.integers(2))
            O.append(obs); A.append(a)
            obs, r, term, trunc, _ = env.step(a)
            done = term or trunc
        np.savez_compressed(os.path.join(args.data, f"episode_{ep:04d}.npz"), obs=np.array(O, np.float32), act=np.array(A, np.int64))
    if args.truncate_shard is not None:
        p = os.path.join(args.data, f"episode_{args.truncate_shard:04d}.npz")
        b = open(p, "rb").read()
        open(p, "wb").write(b[: len(b) // 2])  # interrupted rsync
    print(f"wrote {args.episodes} episodes to {args.data}")


class EpisodeWindows(Dataset):
    def __init__(self, files, window, pad):
        self.files = files
        self.window = window
        self.pad = pad

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        d = np.load(self.files[i])
        obs, act = d["obs"], d["act"]
        if self.pad:
            T = self.window
            if len(obs) < T:
                obs = np.concatenate([obs, np.zeros((T - len(obs), 4), np.float32)])
                act = np.concatenate([act, np.full(T - len(act), -100, np.int64)])
            obs, act = obs[:T], act[:T]
        else:
            obs, act = obs[: self.window], act[: self.window]
        return torch.from_numpy(obs), torch.from_numpy(act)


def train(args):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    files = sorted(glob.glob(os.path.join(args.data, "*.npz")))
    ds = EpisodeWindows(files, args.window, pad=not args.no_pad)
    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    dl = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
    model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    lossf = nn.CrossEntropyLoss(ignore_index=-100)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        bar = tqdm(dl, desc=f"[rank{rank}] epoch {epoch}", disable=False, mininterval=0.5)
        for obs, act in bar:
            logits = ddp(obs)
            loss = lossf(logits.reshape(-1, 2), act.reshape(-1))
            opt.zero_grad(); loss.backward(); opt.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
        if rank == 0:
            print(f"epoch {epoch} done, last loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--prepare", action="store_true")
    p.add_argument("--data", default="runs/bc_data")
    p.add_argument("--episodes", type=int, default=96)
    p.add_argument("--truncate-shard", type=int, default=None)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--no-pad", action="store_true")
    p.add_argument("--epochs", type=int, default=4)
    args = p.parse_args()
    if args.prepare:
        prepare(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
