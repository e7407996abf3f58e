"""CleanRL-style single-file PPO (CartPole) with gradient all-reduce across ranks (gloo).
Launch with torchrun, or --spawn N for torch.multiprocessing.spawn."""
import argparse, os, sys, time, signal, warnings
from datetime import timedelta
import numpy as np
import gymnasium as gym
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributions.categorical import Categorical

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-update", type=int, default=3)
p.add_argument("--updates", type=int, default=8)
p.add_argument("--num-envs", type=int, default=2)
p.add_argument("--num-steps", type=int, default=64)
p.add_argument("--ddp", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=42230)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()


class LegacyRewardWrapper(gym.Wrapper):
    """shaping wrapper ported from the old gym code base"""
    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        if self.legacy:
            return obs, r * 0.1, term or trunc, info
        return obs, r * 0.1, term, trunc, info


def make_env(rank, i):
    def thunk():
        env = gym.make("CartPole-v1")
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = LegacyRewardWrapper(env)
        env.legacy = False
        return env
    return thunk


class Agent(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.actor = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(rank=None, world=None):
    if rank is not None:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1 + rank)
    envs = gym.vector.SyncVectorEnv([make_env(rank, i) for i in range(args.num_envs)])
    hidden = 64
    if args.fault == "model-mismatch" and rank == args.fail_rank:
        hidden = int(os.environ.get("PPO_HIDDEN", "64"))
    agent = Agent(hidden)
    model = nn.parallel.DistributedDataParallel(agent) if args.ddp else agent
    opt = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    ns, ne = args.num_steps, args.num_envs
    obs_buf = torch.zeros((ns, ne, 4)); act_buf = torch.zeros((ns, ne)); logp_buf = torch.zeros((ns, ne))
    rew_buf = torch.zeros((ns, ne)); done_buf = torch.zeros((ns, ne)); val_buf = torch.zeros((ns, ne))
    next_obs, _ = envs.reset(seed=rank * 100)
    next_obs = torch.Tensor(next_obs); next_done = torch.zeros(ne)
    gstep = 0
    t0 = time.time()
    for update in range(1, args.updates + 1):
        if args.fault == "legacy-step" and rank == args.fail_rank and update == args.fail_update:
            for e in envs.envs:
                e.legacy = True  # switched to the "legacy" reward config from the experiment yaml
        for step in range(ns):
            gstep += ne * world
            obs_buf[step] = next_obs; done_buf[step] = next_done
            with torch.no_grad():
                action, logp, _, value = agent.get_action_and_value(next_obs)
            val_buf[step] = value.flatten(); act_buf[step] = action; logp_buf[step] = logp
            if args.fault == "sigkill" and rank == args.fail_rank and update == args.fail_update and step == 10:
                os.kill(os.getpid(), signal.SIGKILL)
            if args.fault == "env-hang" and rank == args.fail_rank and update == args.fail_update and step == 10:
                import threading
                threading.Event().wait()  # env server call that never returns
            next_obs, reward, term, trunc, infos = envs.step(action.numpy())
            rew_buf[step] = torch.tensor(reward).view(-1)
            next_obs = torch.Tensor(next_obs); next_done = torch.Tensor(np.logical_or(term, trunc))
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            adv = torch.zeros_like(rew_buf); last = 0
            for t in reversed(range(ns)):
                nnt = 1.0 - (next_done if t == ns - 1 else done_buf[t + 1])
                nv = next_value if t == ns - 1 else val_buf[t + 1]
                delta = rew_buf[t] + 0.99 * nv * nnt - val_buf[t]
                adv[t] = last = delta + 0.99 * 0.95 * nnt * last
            ret = adv + val_buf
        b_obs = obs_buf.reshape(-1, 4); b_act = act_buf.reshape(-1); b_logp = logp_buf.reshape(-1)
        b_adv = adv.reshape(-1); b_ret = ret.reshape(-1)
        idx = np.arange(ns * ne)
        for epoch in range(2):
            np.random.shuffle(idx)
            for s in range(0, ns * ne, 32):
                mb = idx[s:s + 32]
                if args.ddp:
                    logits = model.module.actor(b_obs[mb]) if False else None
                _, newlogp, ent, newv = (model.module if args.ddp else model).get_action_and_value(b_obs[mb], b_act.long()[mb])
                ratio = (newlogp - b_logp[mb]).exp()
                mba = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg = torch.max(-mba * ratio, -mba * torch.clamp(ratio, 0.8, 1.2)).mean()
                vloss = 0.5 * ((newv.view(-1) - b_ret[mb]) ** 2).mean()
                loss = pg - 0.01 * ent.mean() + 0.5 * vloss
                opt.zero_grad(); loss.backward()
                if not args.ddp:
                    for prm in agent.parameters():
                        dist.all_reduce(prm.grad, op=dist.ReduceOp.SUM); prm.grad /= world
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                opt.step()
        sps = int(gstep / (time.time() - t0))
        print(f"rank={rank} update={update}/{args.updates} global_step={gstep} loss={loss.item():.4f} "
              f"pg_loss={pg.item():.4f} v_loss={vloss.item():.4f} SPS={sps}", flush=True)
    envs.close()
    dist.barrier()
    if rank == 0:
        print("training done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
