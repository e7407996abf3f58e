"""Stable-Baselines3 training scenarios; --fault selects the induced failure."""
import argparse, os, sys, time, logging
import numpy as np
import gymnasium as gym
from gymnasium import spaces

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--algo", default="PPO")
p.add_argument("--vec", default="dummy")
p.add_argument("--n-envs", type=int, default=2)
p.add_argument("--steps", type=int, default=2048)
p.add_argument("--fail-step", type=int, default=300)
p.add_argument("--ckpt", default="/work/rr99/fa/ckpt")
p.add_argument("--progress", action="store_true")
p.add_argument("--log", action="store_true")
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("rl-train")

import torch
torch.set_num_threads(1)
from stable_baselines3 import PPO, A2C, DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecCheckNan
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback


class Corridor(gym.Env):
    """1-D corridor: walk right to reach the goal."""
    def __init__(self, length=10, obs_dim=4, emit_dim=None, fault="none", fail_step=300):
        super().__init__()
        self.length = length
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(obs_dim,), dtype=np.float32)
        self.action_space = spaces.Discrete(2) if fault != "box-action" else spaces.Box(-1, 1, shape=(1,), dtype=np.float32)
        self.emit_dim = emit_dim or obs_dim
        self.fault = fault
        self.fail_step = fail_step
        self.total = 0

    def _obs(self):
        o = np.zeros(self.emit_dim, dtype=np.float32)
        o[0] = self.pos / self.length
        o[1] = self.t / 50.0
        if self.fault == "nan-obs" and self.total >= self.fail_step:
            # sensor normalisation divides by a running std that is 0 for a stuck sensor
            std = np.float32(0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                o[2] = (o[0] - o[0]) / std
        return o

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.total += 1
        self.t += 1
        if self.fault == "segv" and self.total >= self.fail_step and os.environ.get("ENV_WORKER_TO_CRASH", "1") == str(getattr(self, "idx", 1)):
            import ctypes
            ctypes.string_at(0)  # native physics lib dereferences a null pointer
        if self.fault == "kill-worker" and self.total >= self.fail_step and getattr(self, "idx", 0) == 1:
            import signal
            os.kill(os.getpid(), signal.SIGKILL)
        move = [-1, 1][action]
        self.pos = max(0, self.pos + move)
        done = self.pos >= self.length
        reward = 1.0 if done else -0.01
        if self.fault == "nan-reward" and self.total >= self.fail_step:
            reward = float(np.log(np.float64(-1.0) * 0 - 1e-300 * 0) if False else np.float64(0.0) / np.float64(0.0))
        info = {}
        if self.fault == "old-api":
            return self._obs(), reward, done, info
        return self._obs(), reward, done, self.t >= 50, info


def make_env(idx, **kw):
    def _f():
        e = Corridor(**kw)
        e.idx = idx
        return e
    return _f


def build_venv(kw, n=None):
    n = n or args.n_envs
    fns = [make_env(i, **kw) for i in range(n)]
    if args.vec == "subproc":
        return SubprocVecEnv(fns, start_method="fork")
    if args.vec == "subproc-spawn":
        return SubprocVecEnv(fns, start_method="spawn")
    return DummyVecEnv(fns)


class MetricsCallback(BaseCallback):
    def __init__(self, buggy=False):
        super().__init__()
        self.buggy = buggy
        self.ep_ret = 0.0

    def _on_step(self):
        if self.buggy:
            r = self.locals["reward"]  # SB3 passes 'rewards'
        else:
            r = self.locals["rewards"]
        self.ep_ret += float(np.mean(r))
        if self.n_calls % 256 == 0:
            msg = f"step={self.num_timesteps} mean_step_reward={self.ep_ret/256:.4f}"
            (log.info(msg) if args.log else print(msg, flush=True))
            self.ep_ret = 0.0
        return True


f = args.fault
Algo = {"PPO": PPO, "A2C": A2C, "DQN": DQN}[args.algo]
algo_kw = dict(verbose=1, seed=0, device="cpu")
if args.algo == "PPO":
    algo_kw.update(n_steps=128, batch_size=64, n_epochs=2)
if args.algo == "DQN":
    algo_kw.update(learning_starts=100, buffer_size=5000)

env_kw = dict(fault=f, fail_step=args.fail_step)

if f == "ckpt-space-change":
    # resume an agent trained on the 4-feature corridor in the new 6-feature version of the env
    os.makedirs(args.ckpt, exist_ok=True)
    venv = build_venv(dict(obs_dim=4))
    m = Algo("MlpPolicy", venv, **algo_kw)
    m.learn(args.steps, callback=MetricsCallback())
    m.save(f"{args.ckpt}/ppo_corridor")
    print("saved", f"{args.ckpt}/ppo_corridor.zip", flush=True)
    venv2 = build_venv(dict(obs_dim=6))
    m2 = Algo.load(f"{args.ckpt}/ppo_corridor", env=venv2, device="cpu")
    m2.learn(args.steps, reset_num_timesteps=False)
    sys.exit(0)

if f == "policy-arch-change":
    os.makedirs(args.ckpt, exist_ok=True)
    venv = build_venv(dict(obs_dim=4))
    m = Algo("MlpPolicy", venv, policy_kwargs=dict(net_arch=[64, 64]), **algo_kw)
    m.learn(args.steps, callback=MetricsCallback())
    torch.save(m.policy.state_dict(), f"{args.ckpt}/policy.pt")
    print("saved policy weights", flush=True)
    m2 = Algo("MlpPolicy", venv, policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[128, 128])), **algo_kw)
    m2.policy.load_state_dict(torch.load(f"{args.ckpt}/policy.pt"))
    m2.learn(args.steps)
    sys.exit(0)

if f in ("ckpt-missing", "ckpt-truncated"):
    venv = build_venv(dict(obs_dim=4))
    if f == "ckpt-truncated":
        os.makedirs(args.ckpt, exist_ok=True)
        m = Algo("MlpPolicy", venv, **algo_kw)
        m.learn(args.steps, callback=CheckpointCallback(save_freq=256, save_path=args.ckpt, name_prefix="rl_model"))
        # simulate the copy to the shared store being cut off
        import subprocess
        src = f"{args.ckpt}/rl_model_{args.steps}_steps.zip"
        os.system(f"head -c 9000 {src} > {args.ckpt}/resume.zip")
        path = f"{args.ckpt}/resume.zip"
    else:
        path = f"{args.ckpt}/run_2024_06/rl_model_100000_steps.zip"
    print(f"resuming from {path}", flush=True)
    m = Algo.load(path, env=venv, device="cpu")
    m.learn(args.steps, reset_num_timesteps=False)
    sys.exit(0)

if f == "policy-pickle":
    os.makedirs(args.ckpt, exist_ok=True)
    venv = build_venv(dict(obs_dim=4))
    m = Algo("MlpPolicy", venv, **algo_kw)
    m.learn(args.steps, callback=MetricsCallback())
    torch.save(m.policy, f"{args.ckpt}/policy_full.pt")
    print("exported policy to", f"{args.ckpt}/policy_full.pt", flush=True)
    policy = torch.load(f"{args.ckpt}/policy_full.pt", map_location="cpu")
    obs = venv.reset()
    print(policy.predict(obs, deterministic=True))
    sys.exit(0)

if f == "logstd-explode":
    # continuous control; lr left at the value tuned for a normalised-reward setup
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    m = Algo("MlpPolicy", venv, learning_rate=float(os.environ.get("LR", "3e-4")),
             policy_kwargs=dict(log_std_init=2.0), **algo_kw)
    m.learn(args.steps, callback=MetricsCallback())
    sys.exit(0)

if f == "eval-mismatch":
    venv = build_venv(dict(obs_dim=4))
    eval_env = DummyVecEnv([make_env(0, obs_dim=5)])
    m = Algo("MlpPolicy", venv, **algo_kw)
    m.learn(args.steps, callback=[MetricsCallback(), EvalCallback(eval_env, eval_freq=200, n_eval_episodes=2)])
    sys.exit(0)

if f == "obs-shape":
    env_kw.update(obs_dim=4, emit_dim=5)
if f == "box-action":
    pass
if f == "big-buffer":
    algo_kw.update(buffer_size=400_000_000)

venv = build_venv(env_kw)
if f in ("nan-obs", "nan-reward") and os.environ.get("CHECK_NAN", "0") == "1":
    venv = VecCheckNan(venv, raise_exception=True)

pk = {}
if f == "logstd-explode":
    pass
m = Algo("MlpPolicy", venv, **algo_kw)
cbs = [MetricsCallback(buggy=(f == "callback-key"))]
if f == "none-ckpt":
    cbs.append(CheckpointCallback(save_freq=500, save_path=args.ckpt, name_prefix="healthy"))
m.learn(args.steps, callback=cbs, progress_bar=args.progress)
m.save(f"{args.ckpt}/final_{args.algo.lower()}")
print("training finished", flush=True)
