"""Stable-Baselines3 PPO on a small custom gymnasium env (single process).

The env's observation is a clipped position/velocity pair, but the declared Box bounds are a little
tighter than what the dynamics produce and the dtype is float64, so the env checker warns loudly.
"""
import argparse

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.evaluation import evaluate_policy

p = argparse.ArgumentParser()
p.add_argument("--timesteps", type=int, default=4096)
p.add_argument("--checker", default="sb3", choices=["sb3", "gym"], help="sb3: strict check_env; gym: gym.make passive checker")
a = p.parse_args()


class Reach(gym.Env):
    def __init__(self):
        self.observation_space = spaces.Box(low=-1.0, high=1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.pos = 0.0
        self.vel = 0.0
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = float(self.np_random.uniform(-0.5, 0.5))
        self.vel = 0.0
        self.t = 0
        return np.array([self.pos, self.vel]), {}

    def step(self, action):
        self.vel = 0.9 * self.vel + 0.05 * (action - 1)
        self.pos = self.pos + self.vel
        self.t += 1
        reward = -abs(self.pos - 0.8)
        terminated = abs(self.pos - 0.8) < 0.05
        truncated = self.t >= 100
        return np.array([self.pos, self.vel]), reward, terminated, truncated, {}


if a.checker == "sb3":
    env = Reach()
    check_env(env, warn=True)
else:
    gym.register(id="Reach-v0", entry_point=Reach, max_episode_steps=100)
    env = gym.make("Reach-v0")
model = PPO("MlpPolicy", env, n_steps=512, batch_size=64, verbose=1, seed=0, device="cpu")
model.learn(total_timesteps=a.timesteps)
mean, std = evaluate_policy(model, env, n_eval_episodes=5)
print(f"eval reward {mean:.2f} +/- {std:.2f}")
