"""Stable-Baselines3 on classic-control envs. --algo selects the algorithm, --env the environment."""
import argparse

import gymnasium as gym
from stable_baselines3 import A2C, DQN, PPO, SAC
from stable_baselines3.common.evaluation import evaluate_policy

p = argparse.ArgumentParser()
p.add_argument("--algo", default="ppo")
p.add_argument("--env", default="CartPole-v1")
p.add_argument("--timesteps", type=int, default=4096)
args = p.parse_args()

ALGOS = {"ppo": PPO, "a2c": A2C, "dqn": DQN, "sac": SAC}


def main():
    env = gym.make(args.env)
    print(f"env {args.env}: obs {env.observation_space}, actions {env.action_space}")
    model = ALGOS[args.algo]("MlpPolicy", env, verbose=1, seed=0, device="cpu",
                             **({"n_steps": 256, "batch_size": 64} if args.algo == "ppo" else {}))
    model.learn(total_timesteps=args.timesteps)
    mean, std = evaluate_policy(model, env, n_eval_episodes=5)
    print(f"eval reward {mean:.1f} +/- {std:.1f}")


if __name__ == "__main__":
    main()
