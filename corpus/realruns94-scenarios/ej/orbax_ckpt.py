"""Flax/Optax training with Orbax CheckpointManager save / resume.

--ckpt-dir DIR       checkpoint directory
--resume             restore latest step before training
--hidden H           model width (changing it between save and resume = architecture change)
--save-every K
Multi-process: pass --pid/--nproc/--port to run under jax.distributed (gloo CPU collectives).
"""
import argparse, logging, os, sys, time

p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", required=True)
p.add_argument("--resume", action="store_true")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--save-every", type=int, default=4)
p.add_argument("--pid", type=int, default=None)
p.add_argument("--nproc", type=int, default=1)
p.add_argument("--port", type=int, default=40585)
p.add_argument("--log", action="store_true")
p.add_argument("--opt", default="adam")
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

import numpy as np
import jax

if args.pid is not None:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}", num_processes=args.nproc,
                               process_id=args.pid, initialization_timeout=20, heartbeat_timeout_seconds=10)

import jax.numpy as jnp
import flax.linen as nn
import optax
import orbax.checkpoint as ocp

me = jax.process_index()


def say(m):
    print(f"[p{me}] {m}" if args.pid is not None else m, flush=True)


class Net(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Dense(self.hidden)(x))
        x = nn.LayerNorm()(x)
        return nn.Dense(10)(x)


model = Net(args.hidden)
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 32)))["params"]
tx = optax.adam(3e-3) if args.opt == "adam" else optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.05, momentum=0.9))
state = {"params": params, "opt_state": tx.init(params), "step": jnp.array(0)}


@jax.jit
def train_step(state, x, y):
    def lf(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": p}, x), y).mean()
    loss, g = jax.value_and_grad(lf)(state["params"])
    upd, os_ = tx.update(g, state["opt_state"], state["params"])
    return {"params": optax.apply_updates(state["params"], upd), "opt_state": os_, "step": state["step"] + 1}, loss


ckpt_dir = os.path.abspath(args.ckpt_dir)
mngr = ocp.CheckpointManager(ckpt_dir, options=ocp.CheckpointManagerOptions(max_to_keep=2, create=not args.resume))
say(f"checkpoint dir {ckpt_dir}")

start = 0
if args.resume:
    latest = mngr.latest_step()
    say(f"latest checkpoint step: {latest}")
    state = mngr.restore(latest, args=ocp.args.StandardRestore(state))
    start = int(state["step"])
    say(f"resumed from step {start}")

W = np.random.default_rng(5).normal(size=(32, 10))
t0 = time.time()
for step in range(start, start + args.steps):
    rng = np.random.default_rng(step)
    xb = rng.normal(size=(64, 32)).astype(np.float32)
    yb = np.argmax(xb @ W, -1).astype(np.int32)
    state, loss = train_step(state, xb, yb)
    if (step + 1) % args.save_every == 0:
        mngr.save(step + 1, args=ocp.args.StandardSave(state))
        say(f"step {step+1} loss {float(loss):.4f} -> checkpoint queued")
mngr.wait_until_finished()
say(f"saved steps: {mngr.all_steps()}  ({time.time()-t0:.1f}s)")
mngr.close()
