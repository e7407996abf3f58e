"""Healthy SB3 runs that emit alarming-looking warnings; --variant selects which."""
import argparse, logging, os, sys
import numpy as np
import gymnasium as gym
from gymnasium import spaces
from gymnasium.envs.registration import register

p = argparse.ArgumentParser()
p.add_argument("--variant", default="ppo-deprecated")
p.add_argument("--steps", type=int, default=3000)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")
log = logging.getLogger("train")
import torch
torch.set_num_threads(1)
from stable_baselines3 import PPO, A2C, DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv, DummyVecEnv
from stable_baselines3.common.callbacks import EvalCallback


class Corridor(gym.Env):
    def __init__(self, length=8):
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return np.array([0.0, 0.0], dtype=np.float32), {}

    def step(self, a):
        self.t += 1
        self.pos = max(0, self.pos + (1 if a == 1 else -1))
        done = self.pos >= self.length
        # t/20 can exceed the declared [0,1] bound on long episodes
        obs = np.array([self.pos / self.length, self.t / 20.0], dtype=np.float32)
        return obs, (1.0 if done else -0.01), done, self.t >= 60, {}


def main():
    register(id="Corridor-v0", entry_point=Corridor, max_episode_steps=60)
    # plugin module registers it again on import
    register(id="Corridor-v0", entry_point=Corridor, max_episode_steps=60)
    v = args.variant
    if v == "ppo-deprecated":
        env = make_vec_env("CartPole-v0", n_envs=2, seed=0)
        m = PPO("MlpPolicy", env, n_steps=64, batch_size=100, n_epochs=2, verbose=1, device="cpu")
        m.learn(args.steps, progress_bar=True)
    elif v == "a2c-subproc-eval":
        env = make_vec_env("Corridor-v0", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv, vec_env_kwargs=dict(start_method="fork"))
        eval_env = DummyVecEnv([lambda: gym.make("Corridor-v0")])
        m = A2C("MlpPolicy", env, verbose=0, device="cpu")
        m.learn(args.steps, callback=EvalCallback(eval_env, eval_freq=400, n_eval_episodes=3, verbose=1))
        env.close()
    elif v == "dqn-obs-bounds":
        env = gym.make("Corridor-v0")
        m = DQN("MlpPolicy", env, learning_starts=200, buffer_size=5000, verbose=1, device="cpu", stats_window_size=10)
        m.learn(args.steps, log_interval=10)
    mean = float(np.mean([ep["r"] for ep in m.ep_info_buffer])) if m.ep_info_buffer else float("nan")
    log.info("finished %s: %d timesteps, mean episode reward %.3f", v, m.num_timesteps, mean)


if __name__ == "__main__":
    main()
