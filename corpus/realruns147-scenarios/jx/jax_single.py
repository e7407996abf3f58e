"""Single-process JAX/Flax/Optax regression trainer with msgpack checkpoints.
--fault {none,lr,resume-opt,resume-arch,truncate,bigbatch}"""
import argparse, os, sys, time, logging, warnings
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--ckpt-dir", default="ckpt_jax")
p.add_argument("--resume", action="store_true")
p.add_argument("--opt", default="adam")
p.add_argument("--batch", type=int, default=128)
p.add_argument("--eval-batch", type=int, default=256)
p.add_argument("--x64-init", action="store_true")
p.add_argument("--act", default="tanh")
p.add_argument("--save-every", type=int, default=20)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("trainer")
import jax, jax.numpy as jnp, numpy as np, optax
import flax.linen as nn
from flax import serialization

ACT = a.act
class Net(nn.Module):
    hidden: int
    layers: int
    @nn.compact
    def __call__(self, x):
        for _ in range(self.layers):
            x = getattr(nn, ACT)(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(x)[..., 0]

def make_tx(name, lr):
    if name == "adam":
        return optax.adam(lr)
    if name == "adamw-clip":
        return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(lr, weight_decay=1e-4))
    if name == "sgd":
        return optax.sgd(lr, momentum=0.9)
    raise SystemExit(f"unknown optimizer {name}")

rng = np.random.default_rng(0)
true_w = rng.normal(size=(16,)).astype(np.float32)
model = Net(a.hidden, a.layers)
if a.x64_init:
    dummy = jnp.zeros((1, 16), dtype=jnp.float64)
else:
    dummy = jnp.zeros((1, 16))
params = model.init(jax.random.PRNGKey(0), dummy)
tx = make_tx(a.opt, a.lr)
opt_state = tx.init(params)
start = 0
os.makedirs(a.ckpt_dir, exist_ok=True)
ck = os.path.join(a.ckpt_dir, "state.msgpack")
if a.resume:
    log.info("resuming from %s", ck)
    with open(ck, "rb") as f:
        blob = f.read()
    target = {"params": params, "opt_state": opt_state, "step": 0}
    restored = serialization.from_bytes(target, blob)
    params, opt_state, start = restored["params"], restored["opt_state"], int(restored["step"])
    log.info("restored step %d", start)

@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(p):
        return jnp.mean((model.apply(p, x) - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

for step in range(start + 1, start + a.steps + 1):
    x = rng.normal(size=(a.batch, 16)).astype(np.float32) * 3
    y = (x @ true_w) ** 2
    params, opt_state, loss = train_step(params, opt_state, x, y)
    loss = float(loss)
    if step % 5 == 0:
        log.info("step %d loss %.5g", step, loss)
    if not np.isfinite(loss):
        log.error("non-finite loss %s at step %d; stopping", loss, step)
        sys.exit(1)
    if step % a.save_every == 0:
        with open(ck, "wb") as f:
            f.write(serialization.to_bytes({"params": params, "opt_state": opt_state, "step": step}))
        log.info("saved %s (%d bytes)", ck, os.path.getsize(ck))
xe = jax.random.normal(jax.random.PRNGKey(1), (a.eval_batch, 16))
pred = jax.jit(model.apply)(params, xe)
log.info("eval mse %.5g", float(jnp.mean((pred - (xe @ true_w) ** 2) ** 2)))
log.info("done")
