"""Data-parallel actor-critic (A2C-style) on gymnasium envs, one env batch per rank, DDP over gloo.

Launch with torchrun, or with --spawn (torch.multiprocessing.spawn).
--fault none | env-per-rank | log-returns | rank-buffer | stuck-reset | resume-pickle | resume-arch | spawn-lambda
"""
import argparse
import dataclasses
import logging
import os
import sys
import time
from datetime import timedelta

import numpy as np
import gymnasium as gym
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclasses.dataclass
class RunConfig:
    env_ids: tuple = ("CartPole-v1",)
    hidden: int = 64
    lr: float = 3e-3
    gamma: float = 0.99
    rollout: int = 64
    updates: int = 40
    replay_mb: int = 8


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_act, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_act)
        self.v = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.v(h).squeeze(-1)


def setup_logging(rank, use_logging):
    if use_logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    return logging.getLogger("a2c")


def log(logger, use_logging, msg):
    if use_logging:
        logger.info(msg)
    else:
        print(msg, flush=True)


class ResetRetry(gym.Wrapper):
    """Rejects initial states that are 'too easy' (curriculum); retries reset until accepted."""

    def __init__(self, env, min_angle):
        super().__init__(env)
        self.min_angle = min_angle

    def reset(self, **kw):
        while True:
            obs, info = self.env.reset(**kw)
            if abs(obs[2]) >= self.min_angle:
                return obs, info


def run(rank, world, args, reward_fn=None):
    use_logging = args.logging
    logger = setup_logging(rank, use_logging)
    torch.set_num_threads(1)
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    cfg = RunConfig()
    if args.fault == "env-per-rank":
        cfg.env_ids = ("CartPole-v1", "Acrobot-v1")  # multi-task config: rank i gets env_ids[i % n]
    env_id = cfg.env_ids[rank % len(cfg.env_ids)]
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(4)])
    if args.fault == "stuck-reset" and rank == 1:
        # curriculum threshold in radians meant for Pendulum, but CartPole initial angle is within +-0.05
        envs = gym.vector.SyncVectorEnv([lambda: ResetRetry(gym.make(env_id), min_angle=0.5) for _ in range(4)])
    obs_dim = envs.single_observation_space.shape[0]
    n_act = envs.single_action_space.n
    torch.manual_seed(0)
    model = ActorCritic(obs_dim, n_act, cfg.hidden)
    log(logger, use_logging, f"rank {rank}/{world}: env={env_id} obs_dim={obs_dim} n_act={n_act} params={sum(p.numel() for p in model.parameters())}")

    if args.fault in ("resume-pickle", "resume-arch"):
        ckpt_path = os.path.join(args.out, "a2c_last.pt")
        if rank == 0 and not os.path.exists(ckpt_path):
            raise SystemExit("run --fault none first to create " + ckpt_path)
        log(logger, use_logging, f"loading checkpoint {ckpt_path}")
        if args.fault == "resume-arch":
            model = ActorCritic(obs_dim, n_act, 128)  # --hidden changed in the sweep config
            ckpt = torch.load(ckpt_path, weights_only=False)
        else:
            ckpt = torch.load(ckpt_path)
        model.load_state_dict(ckpt["model"])

    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=cfg.lr)
    replay = None
    if args.fault == "rank-buffer":
        # per-rank config: rank 1 is the "archive" rank keeping a large observation history
        mb = cfg.replay_mb if rank != 1 else 6000
        log(logger, use_logging, f"allocating observation history of {mb} MB")
        replay = torch.empty(mb * 1024 * 1024 // 4, dtype=torch.float32)
        replay.zero_()

    obs, _ = envs.reset(seed=1000 * rank)
    ep_ret = np.zeros(envs.num_envs)
    finished = []
    last_logged = 0
    t0 = time.time()
    for upd in range(args.updates):
        if args.fault == "stuck-reset":
            dist.monitored_barrier(timeout=timedelta(seconds=20))
        logps, vals, rews, dones, ents = [], [], [], [], []
        for t in range(cfg.rollout):
            x = torch.as_tensor(obs, dtype=torch.float32)
            logits, v = ddp(x)
            d = torch.distributions.Categorical(logits=logits)
            a = d.sample()
            obs, r, term, trunc, _ = envs.step(a.numpy())
            if reward_fn is not None:
                r = reward_fn(r)
            ep_ret += r
            for i in np.nonzero(term | trunc)[0]:
                finished.append(ep_ret[i])
                ep_ret[i] = 0
            logps.append(d.log_prob(a)); vals.append(v); ents.append(d.entropy())
            rews.append(torch.as_tensor(r, dtype=torch.float32)); dones.append(torch.as_tensor(term | trunc, dtype=torch.float32))
        with torch.no_grad():
            _, nv = ddp(torch.as_tensor(obs, dtype=torch.float32))
        R = nv
        rets = []
        for t in reversed(range(cfg.rollout)):
            R = rews[t] + cfg.gamma * R * (1 - dones[t])
            rets.append(R)
        rets = torch.stack(rets[::-1])
        vals_t = torch.stack(vals); logps_t = torch.stack(logps)
        adv = rets - vals_t.detach()
        loss = -(logps_t * adv).mean() + 0.5 * (rets - vals_t).pow(2).mean() - 0.01 * torch.stack(ents).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 0.5)
        opt.step()
        if (upd + 1) % 5 == 0:
            if args.fault == "log-returns":
                # mean return of the episodes finished since the last log line, across ranks
                ep = torch.tensor(finished[last_logged:], dtype=torch.float32)
                dist.all_reduce(ep)
                mean_ret = (ep / world).mean().item()
            else:
                s = torch.tensor([float(np.sum(finished[-20:])), float(len(finished[-20:]))])
                dist.all_reduce(s)
                mean_ret = (s[0] / max(s[1], 1)).item()
            last_logged = len(finished)
            if rank == 0 or use_logging:
                log(logger, use_logging, f"update {upd+1}/{args.updates} loss={loss.item():.4f} mean_return={mean_ret:.1f} episodes={len(finished)} fps={int((upd+1)*cfg.rollout*envs.num_envs/(time.time()-t0))}")
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "config": cfg, "updates": args.updates},
                   os.path.join(args.out, "a2c_last.pt"))
        log(logger, use_logging, f"saved {os.path.join(args.out, 'a2c_last.pt')}")
    dist.barrier()
    dist.destroy_process_group()
    log(logger, use_logging, "done")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--updates", type=int, default=40)
    p.add_argument("--out", default="runs/a2c")
    p.add_argument("--logging", action="store_true")
    p.add_argument("--spawn", action="store_true")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--port", type=int, default=42660)
    p.add_argument("--pg-timeout", type=int, default=60)
    args = p.parse_args()
    if args.spawn:
        import torch.multiprocessing as mp
        scale = 0.1
        reward_fn = None
        if args.fault == "spawn-lambda":
            reward_fn = lambda r: r * scale  # reward scaling closure
        mp.spawn(run, args=(args.nproc, args, reward_fn), nprocs=args.nproc, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)


if __name__ == "__main__":
    main()
