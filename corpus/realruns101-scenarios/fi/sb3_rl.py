"""Stable-Baselines3 training runs (single process) with selectable faults.

--fault none | obs-shape | nan-obs | diverge | eval-shape | dqn-box | resume-corrupt | resume-missing | dqn-buffer | interrupt | ckpt-diskfull
"""
import argparse
import os
import sys

import numpy as np
import gymnasium as gym
from gymnasium import spaces
import torch

from stable_baselines3 import PPO, DQN, SAC, A2C
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from stable_baselines3.common.callbacks import EvalCallback, CheckpointCallback
from stable_baselines3.common.monitor import Monitor


class PointMassEnv(gym.Env):
    """Toy 2D point mass: drive the point to the origin."""

    metadata = {"render_modes": []}

    def __init__(self, obs_dim=4, extra_sensor=False, nan_after=None, discrete=True, max_steps=200):
        super().__init__()
        self.obs_dim = obs_dim
        self.extra_sensor = extra_sensor
        self.nan_after = nan_after
        self.max_steps = max_steps
        self.observation_space = spaces.Box(-10.0, 10.0, shape=(obs_dim,), dtype=np.float32)
        if discrete:
            self.action_space = spaces.Discrete(5)
        else:
            self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.discrete = discrete
        self.total_steps = 0

    def _obs(self):
        o = np.concatenate([self.pos, self.vel]).astype(np.float32)
        if self.extra_sensor:
            # distance-to-goal sensor added in v2 of the env; observation_space was not updated
            o = np.concatenate([o, [np.linalg.norm(self.pos)]]).astype(np.float32)
        if self.nan_after is not None and self.total_steps >= self.nan_after:
            # velocity normalised by elapsed time since last contact; dt becomes 0 after a reset w/o contact
            o = o / np.float32(self.t_since_contact)
        return o

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-5, 5, size=2)
        self.vel = np.zeros(2)
        self.steps = 0
        self.t_since_contact = 0.0
        return self._obs(), {}

    def step(self, action):
        if self.discrete:
            a = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]][int(action)], dtype=np.float64)
        else:
            a = np.asarray(action, dtype=np.float64)
        self.vel = 0.9 * self.vel + 0.1 * a
        self.pos = np.clip(self.pos + self.vel, -9.9, 9.9)
        self.steps += 1
        self.total_steps += 1
        dist = np.linalg.norm(self.pos)
        reward = -dist
        terminated = bool(dist < 0.3)
        truncated = self.steps >= self.max_steps
        with np.errstate(all="ignore"):
            obs = self._obs()
        return obs, float(reward), terminated, truncated, {}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--steps", type=int, default=4096)
    p.add_argument("--out", default="runs/sb3")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    f = args.fault

    if f == "evalcb-unwrapped":
        # eval env passed as a plain Monitor env while training env is VecNormalize-wrapped
        env = make_vec_env("CartPole-v1", n_envs=3, seed=0)
        env = VecNormalize(env, norm_obs=True, norm_reward=True)
        model = PPO("MlpPolicy", env, n_steps=100, batch_size=64, n_epochs=3, verbose=1, seed=0,
                    policy_kwargs=dict(net_arch=[32, 32]))
        cb = EvalCallback(Monitor(gym.make("CartPole-v1")), eval_freq=600, n_eval_episodes=3, verbose=1)
        model.learn(total_timesteps=args.steps, callback=cb)
    elif f == "none":
        # batch_size not a divisor of n_steps*n_envs -> SB3 warns; Pendulum w/ PPO default noise
        env = make_vec_env("CartPole-v1", n_envs=3, seed=0)
        env = VecNormalize(env, norm_obs=True, norm_reward=True)
        model = PPO("MlpPolicy", env, n_steps=100, batch_size=64, n_epochs=3, verbose=1, seed=0,
                    policy_kwargs=dict(net_arch=[32, 32]))
        eval_env = VecNormalize(make_vec_env("CartPole-v1", n_envs=1, seed=1), training=False, norm_reward=False)
        cb = EvalCallback(eval_env, eval_freq=600, n_eval_episodes=3, verbose=1)
        model.learn(total_timesteps=args.steps, callback=cb)
        model.save(os.path.join(args.out, "ppo_cartpole"))
        print("training finished, saved to", os.path.join(args.out, "ppo_cartpole.zip"))
    elif f == "obs-shape":
        env = make_vec_env(lambda: PointMassEnv(obs_dim=4, extra_sensor=True), n_envs=2, seed=0)
        model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, verbose=1, seed=0)
        model.learn(total_timesteps=args.steps)
    elif f == "nan-obs":
        env = make_vec_env(lambda: PointMassEnv(obs_dim=4, nan_after=700, discrete=False), n_envs=2, seed=0)
        model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, verbose=1, seed=0)
        model.learn(total_timesteps=args.steps)
    elif f == "diverge":
        env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
        model = A2C("MlpPolicy", env, learning_rate=5.0, n_steps=16, verbose=1, seed=0,
                    use_rms_prop=False, max_grad_norm=1e9)
        model.learn(total_timesteps=args.steps)
    elif f == "eval-shape":
        env = make_vec_env(lambda: PointMassEnv(obs_dim=4), n_envs=2, seed=0)
        # eval env constructed from a different config (obs_dim=6 from the "full sensor" preset)
        eval_env = Monitor(PointMassEnv(obs_dim=6))
        cb = EvalCallback(eval_env, eval_freq=500, n_eval_episodes=2, best_model_save_path=os.path.join(args.out, "best"), verbose=1)
        model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, verbose=1, seed=0)
        model.learn(total_timesteps=args.steps, callback=cb)
    elif f == "dqn-box":
        env = make_vec_env(lambda: PointMassEnv(obs_dim=4, discrete=False), n_envs=1, seed=0)
        model = DQN("MlpPolicy", env, learning_starts=100, verbose=1, seed=0)
        model.learn(total_timesteps=args.steps)
    elif f in ("resume-corrupt", "resume-missing"):
        env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
        path = os.path.join(args.out, "ppo_cartpole_step4096.zip")
        print(f"Resuming from {path}")
        model = PPO.load(path, env=env, print_system_info=False)
        model.learn(total_timesteps=args.steps, reset_num_timesteps=False)
    elif f == "dqn-buffer":
        env = make_vec_env("CartPole-v1", n_envs=1, seed=0)
        # Atari-style replay buffer size copied into a CartPole config, with a pixel-sized wrapper
        from gymnasium.wrappers import AddRenderObservation  # noqa: F401
        model = DQN("MlpPolicy", env, buffer_size=400_000_000, learning_starts=1000, verbose=1, seed=0,
                    optimize_memory_usage=False)
        model.learn(total_timesteps=args.steps)
    elif f == "interrupt":
        env = make_vec_env("CartPole-v1", n_envs=4, seed=0)
        model = PPO("MlpPolicy", env, n_steps=256, batch_size=128, verbose=1, seed=0)
        model.learn(total_timesteps=10_000_000, progress_bar=False)
    elif f == "ckpt-diskfull":
        env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
        cb = CheckpointCallback(save_freq=512, save_path=args.out, name_prefix="ppo_big", save_replay_buffer=True, verbose=2)
        model = PPO("MlpPolicy", env, n_steps=256, batch_size=128, verbose=1, seed=0,
                    policy_kwargs=dict(net_arch=[512, 512]))
        model.learn(total_timesteps=args.steps, callback=cb)
    elif f == "lunar":
        env = make_vec_env("LunarLander-v3", n_envs=4, seed=0)
        model = PPO("MlpPolicy", env, n_steps=512, batch_size=128, verbose=1, seed=0)
        model.learn(total_timesteps=args.steps)
    else:
        raise SystemExit(f"unknown fault {f}")


if __name__ == "__main__":
    main()
