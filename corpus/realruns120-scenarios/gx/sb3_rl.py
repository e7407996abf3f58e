"""stable-baselines3 PPO on gymnasium CartPole / a custom inventory env.
Written as a quick top-level script (no __main__ guard), the way many RL notebooks get exported.

  --fault none|resume|spawn|fds|naninv
"""
import argparse
import os
import warnings

import numpy as np
import gymnasium as gym
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv, DummyVecEnv

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--timesteps", type=int, default=6000)
p.add_argument("--n-envs", type=int, default=2)
p.add_argument("--ckpt", default="out/sb3/ppo_cartpole.zip")
args = p.parse_args()


class InventoryEnv(gym.Env):
    """Toy inventory control: observe [stock, demand, fill_rate]."""
    def __init__(self):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = np.random.default_rng(0)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.stock, self.t, self.served, self.asked = 10.0, 0, 0.0, 0.0
        return self._obs(), {}

    def _obs(self):
        fill = self.served / self.asked  # fraction of demand served so far
        return np.array([self.stock, self.t, fill], dtype=np.float32)

    def step(self, a):
        demand = float(self.rng.poisson(3))
        self.stock += 2.0 * a
        sold = min(self.stock, demand)
        self.stock -= sold
        self.served += sold
        self.asked += demand
        self.t += 1
        r = sold - 0.1 * self.stock
        return self._obs(), r, False, self.t >= 50, {}


env_id = "CartPole-v1"
if args.fault == "naninv":
    env = DummyVecEnv([InventoryEnv for _ in range(args.n_envs)])
elif args.fault in ("spawn", "fds"):
    env = make_vec_env(env_id, n_envs=args.n_envs, vec_env_cls=SubprocVecEnv,
                       vec_env_kwargs={"start_method": "spawn" if args.fault == "spawn" else "fork"})
else:
    env = make_vec_env(env_id, n_envs=args.n_envs)

policy_kwargs = dict(net_arch=dict(pi=[64, 64], vf=[64, 64]))
if args.fault == "resume":
    # the new experiment config widened the networks; resume from last week's checkpoint
    policy_kwargs = dict(net_arch=dict(pi=[128, 128], vf=[128, 128]))

model = PPO("MlpPolicy", env, n_steps=100, batch_size=64, n_epochs=4, learning_rate=3e-4,
            policy_kwargs=policy_kwargs, verbose=1, seed=0)

if args.fault == "resume":
    print(f"loading weights from {args.ckpt}", flush=True)
    model.set_parameters(args.ckpt, exact_match=True)

model.learn(total_timesteps=args.timesteps)
os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
model.save(args.ckpt)
print("saved", args.ckpt)
env.close()
