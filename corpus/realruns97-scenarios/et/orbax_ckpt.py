"""Flax NNX + Optax training with Orbax checkpointing (save every N steps, resume from latest).

--fault:
  none          healthy (train, checkpoint, resume)
  tree          resume after the model gained a layer (config hidden_layers 2 -> 3): restore with changed tree
  optim         resume after switching optimizer chain (adam -> clip+adamw): opt_state structure differs
  readonly      checkpoint dir is on a read-only location
  missing       --resume from a step/path that does not exist
  truncated     resume from a checkpoint whose array file was truncated (copy interrupted)
"""
import argparse
import logging
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--ckpt-dir", default="/work/rr97/et/tmp/ckpt")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--optim", default="adam")
p.add_argument("--resume", action="store_true")
p.add_argument("--resume-step", type=int, default=None)
p.add_argument("--log", action="store_true")
args = p.parse_args()

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import nnx

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s", force=True)
log = logging.getLogger("trainer")


def say(m):
    (log.info if args.log else lambda s: print(s, flush=True))(m)


class Net(nnx.Module):
    def __init__(self, din, dh, dout, layers, rngs):
        self.inp = nnx.Linear(din, dh, rngs=rngs)
        self.hidden = nnx.List([nnx.Linear(dh, dh, rngs=rngs) for _ in range(layers - 1)]) if hasattr(nnx, "List") else [nnx.Linear(dh, dh, rngs=rngs) for _ in range(layers - 1)]
        self.out = nnx.Linear(dh, dout, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.inp(x))
        for l in self.hidden:
            x = nnx.relu(l(x))
        return self.out(x)


model = Net(8, 32, 1, args.layers, nnx.Rngs(0))
if args.optim == "adam":
    tx = optax.adam(1e-3)
else:
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=0.01))
optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x, y):
    def lf(m):
        return jnp.mean((m(x) - y) ** 2)
    loss, grads = nnx.value_and_grad(lf)(model)
    optimizer.update(model, grads)
    return loss


mngr = ocp.CheckpointManager(os.path.abspath(args.ckpt_dir),
                             options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True))
start = 0
if args.resume:
    step = args.resume_step if args.resume_step is not None else mngr.latest_step()
    say(f"resuming from {args.ckpt_dir} step {step}")
    abstract = nnx.state((model, optimizer))
    abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, abstract)
    restored = mngr.restore(step, args=ocp.args.StandardRestore(abstract))
    nnx.update((model, optimizer), restored)
    start = step
    say(f"restored step {step}")

rng = np.random.default_rng(0)
w = rng.normal(size=(8, 1)).astype(np.float32)
t0 = time.time()
for step in range(start + 1, start + args.steps + 1):
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = x @ w
    loss = train_step(model, optimizer, jnp.asarray(x), jnp.asarray(y))
    if step % 5 == 0:
        say(f"step {step} loss {float(loss):.5f} ({time.time()-t0:.1f}s)")
    if step % args.save_every == 0:
        mngr.save(step, args=ocp.args.StandardSave(nnx.state((model, optimizer))))
        mngr.wait_until_finished()
        say(f"saved checkpoint step {step}")
mngr.close()
say("done")
