"""Flax/Optax trainer that checkpoints with orbax (CheckpointManager) and can resume.

--ckpt-dir where checkpoints go / come from
--resume    restore the latest step before training
--hidden    model width (a resumed run with another width does not match the checkpoint)
--layers    number of hidden layers
--save-every N
"""
import argparse
import logging
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", required=True)
p.add_argument("--resume", action="store_true")
p.add_argument("--resume-from", default="", help="explicit checkpoint item dir, e.g. run/40/default")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--emb", type=int, default=0, help="add an embedding table of this many rows")
p.add_argument("--logging", action="store_true")
args = p.parse_args()

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import linen as nn

if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    logging.getLogger("absl").setLevel(logging.INFO)
log = logging.getLogger("train")


def out(m):
    if args.logging:
        log.info(m)
    else:
        print(m, flush=True)


class Net(nn.Module):
    hidden: int
    layers: int
    emb: int

    @nn.compact
    def __call__(self, x):
        if self.emb:
            tbl = self.param("table", nn.initializers.normal(0.02), (self.emb, 256))
            x = x + tbl[:1, : x.shape[-1]]
        for _ in range(self.layers):
            x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(x)


FEAT = 16
rng = np.random.default_rng(0)
w = rng.normal(size=(FEAT, 1)).astype(np.float32)
model = Net(args.hidden, args.layers, args.emb)
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, FEAT)))
tx = optax.adamw(3e-3)
opt_state = tx.init(params)
state = {"params": params, "opt_state": opt_state, "step": jnp.array(0)}

ckpt_dir = os.path.abspath(args.ckpt_dir)
mngr = ocp.CheckpointManager(ckpt_dir, options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True))
start = 0
if args.resume_from:
    out(f"restoring state from {args.resume_from}")
    state = ocp.StandardCheckpointer().restore(os.path.abspath(args.resume_from), state)
    start = int(state["step"])
    out(f"restored step {start}")
elif args.resume:
    latest = mngr.latest_step()
    out(f"resuming from {ckpt_dir}, latest step {latest}")
    state = mngr.restore(latest, args=ocp.args.StandardRestore(state))
    start = int(state["step"])
    out(f"restored step {start}")


@jax.jit
def step_fn(state, x, y):
    def lf(p):
        return jnp.mean((model.apply(p, x) - y) ** 2)
    loss, g = jax.value_and_grad(lf)(state["params"])
    upd, os_ = tx.update(g, state["opt_state"], state["params"])
    return {"params": optax.apply_updates(state["params"], upd), "opt_state": os_,
            "step": state["step"] + 1}, loss


t0 = time.time()
for s in range(start + 1, start + args.steps + 1):
    x = rng.normal(size=(128, FEAT)).astype(np.float32)
    y = x @ w
    state, loss = step_fn(state, x, y)
    if s % 5 == 0:
        out(f"step {s} loss {float(loss):.5f} ({time.time()-t0:.1f}s)")
    if s % args.save_every == 0:
        mngr.save(s, args=ocp.args.StandardSave(state))
        mngr.wait_until_finished()
        out(f"saved checkpoint step {s} -> {ckpt_dir}")
mngr.close()
out("done")
