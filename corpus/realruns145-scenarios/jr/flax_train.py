"""Flax (linen) + Optax MLP regression/classification; flags select the fault."""
import argparse, sys, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "shape", "dtype", "shard", "oom", "nan"])
p.add_argument("--steps", type=int, default=40)
p.add_argument("--fail-step", type=int, default=15)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-3)
a = p.parse_args()

import numpy as np
import jax, jax.numpy as jnp
import flax.linen as nn
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

print(f"jax {jax.__version__} devices={jax.devices()}", flush=True)

class MLP(nn.Module):
    hidden: int = 64
    out: int = 4
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.out)(x)

FEAT = 16
rng = np.random.default_rng(0)
model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, FEAT)))
tx = optax.chain(optax.clip_by_global_norm(1.0e9), optax.sgd(a.lr, momentum=0.9))
opt_state = tx.init(params)

def batch(step):
    feat = FEAT
    if a.fault == "shape" and step >= a.fail_step:
        feat = FEAT + 4  # features from the new preprocessing version (added 4 columns)
    x = rng.normal(size=(a.batch, feat)).astype(np.float32)
    if a.fault == "nan":
        x = x * 50.0
    y = rng.integers(0, 4, size=(a.batch,))
    return jnp.asarray(x), jnp.asarray(y)

@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(p):
        logits = model.apply(p, x)
        if a.fault == "nan":
            return jnp.mean((logits.sum(-1) - y) ** 2)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, grads = jax.value_and_grad(loss_fn)(params)
    upd, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, upd), opt_state, loss

if a.fault == "dtype":
    # accumulate several micro-batches inside one jitted scan
    @jax.jit
    def accum_steps(params, xs, ys):
        def body(carry, xy):
            loss_sum, n = carry
            x, y = xy
            logits = model.apply(params, x)
            l = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return (loss_sum + l, n + 1), l
        (tot, n), _ = jax.lax.scan(body, (jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32)), (xs, ys))
        return tot / n

if a.fault == "shard":
    devs = np.array(jax.devices())
    mesh = Mesh(devs, ("data",))
    data_sharding = NamedSharding(mesh, P("data"))
    print(f"mesh {mesh.shape} data sharding {data_sharding}", flush=True)

t0 = time.time()
for step in range(a.steps):
    x, y = batch(step)
    if a.fault == "shard":
        x = jax.device_put(x, data_sharding); y = jax.device_put(y, data_sharding)
    if a.fault == "oom" and step == a.fail_step:
        print("step %d: materialising pairwise feature cache" % step, flush=True)
        cache = jnp.zeros((a.batch * 4096, 4096 * 64), dtype=jnp.float32)
        cache.block_until_ready()
    params, opt_state, loss = train_step(params, opt_state, x, y)
    if a.fault == "dtype" and step == a.fail_step:
        xs = jnp.stack([batch(step)[0] for _ in range(4)]); ys = jnp.stack([batch(step)[1] for _ in range(4)])
        print("step %d accumulated eval loss %.4f" % (step, float(accum_steps(params, xs, ys))), flush=True)
    if step % 5 == 0:
        print(f"step {step:4d} | loss {float(loss):.4f} | {time.time()-t0:.1f}s", flush=True)
print("training done", flush=True)
