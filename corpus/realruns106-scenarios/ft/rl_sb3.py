"""PPO on a small custom gymnasium environment (inventory control) with stable-baselines3.

--fault none      healthy (the env uses an un-normalised action box -> SB3/gymnasium warnings,
                  rollout buffer not a multiple of batch size)
--fault obsshape  env.reset returns the observation without the demand-forecast entry
--fault nanobs    the fill-rate feature divides by the demand, which is 0 on quiet days
--fault tblog     tensorboard_log is set (tensorboard is not installed in this env)
--resume PATH     load a policy state_dict saved by an earlier run (--net-arch may differ)
--resume-full     the earlier run saved the whole policy object with torch.save(model.policy)
--save PATH       save the trained agent (zip)
"""
import argparse
import logging
import os
import sys
import time

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=4000)
p.add_argument("--net-arch", default="64,64")
p.add_argument("--resume", default=None)
p.add_argument("--resume-full", action="store_true")
p.add_argument("--save", default=None)
p.add_argument("--save-policy", default=None)
p.add_argument("--progress", action="store_true")
p.add_argument("--check-env", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("inventory-ppo")


class InventoryEnv(gym.Env):
    """Observation: [stock, backlog, forecast, fill_rate]; action: order quantity (continuous)."""

    def __init__(self, fault="none"):
        self.fault = fault
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Box(0.0, 20.0, shape=(1,), dtype=np.float32)
        self.rng = np.random.default_rng(0)

    def _obs(self, demand):
        if self.fault == "nanobs":
            fill = min(self.stock, demand) / demand
        else:
            fill = min(self.stock, demand) / max(demand, 1.0)
        obs = [self.stock / 10.0, self.backlog / 10.0, self.forecast / 10.0, fill]
        if self.fault == "obsshape":
            obs = [self.stock / 10.0, self.backlog / 10.0, fill]
        return np.array(obs, dtype=np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.stock, self.backlog, self.forecast = 0, 10.0, 0.0, 5.0
        return self._obs(5.0), {}

    def step(self, action):
        order = float(np.clip(action[0], 0.0, 20.0))
        demand = float(self.rng.poisson(self.forecast if self.t % 7 else 0.0))  # closed on day 0 of week
        self.stock += order
        sold = min(self.stock, demand + self.backlog)
        self.backlog = max(0.0, demand + self.backlog - self.stock)
        self.stock -= sold
        self.forecast = 0.8 * self.forecast + 0.2 * demand
        reward = sold * 1.0 - 0.1 * self.stock - 0.5 * self.backlog - 0.2 * order
        self.t += 1
        return self._obs(demand), reward, False, self.t >= 50, {}


from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

env = make_vec_env(lambda: InventoryEnv(args.fault), n_envs=2, seed=0)
if args.check_env:
    from stable_baselines3.common.env_checker import check_env
    check_env(InventoryEnv(args.fault))
arch = [int(x) for x in args.net_arch.split(",")]
model = PPO("MlpPolicy", env, n_steps=100, batch_size=64, n_epochs=4, learning_rate=3e-4, seed=0,
            policy_kwargs={"net_arch": arch}, verbose=1,
            tensorboard_log="runs/inventory" if args.fault == "tblog" else None)
if args.resume:
    log.info("resuming policy weights from %s", args.resume)
    if args.resume_full:
        model.policy = torch.load(args.resume)
    else:
        model.policy.load_state_dict(torch.load(args.resume))
log.info("training PPO for %d steps, net_arch=%s", args.steps, arch)
t0 = time.time()
model.learn(total_timesteps=args.steps, progress_bar=args.progress)
log.info("training done in %.1fs", time.time() - t0)
if args.save_policy:
    torch.save(model.policy.state_dict(), args.save_policy)
    torch.save(model.policy, args.save_policy + ".full")
    log.info("policy saved to %s", args.save_policy)
if args.save:
    model.save(args.save)
    log.info("agent saved to %s", args.save)
