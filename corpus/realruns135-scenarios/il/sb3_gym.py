"""stable-baselines3 + gymnasium tiny training; --fault selects the failure."""
import argparse, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--algo", default="PPO")
p.add_argument("--env", default="CartPole-v1")
p.add_argument("--n-envs", type=int, default=2)
p.add_argument("--steps", type=int, default=4096)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--bug-at", type=int, default=300)
p.add_argument("--progress", action="store_true")
a = p.parse_args()
import numpy as np
import gymnasium as gym
from gymnasium import spaces

class SensorEnv(gym.Env):
    """Toy 'tracking' env: reach a target on a line; obs = [pos, vel, target, dist]."""
    metadata = {"render_modes": []}
    def __init__(self, bug_at=-1, obs_bug=False):
        self.observation_space = spaces.Box(-10, 10, (4,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.bug_at = bug_at; self.obs_bug = obs_bug; self.t_total = 0
        self.sensor_log = [0.0] * 256
    def _obs(self):
        o = np.array([self.pos, self.vel, self.target, self.target - self.pos], np.float32)
        if self.obs_bug and self.t_total > self.bug_at:
            o = np.append(o, np.float32(self.t))  # "time feature" added by a later commit
        return o
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.vel, self.t = 0.0, 0.0, 0
        self.target = float(self.np_random.uniform(-5, 5))
        return self._obs(), {}
    def step(self, action):
        self.vel = 0.9 * self.vel + (action - 1) * 0.2
        self.pos += self.vel; self.t += 1; self.t_total += 1
        if self.bug_at >= 0 and not self.obs_bug and self.t_total >= self.bug_at:
            _ = self.sensor_log[self.t_total]   # ring buffer index never wrapped
        r = -abs(self.target - self.pos)
        term = abs(self.target - self.pos) < 0.1
        return self._obs(), r, term, self.t >= 200, {}

def make_env(rank):
    def _f():
        if a.env == "Sensor":
            bug = a.bug_at if (a.fault in ("env_bug", "obs_shape") and rank == 1) else -1
            return SensorEnv(bug_at=bug, obs_bug=(a.fault == "obs_shape"))
        return gym.make(a.env)
    return _f

def main():
    import stable_baselines3 as sb3
    from stable_baselines3.common.vec_env import SubprocVecEnv, DummyVecEnv, VecNormalize
    print(f"sb3 {sb3.__version__} gymnasium {gym.__version__} env={a.env}", flush=True)
    vec_cls = SubprocVecEnv if a.fault in ("env_bug", "noguard", "obs_shape") else DummyVecEnv
    venv = vec_cls([make_env(i) for i in range(a.n_envs)])
    if a.fault == "none":
        venv = VecNormalize(venv, norm_reward=True)
    Algo = getattr(sb3, a.algo)
    model = Algo("MlpPolicy", venv, learning_rate=a.lr, verbose=1, seed=0, n_steps=(250 if a.fault == "none" else 256) if a.algo == "PPO" else 5, device="cpu")
    model.learn(total_timesteps=a.steps, progress_bar=a.progress)
    print("mean reward (last rollout):", np.mean([ep["r"] for ep in model.ep_info_buffer]) if model.ep_info_buffer else None, flush=True)
    venv.close()

if a.fault == "noguard":
    main()
elif __name__ == "__main__":
    main()
