"""JAX / Flax (nnx) / Optax MLP training loop with tqdm progress.

  --fault none|shape|tracer|bigbatch|x64
"""
import argparse
import logging
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=300)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--features", type=int, default=16)
p.add_argument("--eval-every", type=int, default=100)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger("jaxtrain")

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from tqdm import tqdm

log.info("jax %s devices=%s", jax.__version__, jax.devices())


class MLP(nnx.Module):
    def __init__(self, din, dh, dout, rngs):
        self.l1 = nnx.Linear(din, dh, rngs=rngs)
        self.l2 = nnx.Linear(dh, dh, rngs=rngs)
        self.out = nnx.Linear(dh, dout, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.l2(nnx.relu(self.l1(x)))))


rng = np.random.default_rng(0)
din = args.features
data_features = din + 4 if args.fault == "shape" else din  # new feature pipeline adds 4 columns
N = 20000
X = rng.normal(size=(N, data_features)).astype(np.float32)
Wt = rng.normal(size=(data_features, 4))
y = (X @ Wt).argmax(1)

model = MLP(din, 256, 4, rngs=nnx.Rngs(0))
opt = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

if args.fault == "x64":
    # keep a float64 running loss for precise averaging (x64 is not enabled)
    running = jnp.zeros((), dtype=jnp.float64)
else:
    running = jnp.zeros(())


@nnx.jit
def train_step(model, opt, xb, yb):
    def loss_fn(m):
        logits = m(xb)
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    if args.fault == "tracer":
        # skip updates on outlier batches
        if loss > 5.0:
            return loss
    opt.update(model, grads)
    return loss


@nnx.jit
def eval_step(model, xb, yb):
    return (model(xb).argmax(-1) == yb).mean()


if args.fault == "bigbatch":
    # "evaluate on the whole (augmented) set at once"
    log.info("materialising augmented eval set on device")
    big = jnp.ones((8, 20000, 20000), dtype=jnp.float32)
    log.info("eval set %s", big.shape)

pbar = tqdm(range(args.steps), desc="train", mininterval=0.5, ncols=100)
for step in pbar:
    idx = rng.integers(0, N, size=args.batch)
    loss = train_step(model, opt, jnp.asarray(X[idx]), jnp.asarray(y[idx]))
    running = 0.9 * running + 0.1 * loss
    if step % 20 == 0:
        pbar.set_postfix(loss=f"{float(running):.4f}")
    if (step + 1) % args.eval_every == 0:
        acc = eval_step(model, jnp.asarray(X[:2000]), jnp.asarray(y[:2000]))
        log.info("step %d eval_acc=%.4f loss=%.4f", step + 1, float(acc), float(running))
log.info("training finished")
