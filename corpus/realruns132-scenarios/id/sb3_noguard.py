"""Quick PPO experiment script written without a __main__ guard (SubprocVecEnv, spawn)."""
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sb3_jobs import ReachEnv
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

print("building 2 subprocess envs", flush=True)
env = make_vec_env(ReachEnv, n_envs=2, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": "spawn"})
model = PPO("MlpPolicy", env, n_steps=256, verbose=1, device="cpu")
model.learn(total_timesteps=2048)
print("training complete")
