"""PPO with SubprocVecEnv, written as a flat script (no __main__ guard).

SubprocVecEnv uses the 'forkserver' start method by default on Linux, so worker
bootstrap re-imports this module. --start-method fork makes it work.
"""
import argparse
import sys

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

p = argparse.ArgumentParser()
p.add_argument("--n-envs", type=int, default=2)
p.add_argument("--steps", type=int, default=4096)
p.add_argument("--start-method", default=None)
args, _ = p.parse_known_args()

print(f"creating {args.n_envs} subprocess envs (start_method={args.start_method})", flush=True)
env = make_vec_env("CartPole-v1", n_envs=args.n_envs, seed=0, vec_env_cls=SubprocVecEnv,
                   vec_env_kwargs=dict(start_method=args.start_method))
model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, verbose=1, seed=0)
model.learn(total_timesteps=args.steps)
model.save("runs/subproc/ppo_cartpole")
env.close()
print("done", flush=True)
