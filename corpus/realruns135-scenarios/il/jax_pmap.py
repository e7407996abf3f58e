"""Data-parallel Flax/Optax training with jax.pmap over host devices (XLA_FLAGS device count), tqdm bar."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--rows", type=int, default=4000)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--drop-last", action="store_true")
a = p.parse_args()
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={a.devices}"
import numpy as np, jax, jax.numpy as jnp, flax.linen as nn, optax
from flax.training import train_state
from tqdm import tqdm

class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(10)(nn.relu(nn.Dense(128)(x)))

n_dev = jax.local_device_count()
print(f"jax {jax.__version__} devices: {jax.devices()}", flush=True)
rng = np.random.default_rng(0)
X = rng.normal(size=(a.rows, 32)).astype(np.float32); Y = rng.integers(0, 10, a.rows)
net = Net()
state = train_state.TrainState.create(apply_fn=net.apply, params=net.init(jax.random.PRNGKey(0), X[:1]), tx=optax.adamw(1e-3))
state = jax.tree_util.tree_map(lambda v: jnp.stack([v] * n_dev), state)  # replicate

def step(state, x, y):
    def lf(p):
        logits = state.apply_fn(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, g = jax.value_and_grad(lf)(state.params)
    g = jax.lax.pmean(g, "d"); loss = jax.lax.pmean(loss, "d")
    return state.apply_gradients(grads=g), loss
pstep = jax.pmap(step, axis_name="d")

def batches():
    idx = rng.permutation(a.rows)
    stop = a.rows - a.rows % a.batch if a.drop_last else a.rows
    for i in range(0, stop, a.batch):
        j = idx[i:i + a.batch]
        yield X[j].reshape(n_dev, -1, 32), Y[j].reshape(n_dev, -1)

for ep in range(a.epochs):
    bar = tqdm(batches(), total=-(-a.rows // a.batch), desc=f"epoch {ep}", file=sys.stdout, mininterval=0.5)
    for xb, yb in bar:
        state, loss = pstep(state, xb, yb)
        bar.set_postfix(loss=f"{float(loss[0]):.4f}")
print("done", flush=True)
