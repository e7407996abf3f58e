"""stable-baselines3 / gymnasium training jobs."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--timesteps", type=int, default=4096)
args = p.parse_args()
import numpy as np
import gymnasium as gym
from gymnasium import spaces
import torch
from stable_baselines3 import PPO, A2C, SAC
from stable_baselines3.common.env_util import make_vec_env

class LegacyInventoryEnv(gym.Env):
    """Inventory control env written against the old gym (0.21) API."""
    def __init__(self):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.t = 0
    def reset(self):
        self.t = 0
        return np.zeros(4, dtype=np.float32)
    def step(self, action):
        self.t += 1
        obs = np.random.randn(4).astype(np.float32)
        return obs, float(action == 1), self.t >= 50, {}

class PriceEnv(gym.Env):
    """Continuous pricing env; reward in raw currency units (can be ~1e6)."""
    def __init__(self):
        self.observation_space = spaces.Box(-10, 10, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Box(-1, 1, shape=(1,), dtype=np.float32)
        self.t = 0
    def reset(self, seed=None, options=None):
        super().reset(seed=seed); self.t = 0
        return self.np_random.normal(size=3).astype(np.float32), {}
    def step(self, action):
        self.t += 1
        price = float(np.exp(8 * action[0]))
        reward = price * float(os.environ.get("REWARD_SCALE", "1e4")) * (1 + self.np_random.normal())
        return self.np_random.normal(size=3).astype(np.float32), reward, False, self.t >= 64, {}

if args.job == "healthy":
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = PPO("MlpPolicy", env, n_steps=50, batch_size=64, n_epochs=4, verbose=1, seed=0, device="cpu")
    model.learn(total_timesteps=args.timesteps)
    model.save("/work/rr125/hk/work/ppo_cartpole")
    print("saved /work/rr125/hk/work/ppo_cartpole.zip", flush=True)
elif args.job == "legacy-env":
    env = LegacyInventoryEnv()
    model = A2C("MlpPolicy", env, verbose=1, device="cpu")
    model.learn(total_timesteps=args.timesteps)
elif args.job == "nan":
    env = PriceEnv()
    model = A2C("MlpPolicy", env, learning_rate=float(os.environ.get("LR", "0.05")), verbose=1, device="cpu", seed=0, normalize_advantage=False)
    model.learn(total_timesteps=args.timesteps)
else:
    sys.exit("unknown job")
