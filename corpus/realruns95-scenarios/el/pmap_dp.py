"""Data-parallel Flax linen CNN on fake 8x8 images with jax.pmap over host CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N). Prints per-step metrics.

--num-replicas R : replicas the config asks for (defaults to jax.local_device_count()).
--donate         : donate the replicated state (CPU may not use every donation -> warning)
"""
import argparse
import time
import functools
import warnings

p = argparse.ArgumentParser()
p.add_argument("--num-replicas", type=int, default=0)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--per-device-batch", type=int, default=16)
p.add_argument("--donate", action="store_true")
p.add_argument("--eval-every", type=int, default=10)
args = p.parse_args()

import numpy as np
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from flax import jax_utils
from flax.training import train_state

print(f"local devices: {jax.local_devices()}", flush=True)
R = args.num_replicas or jax.local_device_count()
print(f"training with {R} replicas, global batch {R * args.per_device_batch}", flush=True)


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(16, (3, 3))(x)
        x = nn.relu(x)
        x = nn.avg_pool(x, (2, 2), (2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.Dense(64)(x)
        x = nn.relu(x)
        return nn.Dense(10)(x)


rng = np.random.default_rng(0)
protos = rng.normal(size=(10, 8, 8, 1)).astype(np.float32)


def batch(n):
    y = rng.integers(0, 10, size=n)
    x = protos[y] + 0.8 * rng.normal(size=(n, 8, 8, 1)).astype(np.float32)
    return x, y.astype(np.int32)


model = CNN()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 1)))["params"]
tx = optax.sgd(0.05, momentum=0.9)
state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)
# replicate by hand: leading axis = replica
state = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (R,) + jnp.shape(a)), state)


def step_fn(state, x, y):
    def lf(p):
        logits = state.apply_fn({"params": p}, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits
    (loss, logits), g = jax.value_and_grad(lf, has_aux=True)(state.params)
    g = jax.lax.pmean(g, "batch")
    loss = jax.lax.pmean(loss, "batch")
    acc = jax.lax.pmean(jnp.mean(jnp.argmax(logits, -1) == y), "batch")
    return state.apply_gradients(grads=g), loss, acc


p_step = jax.pmap(step_fn, axis_name="batch", donate_argnums=(0, 1, 2) if args.donate else ())

t0 = time.time()
for step in range(1, args.steps + 1):
    x, y = batch(R * args.per_device_batch)
    x = x.reshape((R, args.per_device_batch) + x.shape[1:])
    y = y.reshape((R, args.per_device_batch))
    state, loss, acc = p_step(state, x, y)
    if step % 5 == 0 or step == 1:
        print(f"[step {step:03d}] loss={float(loss[0]):.4f} acc={float(acc[0]):.3f} "
              f"elapsed={time.time()-t0:.1f}s", flush=True)

final = jax.tree_util.tree_map(lambda a: a[0], state)
print(f"done. final params checksum {float(sum(jnp.sum(v) for v in jax.tree_util.tree_leaves(final.params))):.4f}", flush=True)
