"""Flax NNX-free linen classifier checkpointed with Orbax (one checkpoint dir per rank, as a
per-host local-SSD setup does). Launched by torchrun or plain python.
--arch v1|v2 (v2 adds a LayerNorm), --resume restores the latest step."""
import argparse, os, logging
p = argparse.ArgumentParser()
p.add_argument("--ckpt-root", required=True)
p.add_argument("--arch", default="v1")
p.add_argument("--resume", action="store_true")
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0))
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s rank{rank} %(name)s | %(message)s")
log = logging.getLogger("trainer")

import numpy as np, jax, jax.numpy as jnp, flax.linen as nn, optax
import orbax.checkpoint as ocp

class Net(nn.Module):
    arch: str
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(64)(x)
        if self.arch == "v2":
            x = nn.LayerNorm()(x)
        x = nn.gelu(x)
        return nn.Dense(10)(x)

model = Net(args.arch)
params = model.init(jax.random.PRNGKey(rank), jnp.ones((1, 32)))
tx = optax.sgd(0.05, momentum=0.9)
state = {"params": params, "opt_state": tx.init(params), "step": 0}

ckdir = os.path.abspath(os.path.join(args.ckpt_root, f"host{rank}"))
mngr = ocp.CheckpointManager(ckdir, options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True))
if args.resume:
    latest = mngr.latest_step()
    log.info("restoring step %s from %s", latest, ckdir)
    state = mngr.restore(latest, args=ocp.args.StandardRestore(state))
    log.info("restored, continuing at step %d", int(state["step"]))

@jax.jit
def step_fn(state, x, y):
    def loss_fn(p):
        logits = model.apply(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, g = jax.value_and_grad(loss_fn)(state["params"])
    upd, opt = tx.update(g, state["opt_state"], state["params"])
    return {"params": optax.apply_updates(state["params"], upd), "opt_state": opt, "step": state["step"] + 1}, loss

rs = np.random.RandomState(rank)
start = int(state["step"])
for i in range(start, start + args.steps):
    x = rs.randn(32, 32).astype(np.float32); y = (x[:, :10].argmax(1)).astype(np.int32)
    state, loss = step_fn(state, x, y)
    if i % 5 == 0:
        log.info("step %d loss %.4f", i, float(loss))
    if (i + 1) % 10 == 0:
        mngr.save(i + 1, args=ocp.args.StandardSave(state))
mngr.wait_until_finished()
log.info("done, checkpoints: %s", mngr.all_steps())
