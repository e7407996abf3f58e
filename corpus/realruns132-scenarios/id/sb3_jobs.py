"""stable-baselines3 on a small custom gymnasium env; --fault selects failure."""
import argparse, sys
import numpy as np
import gymnasium as gym
from gymnasium import spaces

class ReachEnv(gym.Env):
    """1-D point mass that must reach a target; continuous action."""
    def __init__(self, fault="none", obs_dim=4):
        self.fault = fault
        self.observation_space = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.t = 0
    def _obs(self):
        o = np.array([self.x, self.v, self.goal, self.goal - self.x], np.float32)
        if self.fault == "obsshape" and self.t >= 150:
            o = np.append(o, np.float32(self.t / 200.0))   # "time feature" appended late in the episode
        return o
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.v, self.goal, self.t = 0.0, 0.0, float(self.np_random.uniform(-1, 1)), 0
        return self._obs(), {}
    def step(self, action):
        self.t += 1
        self.v += 0.1 * float(action[0]); self.x += self.v
        r = -abs(self.goal - self.x)
        if self.fault == "reward":
            r = r * np.exp(self.t)    # "urgency" shaping term
        return self._obs(), r, False, self.t >= 200, {}

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--steps", type=int, default=4096)
    p.add_argument("--n-envs", type=int, default=2)
    a = p.parse_args()
    import torch
    from stable_baselines3 import PPO, A2C
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv, DummyVecEnv
    vec_cls = SubprocVecEnv if a.n_envs > 1 else DummyVecEnv
    env = make_vec_env(ReachEnv, n_envs=a.n_envs, env_kwargs={"fault": a.fault}, vec_env_cls=vec_cls)
    model = PPO("MlpPolicy", env, n_steps=512, batch_size=64, verbose=1, device="cpu", seed=0)
    model.learn(total_timesteps=a.steps)
    print("training complete")

if __name__ == "__main__":
    main()
