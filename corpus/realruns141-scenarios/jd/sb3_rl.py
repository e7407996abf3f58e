"""stable-baselines3 training on gymnasium environments."""
import os, sys, argparse, warnings, math
p = argparse.ArgumentParser()
p.add_argument("--algo", default="ppo", choices=["ppo", "dqn", "a2c", "sac"])
p.add_argument("--fault", default="none", choices=["none", "lr", "resume-env", "nan-obs", "subproc-crash"])
p.add_argument("--steps", type=int, default=4096)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--save", default="/work/rr141/jd/work/sb3")
a = p.parse_args()
import numpy as np, gymnasium as gym
from stable_baselines3 import PPO, DQN, A2C, SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv, VecCheckNan

class Sensor(gym.ObservationWrapper):
    """normalises the pole angle by the (buggy) measured range"""
    def __init__(self, env): super().__init__(env); self.t = 0
    def observation(self, obs):
        self.t += 1
        rng = 0.0 if self.t > 600 else 0.418   # calibration value read as 0 after a reset of the sensor table
        obs = obs.copy(); obs[2] = obs[2] / rng if rng else obs[2] / np.float32(rng)
        return obs

class Flaky(gym.Wrapper):
    def __init__(self, env): super().__init__(env); self.n = 0
    def step(self, action):
        self.n += 1
        if self.n == 700 and os.environ.get("SB3_FLAKY_WORKER") == str(getattr(self, "idx", -1)):
            os.kill(os.getpid(), 9)
        return self.env.step(action)

os.makedirs(a.save, exist_ok=True)
if a.fault == "resume-env":
    env = make_vec_env("MountainCarContinuous-v0", n_envs=1)
    model = PPO.load(os.path.join(a.save, "ppo_cartpole.zip"), env=env)
elif a.fault == "nan-obs":
    env = VecCheckNan(make_vec_env("CartPole-v1", n_envs=2, wrapper_class=Sensor), raise_exception=True)
    model = PPO("MlpPolicy", env, n_steps=256, verbose=1, seed=0)
elif a.fault == "subproc-crash":
    def mk(i):
        def f():
            e = Flaky(gym.make("CartPole-v1")); e.idx = i; return e
        return f
    env = SubprocVecEnv([mk(i) for i in range(2)], start_method="forkserver")
    model = A2C("MlpPolicy", env, verbose=1, seed=0)
else:
    if a.algo == "ppo":
        env = make_vec_env("CartPole-v1", n_envs=2)
        model = PPO("MlpPolicy", env, n_steps=256, batch_size=100, learning_rate=a.lr, verbose=1, seed=0)
    elif a.algo == "sac":
        env = gym.make("Pendulum-v1")
        model = SAC("MlpPolicy", env, learning_rate=a.lr, learning_starts=200, verbose=1, seed=0)
model.learn(total_timesteps=a.steps)
model.save(os.path.join(a.save, "ppo_cartpole.zip"))
print("saved", os.path.join(a.save, "ppo_cartpole.zip"))
