"""Flax + Optax training with Orbax CheckpointManager save / resume (CPU).

--ckpt-dir DIR   where checkpoints go; --resume restores the latest step first.
--hidden N       model width (changing it between runs = architecture change on resume)
--opt {adam,adamw_sched}  optimizer (changing it between runs = different opt_state tree on resume)
--log {print,logging}
"""
import argparse
import logging
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", required=True)
p.add_argument("--resume", action="store_true")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--opt", default="adam")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--log", default="print")
args = p.parse_args()

if args.log == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("trainer")


def out(m):
    if args.log == "logging":
        log.info(m)
    else:
        print(m, flush=True)


import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn
import orbax.checkpoint as ocp


class Net(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden, name="enc")(x))
        x = nn.LayerNorm(name="ln")(x)
        return nn.Dense(4, name="head")(x)


model = Net(args.hidden)
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 24)))["params"]
if args.opt == "adam":
    tx = optax.adam(1e-3)
else:
    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 1000)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.01))
opt_state = tx.init(params)
state = {"params": params, "opt_state": opt_state, "step": jnp.array(0, jnp.int32)}

ckpt_dir = os.path.abspath(args.ckpt_dir)
options = ocp.CheckpointManagerOptions(max_to_keep=3, save_interval_steps=args.save_every, create=True)
mngr = ocp.CheckpointManager(ckpt_dir, options=options)
out(f"checkpoint dir {ckpt_dir}, existing steps: {list(mngr.all_steps())}")

start = 0
if args.resume:
    latest = mngr.latest_step()
    out(f"resuming from step {latest}")
    abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, state)
    state = mngr.restore(latest, args=ocp.args.StandardRestore(abstract))
    start = int(state["step"]) + 1
    out(f"restored step {int(state['step'])}")

rng = np.random.default_rng(1)
W = rng.normal(size=(24, 4)).astype(np.float32)


@jax.jit
def train_step(state, x, y):
    def lf(p):
        logits = model.apply({"params": p}, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, g = jax.value_and_grad(lf)(state["params"])
    upd, new_opt = tx.update(g, state["opt_state"], state["params"])
    return {"params": optax.apply_updates(state["params"], upd), "opt_state": new_opt,
            "step": state["step"] + 1}, loss


for step in range(start, start + args.steps):
    x = rng.normal(size=(32, 24)).astype(np.float32)
    y = (x @ W).argmax(-1)
    state, loss = train_step(state, x, y)
    state["step"] = jnp.array(step, jnp.int32)
    if step % 10 == 0:
        out(f"step {step} loss {float(loss):.4f}")
    if mngr.should_save(step):
        mngr.save(step, args=ocp.args.StandardSave(state))
        out(f"saved checkpoint step {step}")
mngr.wait_until_finished()
mngr.close()
out("done")
