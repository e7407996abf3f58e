"""Stable-Baselines3 PPO on gymnasium classic-control envs.

--fault none|diverge|nomain   (nomain: SubprocVecEnv started with spawn, module-level code)
"""
import argparse, sys, os

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--env", default="Pendulum-v1")
p.add_argument("--steps", type=int, default=4096)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--n-envs", type=int, default=2)
p.add_argument("--vec", default="dummy")   # dummy | subproc (fork)
args = p.parse_args()

import numpy as np
import torch
import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv, DummyVecEnv


class RawRewardWrapper(gym.RewardWrapper):
    """Reward in the plant's native units (cost in W, not normalised)."""
    def reward(self, r):
        return r * 1e4


def main():
    vec_cls = SubprocVecEnv if (args.fault == "nomain" or args.vec == "subproc") else DummyVecEnv
    vec_kw = {"start_method": "spawn"} if args.fault == "nomain" else \
        ({"start_method": "fork"} if args.vec == "subproc" else {})
    wrapper = RawRewardWrapper if args.fault == "diverge" else None
    env = make_vec_env(args.env, n_envs=args.n_envs, seed=0, vec_env_cls=vec_cls,
                       vec_env_kwargs=vec_kw, wrapper_class=wrapper)
    model = PPO("MlpPolicy", env, learning_rate=args.lr, n_steps=256, batch_size=64, n_epochs=4,
                max_grad_norm=1e9 if args.fault == "diverge" else 0.5,
                verbose=1, seed=0, device="cpu")
    model.learn(total_timesteps=args.steps)
    model.save("ppo_final")
    print("saved ppo_final.zip")


if args.fault == "nomain":
    # quick experiment script: no main guard
    main()
elif __name__ == "__main__":
    main()
